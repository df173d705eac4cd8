import { createHash } from "node:crypto";
import { CONSENT_NAMESPACE } from "../consent/index.js";
import { fail, ok, type Result } from "../core/index.js";
import type { ProcessRunner } from "../exec/index.js";

/** A FIDO key waits for a touch; a human needs time to find it. */
const SIGN_TIMEOUT_MS = 120_000;
const SIGN_OUTPUT_BYTES = 64 * 1024;
const ARMOR = /-----BEGIN SSH SIGNATURE-----\n[A-Za-z0-9+/=\n]+-----END SSH SIGNATURE-----\n?/;

/** The armored signature and the fingerprint of the key that made it, or why there is none. */
type Signed = Result<{ signature: string; fingerprint: string }, string>;

/**
 * The SHA256 fingerprint of the key inside an armored SSHSIG, in the form
 * `ssh-keygen -l` prints. Read from the signature rather than the key file,
 * so it names the key that really signed (an agent may hold it). The relay
 * verifies the signature itself; this is only the claim stored beside it.
 */
function signatureFingerprint(armored: string): string | null {
  const body = armored.replace(/-----(BEGIN|END) SSH SIGNATURE-----/g, "").replace(/\s+/g, "");
  const blob = Buffer.from(body, "base64");
  // "SSHSIG", uint32 version, then the public key as an SSH string (uint32 length, bytes).
  if (blob.length < 14 || blob.subarray(0, 6).toString("latin1") !== "SSHSIG") return null;
  const length = blob.readUInt32BE(10);
  if (length === 0 || 14 + length > blob.length) return null;
  const key = blob.subarray(14, 14 + length);
  return `SHA256:${createHash("sha256").update(key).digest("base64").replace(/=+$/, "")}`;
}

/**
 * Sign `payload` with `ssh-keygen -Y sign -n relay-shell-consent -f <key>`:
 * the payload on stdin, the armored signature on stdout. `key` is a private
 * key, or the public key of one held by ssh-agent or on a FIDO token.
 */
export async function signPayload(
  runner: ProcessRunner,
  env: Readonly<Record<string, string>>,
  key: string,
  payload: string,
): Promise<Signed> {
  let output: string;
  let exitCode: number | null;
  let timedOut: boolean;
  try {
    ({ output, exitCode, timedOut } = await runner.run({
      argv: ["ssh-keygen", "-Y", "sign", "-n", CONSENT_NAMESPACE, "-f", key],
      env,
      stdin: payload,
      timeoutMs: SIGN_TIMEOUT_MS,
      maxBufferBytes: SIGN_OUTPUT_BYTES,
      mergeStderr: false,
    }));
  } catch (err) {
    return fail(`cannot run ssh-keygen: ${err instanceof Error ? err.message : String(err)}`);
  }
  const armored = ARMOR.exec(output)?.[0];
  // Without the armor, what ssh-keygen printed is its stderr: the reason.
  const said = output
    .replace(ARMOR, "")
    .replace(/^Signing data on standard input\n?/m, "")
    .trim();
  if (timedOut) return fail(`ssh-keygen did not finish within ${SIGN_TIMEOUT_MS / 1000}s`);
  if (exitCode !== 0 || armored === undefined) {
    return fail(`ssh-keygen failed (exit ${String(exitCode)})${said === "" ? "" : `: ${said}`}`);
  }
  const fingerprint = signatureFingerprint(armored);
  if (fingerprint === null) return fail("ssh-keygen printed a signature that cannot be read");
  return ok({ signature: armored.endsWith("\n") ? armored : `${armored}\n`, fingerprint });
}
