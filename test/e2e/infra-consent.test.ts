import { chmodSync, chownSync, copyFileSync, existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InfraRequest, InfraResponse } from "../../src/infra-protocol/index.js";
import {
  announceInfraSkip,
  createInfraFixture,
  INFRA_SKIP_REASON,
  type InfraDaemon,
  type InfraFixture,
  infraExchange,
} from "../fixtures/infra.js";
import { makeSignerKey } from "../helpers/approvals.js";

/**
 * A profile whose approval policy is consent, served by the real daemon of
 * test/fixtures/infra.ts: approvals are built as the relay's consent gate
 * builds them (the canonical payload, signed with `ssh-keygen -Y sign -n
 * relay-shell-consent`), and the daemon verifies each against its own
 * root-owned allowed-signers file and consumes its nonce in its own store.
 */

announceInfraSkip("approvals verified by the broker daemon");

interface ReceiptRecord {
  tool: string;
  request_id: string;
  args: {
    code: string;
    approval_present: boolean;
    approval: {
      request: string;
      claimed_signer: string;
      principal: string | null;
      fingerprint: string | null;
    } | null;
  };
}

describe.skipIf(INFRA_SKIP_REASON !== null)("approvals verified by the broker daemon", () => {
  let fx: InfraFixture;
  let daemon: InfraDaemon | null = null;
  const RUN = "consent-r1";
  const dryRun: InfraRequest = { op: "rsync-dry-run", profile: "site", run_id: RUN };
  const replicate: InfraRequest = {
    op: "replicate",
    profile: "site",
    run_id: RUN,
    idempotency_key: "consent-r1-0001",
  };

  const ask = async (request: InfraRequest): Promise<InfraResponse> => {
    const [answer] = await infraExchange(fx.socketPath, [request as Record<string, unknown>]);
    return answer as InfraResponse;
  };
  const receipts = (): ReceiptRecord[] =>
    readFileSync(join(fx.stateDir, "receipts.jsonl"), "utf8")
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as ReceiptRecord);
  const receiptOf = (id: string) => receipts().find((r) => r.request_id === id);
  const written = () => existsSync(join(fx.receiverDir, "runs", RUN));

  beforeAll(async () => {
    fx = await createInfraFixture();
    fx.writeProfile("site", { approval: "consent" });
  }, 60_000);
  afterAll(async () => {
    await daemon?.stop();
    fx?.close();
  });

  it("refuses to start with an allowed-signers file others may write, or none at all", async () => {
    const writable = join(fx.root, "trusted", "writable_signers");
    copyFileSync(fx.allowedSigners, writable);
    chmodSync(writable, 0o666);
    const loose = await fx.startDaemon({ allowedSigners: writable, expectExit: true });
    expect(loose.child.exitCode).toBe(2);
    expect(loose.stderr()).toContain(
      `cannot use the allowed signers: ${writable} is writable by group or others`,
    );
    const ownedByDaemon = join(fx.root, "trusted", "daemon_signers");
    copyFileSync(fx.allowedSigners, ownedByDaemon);
    chownSync(ownedByDaemon, fx.daemonUser.uid, fx.daemonUser.gid);
    const own = await fx.startDaemon({ allowedSigners: ownedByDaemon, expectExit: true });
    expect(own.child.exitCode).toBe(2);
    expect(own.stderr()).toContain(`is owned by the daemon's own uid ${fx.daemonUser.uid}`);
    const none = await fx.startDaemon({ allowedSigners: null, expectExit: true });
    expect(none.child.exitCode).toBe(2);
    expect(none.stderr()).toMatch(/profile\(s\) site need human-signed approvals/);
    expect(existsSync(fx.socketPath)).toBe(false);
  }, 60_000);

  it("without an approval a dry run and a replicate are auth-required; probe and verify need none", async () => {
    daemon = await fx.startDaemon();
    expect(await ask(dryRun)).toMatchObject({ outcome: "auth-required", code: "APPROVAL_REQUIRED" });
    expect(await ask(replicate)).toMatchObject({ outcome: "auth-required", code: "APPROVAL_REQUIRED" });
    expect((await ask({ op: "probe", profile: "site" })).code).toBe("OK");
    expect((await ask({ op: "verify", profile: "site", run_id: RUN })).code).toBe("RUN_NOT_FOUND");
  }, 60_000);

  it("a signed replicate approval runs exactly once; a dry-run approval does not replicate", async () => {
    expect((await ask({ ...dryRun, approval: fx.approve(dryRun) })).code).toBe("OK");

    const wrong = await ask({ ...replicate, approval: fx.approve(dryRun) });
    expect(wrong).toMatchObject({ outcome: "auth-required", code: "APPROVAL_MISMATCH" });
    expect(wrong.message).toContain("infra_rsync_dry_run");
    expect(written()).toBe(false);

    const approval = fx.approve(replicate);
    const first = await ask({ ...replicate, approval });
    expect(first).toMatchObject({ outcome: "ok", code: "OK" });
    expect(first.replayed).toBeUndefined();
    expect(readdirSync(join(fx.receiverDir, "runs", RUN))).toContain("site");

    const again = await ask({ ...replicate, approval });
    expect(again).toMatchObject({ outcome: "auth-required", code: "APPROVAL_REUSED" });
    expect(again.message).toContain(approval.request);

    // Its receipts name the approval's request, the signer and the key, never the signature.
    const record = receiptOf(first.receipt_id);
    expect(record?.args.approval).toEqual({
      request: approval.request,
      claimed_signer: "operator@example.org",
      principal: "operator@example.org",
      fingerprint: fx.signer.fingerprint,
    });
    expect(receiptOf(again.receipt_id)?.args.code).toBe("APPROVAL_REUSED");
    const log = readFileSync(join(fx.stateDir, "receipts.jsonl"), "utf8");
    for (const line of approval.signature
      .split("\n")
      .filter((l) => l.length > 20 && !l.startsWith("-----"))) {
      expect(log).not.toContain(line);
    }
    const oks = receipts().filter((r) => r.tool === "infra.replicate" && r.args.code === "OK");
    expect(oks).toHaveLength(1);
  }, 120_000);

  it("lets exactly one of two connections racing with the same approval act", async () => {
    const request = { ...dryRun, run_id: "consent-race" };
    const approval = fx.approve(request);
    const answers = await Promise.all([
      infraExchange(fx.socketPath, [{ ...request, approval }]),
      infraExchange(fx.socketPath, [{ ...request, approval }]),
    ]);
    const codes = answers.map((a) => (a[0] as InfraResponse).code).sort();
    expect(codes).toEqual(["APPROVAL_REUSED", "OK"]);
  }, 60_000);

  it("reports how many signers it verifies with", async () => {
    const status = await ask({ op: "status" });
    expect((status.data as { broker: { allowed_signers: number } }).broker.allowed_signers).toBe(1);
  });

  it("remembers a consumed approval across a restart", async () => {
    const approval = fx.approve({ ...replicate, run_id: "consent-r2", idempotency_key: "consent-r2-0001" });
    const request = { ...replicate, run_id: "consent-r2", idempotency_key: "consent-r2-0001" };
    // Refused for want of a dry run, but the approval was spent on the attempt.
    expect((await ask({ ...request, approval })).code).toBe("DRY_RUN_REQUIRED");
    await daemon?.stop();
    daemon = await fx.startDaemon();
    expect((await ask({ ...request, approval })).code).toBe("APPROVAL_REUSED");
  }, 60_000);

  it("refuses a signature by a key the daemon does not list, and one over other bytes", async () => {
    const stranger = makeSignerKey(join(fx.root, "signer"), "stranger");
    const request = { ...dryRun, run_id: "consent-r3" };
    const unknown = await ask({ ...request, approval: fx.approve(request, { key: stranger }) });
    expect(unknown).toMatchObject({ outcome: "auth-required", code: "APPROVAL_INVALID" });
    expect(unknown.message).toContain(`${stranger.fingerprint} is not an allowed signer`);
    const approval = fx.approve(request);
    const tampered = { ...approval, payload: approval.payload.replace("consent-r3", "consent-r4") };
    const other = await ask({ ...request, run_id: "consent-r4", approval: tampered });
    expect(other).toMatchObject({ code: "APPROVAL_INVALID" });
    expect(other.message).toMatch(/signature does not verify/);
  }, 60_000);
});
