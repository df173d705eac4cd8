import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CONSENT_NAMESPACE, consentPayload } from "../../src/consent/index.js";
import type { ConsentCapability, InfraRequest } from "../../src/infra-protocol/index.js";

/**
 * Human-signed approvals of INFRA acts as the relay's consent gate would
 * attach them, made with the real `ssh-keygen -Y sign`: the canonical payload
 * of src/consent's consentPayload, signed in the namespace relay-shell-consent.
 */

const SSH_KEYGEN = "/usr/bin/ssh-keygen";

const TOOLS: Record<string, string> = {
  probe: "infra_probe",
  "rsync-dry-run": "infra_rsync_dry_run",
  replicate: "infra_replicate",
  verify: "infra_verify",
};
const TIERS: Record<string, 0 | 1 | 2> = { probe: 0, "rsync-dry-run": 1, replicate: 2, verify: 0 };

export interface SignerKey {
  /** The private key file (no passphrase). */
  path: string;
  /** `<type> <base64>` of the public key. */
  publicKey: string;
  /** SHA256 fingerprint as ssh-keygen prints it. */
  fingerprint: string;
}

/** A fresh signing key of `type` under `dir`. */
export function makeSignerKey(
  dir: string,
  name: string,
  type: "ed25519" | "ecdsa" | "rsa" = "ed25519",
): SignerKey {
  const path = join(dir, name);
  execFileSync(SSH_KEYGEN, ["-q", "-t", type, "-N", "", "-C", name, "-f", path], { stdio: "ignore" });
  const publicKey = readFileSync(`${path}.pub`, "utf8").trim().split(" ").slice(0, 2).join(" ");
  const fingerprint =
    execFileSync(SSH_KEYGEN, ["-lf", `${path}.pub`], { encoding: "utf8" }).split(" ")[1] ?? "";
  return { path, publicKey, fingerprint };
}

/** One allowed_signers line giving `principal` the key, for consent signatures only. */
export function allowedSignersLine(principal: string, key: SignerKey): string {
  return `${principal} namespaces="${CONSENT_NAMESPACE}" ${key.publicKey}\n`;
}

/** An armored SSHSIG by `key` over `message` in `namespace`. */
export function sshSign(key: SignerKey, message: string, namespace: string = CONSENT_NAMESPACE): string {
  const dir = mkdtempSync(join(tmpdir(), "consent-sign-"));
  try {
    const file = join(dir, "payload");
    writeFileSync(file, message);
    execFileSync(SSH_KEYGEN, ["-q", "-Y", "sign", "-n", namespace, "-f", key.path, file], {
      stdio: "ignore",
    });
    return readFileSync(`${file}.sig`, "utf8");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface ApprovalOptions {
  /** Epoch milliseconds; default five minutes from now. */
  expiresAt?: number;
  request?: string;
  nonce?: string;
  instance?: string;
  /** The principal the relay would name; default "operator@example.org". */
  signer?: string;
  namespace?: string;
}

/** The approval of exactly `request` (operation, profile, run id, key), signed by `key`. */
export function signInfraApproval(
  key: SignerKey,
  request: InfraRequest,
  options: ApprovalOptions = {},
): ConsentCapability {
  const requestId = options.request ?? `c-${randomBytes(4).toString("hex")}`;
  const nonce = options.nonce ?? randomBytes(16).toString("hex");
  const payload = consentPayload(
    {
      tool: TOOLS[request.op] ?? `infra_${request.op}`,
      tier: TIERS[request.op] ?? 0,
      bound: {
        operation: request.op,
        profile: request.profile ?? null,
        run_id: request.run_id ?? null,
        idempotency_key: request.idempotency_key ?? null,
      },
    },
    {
      request: requestId,
      nonce,
      expiresAt: options.expiresAt ?? Date.now() + 300_000,
      instance: options.instance ?? "relay-test-instance",
    },
  );
  return {
    request: requestId,
    nonce,
    payload,
    signature: sshSign(key, payload, options.namespace),
    signer: options.signer ?? "operator@example.org",
  };
}
