import { existsSync, readFileSync } from "node:fs";
import { snapshotEnvironment } from "../config/index.js";
import {
  actDigest,
  CONSENT_NAMESPACE,
  type ConsentRequest,
  type ConsentStore,
  requestPayload,
  verifyConsentSignature,
} from "../consent/index.js";
import { fail, type Result, systemClock } from "../core/index.js";
import { buildEnv, createProcessRunner } from "../exec/index.js";
import { parseAllowedSigners, parsePublicKey, signerAllowsNamespace } from "../sshsig/index.js";
import { signPayload } from "./consent-sign.js";
import { showRequest, visible } from "./consent-text.js";

/** A refusal by the store, the checks or the operator: message on stderr, exit 1. */
export class Refused extends Error {}

/** The shortest digest prefix `--digest` accepts: 48 bits, more than a swapped act can hit. */
export const MIN_DIGEST_PREFIX = 12;

export interface ApproveOptions {
  key: string;
  /** --yes: approve without asking; then `digest` is required. */
  yes: boolean;
  /** --digest: a prefix of the act's digest, as `consent show` printed it. */
  digest: string | null;
  allowedSigners: string;
  confirm(question: string): Promise<boolean>;
}

const EDITED = "its stored payload is not the act shown (the consent database was edited)";

/** The bytes a signature covers, rebuilt from the act itself (never read from the store). */
function payloadOf(store: ConsentStore, request: ConsentRequest): string {
  return requestPayload(request, store.instanceId);
}

/** Whether the stored payload is exactly the bytes of the act shown (`consent show` warns when not). */
export function payloadMatches(store: ConsentStore, request: ConsentRequest): boolean {
  return payloadOf(store, request) === request.payload;
}

export function editedWarning(): string {
  return `WARNING: ${EDITED}`;
}

/**
 * Check an armored signature over `payload` against the operator's allowed-signers file, as the
 * relay will: the principal it names, or why it would be refused.
 */
function checkSigner(
  allowedSigners: string,
  signature: string,
  payload: string,
): Result<{ principal: string }, string> {
  let signers: ReturnType<typeof parseAllowedSigners>["signers"];
  try {
    signers = parseAllowedSigners(readFileSync(allowedSigners, "utf8")).signers;
  } catch (err) {
    return fail(`the allowed-signers file ${allowedSigners} cannot be read (${String(err)})`);
  }
  return verifyConsentSignature(signers, signature, payload, systemClock.now());
}

/**
 * The public key of `--key`, where one is at hand: the file itself when it is a public key (a key
 * held by ssh-agent or a security key), else `PATH.pub` beside a private key; null when neither.
 */
function publicKeyOf(key: string): ReturnType<typeof parsePublicKey> | null {
  for (const candidate of [key, `${key}.pub`]) {
    try {
      if (!existsSync(candidate)) continue;
      const text = readFileSync(candidate, "utf8");
      if (text.includes("PRIVATE KEY")) continue;
      return parsePublicKey(text.trim().split("\n")[0] ?? "");
    } catch {
      // not a public key: the signature itself is checked after signing
    }
  }
  return null;
}

/** Before any signing (and any touch of a security key): a key the file does not list for consent is refused. */
function refuseUnlisted(key: string, allowedSigners: string): void {
  const publicKey = publicKeyOf(key);
  if (publicKey === null) return;
  let listed: boolean;
  try {
    listed = parseAllowedSigners(readFileSync(allowedSigners, "utf8")).signers.some(
      (s) => s.key.blob.equals(publicKey.blob) && signerAllowsNamespace(s, CONSENT_NAMESPACE),
    );
  } catch (err) {
    throw new Refused(`the allowed-signers file ${visible(allowedSigners)} cannot be read (${String(err)})`);
  }
  if (!listed) {
    throw new Refused(
      `the key ${visible(key)} (${publicKey.fingerprint}) is not in the allowed-signers file ${visible(allowedSigners)} for consent; the relay would refuse its signature, so nothing is signed`,
    );
  }
}

/**
 * `consent approve`: show the act, make sure it is the act the operator means (asked on the
 * terminal, or its digest given with --yes), sign the payload rebuilt from that act, check the
 * signature against the allowed-signers file as the relay will, and only then store it.
 */
export async function approveRequest(
  store: ConsentStore,
  request: ConsentRequest,
  options: ApproveOptions,
): Promise<string> {
  const now = systemClock.now();
  if (request.status === "approved") {
    const stored = request.approval;
    if (
      stored?.channel === "sshsig" &&
      checkSigner(options.allowedSigners, stored.proof, payloadOf(store, request)).ok
    )
      throw new Refused(`request ${request.id} is already approved`);
    if (stored?.channel === "passkey")
      throw new Refused(`request ${request.id} is already approved (passkey)`);
  } else if (request.status !== "pending") {
    throw new Refused(`request ${request.id} is ${request.status}, not pending`);
  }
  if (request.expiresAt <= now) throw new Refused(`request ${request.id} expired`);
  const payload = payloadOf(store, request);
  if (payload !== request.payload) throw new Refused(`request ${request.id}: ${EDITED}; nothing is signed`);
  const digest = actDigest(request.act);
  if (options.digest !== null && !digest.startsWith(options.digest.toLowerCase())) {
    throw new Refused(
      `request ${request.id} now holds another act (digest ${digest.slice(0, 16)}…, not ${visible(options.digest)}…); nothing is signed. Run \`consent show ${request.id}\` again`,
    );
  }
  refuseUnlisted(options.key, options.allowedSigners);
  process.stdout.write(`${showRequest(request, now)}\n`);
  if (!options.yes && !(await options.confirm("Approve this act? [y/N] ")))
    throw new Refused(`request ${request.id} was not approved`);
  process.stderr.write(
    `relay_shell consent: signing with ${visible(options.key)} (touch your security key if it blinks)\n`,
  );
  const runner = createProcessRunner();
  const signed = await signPayload(runner, buildEnv(snapshotEnvironment(), ""), options.key, payload);
  if (!signed.ok) throw new Refused(`not approved: ${visible(signed.error)}`);
  const signer = checkSigner(options.allowedSigners, signed.value.signature, payload);
  if (!signer.ok) {
    throw new Refused(
      `not approved: the key ${visible(options.key)} (${signed.value.fingerprint}) would be refused by the relay: ${visible(signer.error)}; nothing was stored`,
    );
  }
  const approved = await store.approve(request.id, {
    channel: "sshsig",
    proof: signed.value.signature,
    claimedSigner: signed.value.fingerprint,
    at: systemClock.now(),
  });
  if (!approved.ok) throw new Refused(`${approved.error.failure}: ${visible(approved.error.detail)}`);
  return `approved ${approved.value.id} (signed by ${signer.value.principal}, ${signed.value.fingerprint})`;
}
