import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  allowedSignersLine,
  makeSignerKey,
  type SignerKey,
  signInfraApproval,
  sshSign,
} from "../../test/helpers/approvals.js";
import { type Clock, canonicalJson } from "../core/index.js";
import type { ConsentCapability, InfraRequest } from "../infra-protocol/index.js";
import { type ApprovalGate, createApprovalGate, type SignatureCheck } from "./approvals.js";
import { type NonceStore, openNonceStore } from "./nonces.js";
import { loadAllowedSigners } from "./signers.js";
import type { Profile } from "./types.js";

const HAS_KEYGEN = existsSync("/usr/bin/ssh-keygen");

function profile(id: string, approval: Profile["approval"] = "consent"): Profile {
  return {
    id,
    file: `/etc/relay-shell/infra/${id}.json`,
    enabled: true,
    host: "backup.example",
    port: 22,
    user: "receiver",
    sourceRoots: ["/srv/data"],
    remoteRoot: ".",
    knownHostsFile: "/etc/relay-shell/infra/known_hosts",
    credentialId: "backup-key",
    limits: { timeoutSeconds: 60, outputBytes: 65536, transferBytes: 1 << 20, fileCount: 100 },
    allowedPrincipals: { uids: [1000], gids: [] },
    approval,
    receiver: "rrsync",
    requireDryRun: true,
  };
}

const SITE = profile("site");
const REPLICATE: InfraRequest = {
  op: "replicate",
  profile: "site",
  run_id: "2026-12-01a",
  idempotency_key: "site-2026-12-01a",
};
const DRY_RUN: InfraRequest = { op: "rsync-dry-run", profile: "site", run_id: "2026-12-01a" };

