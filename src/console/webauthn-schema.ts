import type { AuthenticationResponseJSON, RegistrationResponseJSON } from "@simplewebauthn/server";
import { z } from "zod";

/*
 * The WebAuthn responses a browser posts to the console (the passkey login, an approval's assertion,
 * `console enrol`'s registration), decoded before anything reads them: every string is bounded and
 * base64url where WebAuthn makes it so, every object has the fields WebAuthn gives it and no others
 * reach @simplewebauthn (fields a newer browser adds are dropped, not passed on). Each problem is a
 * phrase that follows the field's name ("response.signature is missing"), see decodeBody in body.ts.
 */

/** WebAuthn bounds a credential id to 1023 bytes. */
const MAX_CREDENTIAL_ID_BYTES = 1023;
/** WebAuthn bounds a user handle to 64 bytes. */
const MAX_USER_HANDLE_BYTES = 64;
/** The client data names the type, the challenge, the origin and two flags: a few hundred bytes. */
const MAX_CLIENT_DATA_BYTES = 4096;
/** 37 bytes, then for a registration the credential id and its COSE key, then extensions. */
const MAX_AUTHENTICATOR_DATA_BYTES = 8192;
/** 72 bytes for ES256, 64 for EdDSA, 512 for RS256 with a 4096-bit key. */
const MAX_SIGNATURE_BYTES = 1024;
/** The authenticator data and a statement, empty with attestation "none"; a certificate chain fits. */
const MAX_ATTESTATION_BYTES = 32 * 1024;
/** A DER SubjectPublicKeyInfo: about 550 bytes for a 4096-bit RSA key. */
const MAX_PUBLIC_KEY_BYTES = 2048;
/** WebAuthn names seven transports; the passkeys file keeps each in at most 32 characters. */
const MAX_TRANSPORTS = 16;
const MAX_TRANSPORT_CHARS = 32;
/** Unpadded base64url, as the browser half of SimpleWebAuthn writes every binary field. */
const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** The messages of a field of type `what`: missing, of another type, or an object with a field too many. */
export function expected(what: string) {
  return {
    error: (issue: { code?: string; input?: unknown; keys?: PropertyKey[] }) => {
      if (issue.code === "unrecognized_keys")
        return `has an unknown field ${JSON.stringify(String(issue.keys?.[0] ?? ""))}`;
      return issue.input === undefined ? "is missing" : `must be ${what}`;
    },
  };
}

/** Binary data of at most `maxBytes`, written as base64url. */
function base64url(maxBytes: number, minChars = 1) {
  const maxChars = Math.ceil((maxBytes * 4) / 3);
  return z
    .string(expected("base64url text"))
    .min(minChars, { error: "is empty" })
    .max(maxChars, { error: `is over ${maxChars} characters (${maxBytes} bytes)` })
    .regex(BASE64URL, { error: "is not base64url text" });
}

const credentialId = base64url(MAX_CREDENTIAL_ID_BYTES);
const publicKeyType = z.literal("public-key", expected('"public-key"'));
const attachment = z.enum(["platform", "cross-platform"], expected('"platform" or "cross-platform"'));
const flag = z.boolean(expected("true or false"));

/** The extension outputs the console reads none of: the ones WebAuthn defines as JSON are kept. */
const extensionResults = z.object(
  {
    appid: flag.exactOptional(),
    credProps: z.object({ rk: flag.exactOptional() }, expected("an object")).exactOptional(),
    hmacCreateSecret: flag.exactOptional(),
  },
  expected("an object"),
);

const assertionFields = z.object(
  {
    clientDataJSON: base64url(MAX_CLIENT_DATA_BYTES),
    authenticatorData: base64url(MAX_AUTHENTICATOR_DATA_BYTES),
    signature: base64url(MAX_SIGNATURE_BYTES),
    // Empty when the authenticator keeps no user handle; null from a client that writes absent so.
    userHandle: base64url(MAX_USER_HANDLE_BYTES, 0).nullable().exactOptional(),
  },
  expected("an object"),
);

/**
 * The assertion an approval carries. The approval's proof is made of the id and the response
 * alone (consent verifies it), so the fields a login needs besides are checked when present.
 */
export const assertionSchema = z.object(
  {
    id: credentialId,
    rawId: credentialId.exactOptional(),
    type: publicKeyType.exactOptional(),
    response: assertionFields,
    authenticatorAttachment: attachment.exactOptional(),
    clientExtensionResults: extensionResults.exactOptional(),
  },
  expected("an object"),
);

/** The body of a passkey login: an AuthenticationResponseJSON whole. */
export const authenticationResponseSchema = z.object(
  {
    id: credentialId,
    rawId: credentialId,
    type: publicKeyType,
    response: z.object(
      {
        clientDataJSON: assertionFields.shape.clientDataJSON,
        authenticatorData: assertionFields.shape.authenticatorData,
        signature: assertionFields.shape.signature,
        userHandle: base64url(MAX_USER_HANDLE_BYTES, 0).exactOptional(),
      },
      expected("an object"),
    ),
    authenticatorAttachment: attachment.exactOptional(),
    clientExtensionResults: extensionResults,
  },
  expected("an object"),
) satisfies z.ZodType<AuthenticationResponseJSON>;

/** What `console enrol` hands verifyRegistrationResponse: a RegistrationResponseJSON whole. */
export const registrationResponseSchema = z.object(
  {
    id: credentialId,
    rawId: credentialId,
    type: publicKeyType,
    response: z.object(
      {
        clientDataJSON: base64url(MAX_CLIENT_DATA_BYTES),
        attestationObject: base64url(MAX_ATTESTATION_BYTES),
        authenticatorData: base64url(MAX_AUTHENTICATOR_DATA_BYTES).exactOptional(),
        transports: z
          .array(
            z
              .string(expected("text"))
              .min(1, { error: "is empty" })
              .max(MAX_TRANSPORT_CHARS, { error: `is over ${MAX_TRANSPORT_CHARS} characters` }),
            expected("a list of transports"),
          )
          .max(MAX_TRANSPORTS, { error: `has over ${MAX_TRANSPORTS} entries` })
          .exactOptional(),
        publicKeyAlgorithm: z
          .number(expected("a COSE algorithm number"))
          .int({ error: "must be a COSE algorithm number" })
          .min(-65536, { error: "is not a COSE algorithm number" })
          .max(65535, { error: "is not a COSE algorithm number" })
          .exactOptional(),
        publicKey: base64url(MAX_PUBLIC_KEY_BYTES).exactOptional(),
      },
      expected("an object"),
    ),
    authenticatorAttachment: attachment.exactOptional(),
    clientExtensionResults: extensionResults,
  },
  expected("an object"),
) satisfies z.ZodType<RegistrationResponseJSON>;
