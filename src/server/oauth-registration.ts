import { z } from "zod";
import { type Ids, isLoopbackHost } from "../core/index.js";
import { OAuthFailure, sha256Hex } from "./oauth-common.js";
import type { ClientRecord } from "./oauth-state.js";

const FORBIDDEN_SCHEMES = new Set(["javascript:", "data:", "vbscript:", "file:", "blob:"]);

/**
 * A redirect URI a code may be sent to: https anywhere, plain http only to
 * a loopback listener (a native client), or a private-use scheme; never a
 * script or data URL, never a fragment.
 */
function isAcceptableRedirectUri(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const url = new URL(value);
  if (FORBIDDEN_SCHEMES.has(url.protocol) || url.hash !== "" || url.username !== "" || url.password !== "") {
    return false;
  }
  if (url.protocol === "http:") return isLoopbackHost(url.hostname);
  return true;
}

const bounded = z.string().max(500);

/** RFC 7591 registration request: what this server reads of it, every field bounded. */
const RegistrationSchema = z.object({
  redirect_uris: z
    .array(z.string().max(2000).refine(isAcceptableRedirectUri, "unacceptable redirect URI"))
    .min(1)
    .max(10),
  token_endpoint_auth_method: z.enum(["none", "client_secret_post", "client_secret_basic"]).optional(),
  grant_types: z
    .array(z.string().max(100))
    .max(10)
    .refine((g) => g.every((x) => x === "authorization_code" || x === "refresh_token"), {
      message: "only authorization_code and refresh_token are supported",
    })
    .optional(),
  response_types: z
    .array(z.string().max(100))
    .max(10)
    .refine((r) => r.every((x) => x === "code"), { message: "only the code response type is supported" })
    .optional(),
  client_name: bounded.optional(),
  client_uri: bounded.optional(),
  scope: bounded.optional(),
  software_id: bounded.optional(),
  software_version: bounded.optional(),
});

export interface Registration {
  record: ClientRecord;
  /** The client secret, shown once in the registration answer and never stored. */
  secret: string | undefined;
}

/** Parse a registration body into a new client record with fresh credentials. */
export function parseRegistration(body: unknown, ids: Ids, nowSeconds: number): Registration {
  const parsed = RegistrationSchema.safeParse(body);
  if (!parsed.success) {
    const problem = parsed.error.issues[0];
    const where = problem?.path.join(".") ?? "";
    const detail = `${where ? `${where}: ` : ""}${problem?.message ?? "invalid metadata"}`.slice(0, 300);
    const badRedirect = where.startsWith("redirect_uris");
    throw new OAuthFailure(badRedirect ? "invalid_redirect_uri" : "invalid_client_metadata", detail);
  }
  const meta = parsed.data;
  const method = meta.token_endpoint_auth_method ?? "client_secret_post";
  const secret = method === "none" ? undefined : ids.token(32);
  const grants = meta.grant_types ?? ["authorization_code", "refresh_token"];
  const record: ClientRecord = {
    // 256 random bits: for a public client the id is all that stands in for a credential.
    client_id: ids.token(32),
    client_id_issued_at: nowSeconds,
    ...(secret !== undefined ? { client_secret_sha256: sha256Hex(secret), client_secret_expires_at: 0 } : {}),
    redirect_uris: meta.redirect_uris,
    token_endpoint_auth_method: method,
    grant_types: [...new Set(grants)] as ClientRecord["grant_types"],
    response_types: ["code"],
    ...(meta.client_name !== undefined ? { client_name: meta.client_name } : {}),
    ...(meta.client_uri !== undefined ? { client_uri: meta.client_uri } : {}),
    ...(meta.scope !== undefined ? { scope: meta.scope } : {}),
    ...(meta.software_id !== undefined ? { software_id: meta.software_id } : {}),
    ...(meta.software_version !== undefined ? { software_version: meta.software_version } : {}),
  };
  return { record, secret };
}

/** The RFC 7591 answer: the stored metadata plus, once, the secret. */
export function registrationResponse(registration: Registration): Record<string, unknown> {
  const { client_secret_sha256: _hash, ...visible } = registration.record;
  return {
    ...visible,
    ...(registration.secret !== undefined ? { client_secret: registration.secret } : {}),
  };
}