describe.skipIf(!HAS_KEYGEN)("the broker's approval check, with real ssh-keygen signatures", () => {
  let dir: string;
  let operator: SignerKey;
  let stranger: SignerKey;
  let verify: SignatureCheck;
  let now = Date.now();
  const clock: Clock = { now: () => now, monotonic: () => now };
  let stateDir: string;
  let nonces: NonceStore;
  let gate: ApprovalGate;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "infra-approvals-"));
    const keys = join(dir, "keys");
    mkdirSync(keys, { mode: 0o700 });
    operator = makeSignerKey(keys, "operator");
    stranger = makeSignerKey(keys, "stranger");
    const trusted = join(dir, "trusted");
    mkdirSync(trusted, { mode: 0o755 });
    const file = join(trusted, "allowed_signers");
    writeFileSync(file, allowedSignersLine("operator@example.org", operator));
    chmodSync(file, 0o644);
    const loaded = loadAllowedSigners(file, { daemonUid: 54321, owners: [process.geteuid?.() ?? 0] });
    if (!loaded.ok) throw new Error(loaded.error.join("; "));
    verify = loaded.value.verify;
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  beforeEach(() => {
    now = Date.now();
    stateDir = mkdtempSync(join(dir, "state-"));
    nonces = openNonceStore(stateDir, { clock, busyTimeoutMs: 50 });
    gate = createApprovalGate({ verify, nonces, clock });
  });

  const sign = (request: InfraRequest, options: Parameters<typeof signInfraApproval>[2] = {}) =>
    signInfraApproval(operator, request, { expiresAt: now + 300_000, ...options });
  const check = (request: InfraRequest, approval: ConsentCapability | undefined, p: Profile = SITE) =>
    gate.check(p, approval === undefined ? request : { ...request, approval });
  const refusal = (request: InfraRequest, approval: ConsentCapability | undefined, p: Profile = SITE) => {
    const verdict = check(request, approval, p);
    if (verdict.ok) throw new Error("the approval was accepted");
    return verdict.error;
  };

  it("accepts a signed approval of exactly this request, once", () => {
    const approval = sign(REPLICATE);
    const verdict = check(REPLICATE, approval);
    if (!verdict.ok || verdict.value === null) throw new Error("refused");
    expect(verdict.value.record).toEqual({
      request: approval.request,
      claimed_signer: "operator@example.org",
      principal: "operator@example.org",
      fingerprint: operator.fingerprint,
    });
    expect(gate.consume("replicate", verdict.value)).toBeNull();
    // The same approval again verifies, and its nonce is refused.
    const again = check(REPLICATE, approval);
    if (!again.ok || again.value === null) throw new Error("refused");
    expect(gate.consume("replicate", again.value)).toMatchObject({
      code: "APPROVAL_REUSED",
      approval: { request: approval.request },
    });
  });

  it("keeps consumed nonces across a restart of the store", () => {
    const approval = sign(REPLICATE);
    const first = check(REPLICATE, approval);
    if (!first.ok || first.value === null) throw new Error("refused");
    expect(gate.consume("replicate", first.value)).toBeNull();
    nonces.close();
    nonces = openNonceStore(stateDir, { clock });
    gate = createApprovalGate({ verify, nonces, clock });
    const second = check(REPLICATE, approval);
    if (!second.ok || second.value === null) throw new Error("refused");
    expect(gate.consume("replicate", second.value)?.code).toBe("APPROVAL_REUSED");
  });

  it("needs an approval for a dry run and a replicate of a consent profile only", () => {
    expect(refusal(DRY_RUN, undefined).code).toBe("APPROVAL_REQUIRED");
    expect(refusal(REPLICATE, undefined).code).toBe("APPROVAL_REQUIRED");
    for (const read of [
      { op: "probe", profile: "site" },
      { op: "verify", profile: "site", run_id: "r1" },
    ] as InfraRequest[]) {
      expect(check(read, undefined)).toEqual({ ok: true, value: null });
      // One attached anyway is neither checked nor consumed.
      expect(check(read, sign(DRY_RUN))).toEqual({ ok: true, value: null });
    }
    expect(check(REPLICATE, undefined, profile("site", "none"))).toEqual({ ok: true, value: null });
  });

  it("refuses an approval of another operation, profile, run or key as a mismatch", () => {
    const others: InfraRequest[] = [
      DRY_RUN,
      { ...REPLICATE, profile: "other" },
      { ...REPLICATE, run_id: "2026-12-01b" },
      { ...REPLICATE, idempotency_key: "site-2026-12-01b" },
    ];
    for (const signed of others) {
      const result = refusal(REPLICATE, sign(signed));
      expect(result.code, JSON.stringify(signed)).toBe("APPROVAL_MISMATCH");
      expect(result.message).toContain("infra_replicate");
      expect(result.approval?.fingerprint).toBe(operator.fingerprint);
    }
  });

  it("refuses an approval signed for another tool with the same bound arguments", () => {
    const approval = sign(REPLICATE);
    const payload = JSON.parse(approval.payload) as Record<string, unknown>;
    const forged = { ...payload, tool: "infra_rsync_dry_run" };
    const text = canonicalJson(forged);
    const resigned = { ...approval, payload: text, signature: sshSign(operator, text) };
    expect(refusal(REPLICATE, resigned).code).toBe("APPROVAL_MISMATCH");
  });

  it.each<[string, (a: ConsentCapability) => ConsentCapability, RegExp]>([
    [
      "a tampered payload",
      (a) => ({ ...a, payload: a.payload.replace('"run_id":"2026-12-01a"', '"run_id":"2026-12-01x"') }),
      /signature does not verify/,
    ],
    ["a payload that is not canonical", (a) => ({ ...a, payload: ` ${a.payload}` }), /not canonical JSON/],
    ["a payload that is not JSON", (a) => ({ ...a, payload: "approve everything" }), /not JSON/],
    ["another request id than the payload's", (a) => ({ ...a, request: "c-other" }), /request id/],
    ["another nonce than the payload's", (a) => ({ ...a, nonce: "ff".repeat(16) }), /nonce/],
    [
      "a signature cut short",
      (a) => ({ ...a, signature: a.signature.split("\n").slice(0, 3).join("\n") }),
      /signature does not verify/,
    ],
  ])("refuses %s as invalid, naming why", (_what, change, why) => {
    const result = refusal(REPLICATE, change(sign(REPLICATE)));
    expect(result.code).toBe("APPROVAL_INVALID");
    expect(result.message).toMatch(why);
  });

  it("refuses a signature by a key that is not an allowed signer", () => {
    const result = refusal(REPLICATE, signInfraApproval(stranger, REPLICATE, { expiresAt: now + 60_000 }));
    expect(result.code).toBe("APPROVAL_INVALID");
    expect(result.message).toContain(stranger.fingerprint);
    expect(result.approval?.principal).toBeNull();
  });

  it("refuses a signature made in another namespace", () => {
    const result = refusal(REPLICATE, sign(REPLICATE, { namespace: "relay-shell" }));
    expect(result.code).toBe("APPROVAL_INVALID");
    expect(result.message).toMatch(/namespace/);
  });

  it("refuses an approval that expired by the broker's clock, and one of another payload version", () => {
    const expired = refusal(REPLICATE, sign(REPLICATE, { expiresAt: now - 1 }));
    expect(expired.code).toBe("APPROVAL_INVALID");
    expect(expired.message).toMatch(/expired at /);
    // Valid when signed, void once the broker's clock passes its expiry.
    const approval = sign(REPLICATE, { expiresAt: now + 1000 });
    now += 1000;
    expect(refusal(REPLICATE, approval).message).toMatch(/expired at /);
    now -= 1000;
    const v2 = canonicalJson({ ...JSON.parse(approval.payload), v: 2 });
    expect(
      refusal(REPLICATE, { ...approval, payload: v2, signature: sshSign(operator, v2) }).message,
    ).toMatch(/version 2/);
  });

  it("refuses every approval when the broker has no allowed signers", () => {
    const bare = createApprovalGate({ verify: null, nonces: null, clock });
    const verdict = bare.check(SITE, { ...REPLICATE, approval: sign(REPLICATE) });
    expect(verdict.ok ? "accepted" : verdict.error.code).toBe("APPROVAL_INVALID");
  });

  it("is blocked, consuming nothing, while another writer holds the store past its timeout", () => {
    const approval = sign(REPLICATE);
    const verdict = check(REPLICATE, approval);
    if (!verdict.ok || verdict.value === null) throw new Error("refused");
    const other = new Database(nonces.path, { timeout: 0 });
    other.exec("BEGIN IMMEDIATE");
    try {
      const blocked = gate.consume("replicate", verdict.value);
      expect(blocked?.code).toBe("APPROVAL_STORE_UNAVAILABLE");
      expect(blocked?.message).toMatch(/locked/);
    } finally {
      other.exec("ROLLBACK");
      other.close();
    }
    // Nothing was written under the lock: the approval still works once.
    expect(gate.consume("replicate", verdict.value)).toBeNull();
    expect(gate.consume("replicate", verdict.value)?.code).toBe("APPROVAL_REUSED");
  });

  it("refuses, without consuming it, an approval that expired while its request waited in the queue", () => {
    const approval = sign(REPLICATE, { expiresAt: now + 1000 });
    const verdict = check(REPLICATE, approval);
    if (!verdict.ok || verdict.value === null) throw new Error("refused");
    now += 1000;
    const late = gate.consume("replicate", verdict.value);
    expect(late?.code).toBe("APPROVAL_INVALID");
    expect(late?.message).toMatch(/expired at .* while the request waited/);
    now -= 1000;
    expect(gate.consume("replicate", verdict.value)).toBeNull();
  });

  it("drops a nonce only after its approval expired", () => {
    const approval = sign(REPLICATE, { expiresAt: now + 1000 });
    const verdict = check(REPLICATE, approval);
    if (!verdict.ok || verdict.value === null) throw new Error("refused");
    expect(gate.consume("replicate", verdict.value)).toBeNull();
    const count = () => {
      const db = new Database(nonces.path, { readonly: true });
      try {
        return (db.prepare("SELECT count(*) AS n FROM nonces").get() as { n: number }).n;
      } finally {
        db.close();
      }
    };
    now += 999;
    expect(gate.consume("replicate", { ...verdict.value, nonce: "other-nonce-1" })).toBeNull();
    expect(count()).toBe(2);
    now += 2;
    expect(
      gate.consume("replicate", { ...verdict.value, nonce: "other-nonce-2", expiresAt: now + 5000 }),
    ).toBeNull();
    expect(count()).toBe(1);
  });
});
