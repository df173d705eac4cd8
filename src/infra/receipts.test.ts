import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { verifyAuditChain } from "../audit/index.js";
import { cryptoIds, systemClock } from "../core/index.js";
import type { InfraResponse } from "../infra-protocol/index.js";
import { boundClaims, createReceipts, type ReceiptFacts } from "./receipts.js";

let dir = "";
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "relay-infra-receipts-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function facts(receiptId: string, fields: Partial<ReceiptFacts> = {}): ReceiptFacts {
  const response: InfraResponse = {
    v: 1,
    receipt_id: receiptId,
    op: "replicate",
    profile: "alpha",
    run_id: "r1",
    outcome: "ok",
    code: "OK",
    message: "replicated",
  };
  return {
    receiptId,
    op: "replicate",
    profile: "alpha",
    runId: "r1",
    idempotencyKey: "key-00001",
    requestId: "client-7",
    principal: { uid: 1000, gid: 1000, pid: 9, groups: [27] },
    outcome: "ok",
    code: "OK",
    claimedIdentity: null,
    approvalPresent: false,
    approval: null,
    response,
    ...fields,
  };
}

describe("createReceipts", () => {
  it("writes one chained record per request that --verify-audit's check accepts", () => {
    const receipts = createReceipts(dir, { clock: systemClock, ids: cryptoIds });
    const first = receipts.newId();
    const second = receipts.newId();
    expect(first).toMatch(/^r-[0-9a-f]{24}$/);
    expect(first).not.toBe(second);
    expect(receipts.reserve()).toBe(true);
    expect(receipts.write(facts(first))).toBe(true);
    expect(
      receipts.write(
        facts(second, {
          op: null,
          profile: null,
          runId: null,
          idempotencyKey: null,
          requestId: null,
          outcome: "invalid",
          code: "MALFORMED_JSON",
          claimedIdentity: { uid: 0 },
        }),
      ),
    ).toBe(true);
    receipts.close();
    const records = readFileSync(join(dir, "receipts.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(records[0]).toMatchObject({
      tool: "infra.replicate",
      tier: 2,
      denied: false,
      request_id: first,
      exit_code: null,
      args: {
        op: "replicate",
        profile: "alpha",
        run_id: "r1",
        idempotency_key: "key-00001",
        request_id: "client-7",
        principal: { uid: 1000, gid: 1000, pid: 9, groups: [27] },
        outcome: "ok",
        code: "OK",
        claimed_identity: null,
        approval_present: false,
        receipt_id: first,
      },
    });
    expect(records[1]).toMatchObject({ tool: "infra.invalid", tier: 0, denied: true, request_id: second });
    expect(records[1].args.claimed_identity).toEqual({ uid: 0 });
    const report = verifyAuditChain(join(dir, "receipts.jsonl"));
    expect(report.ok).toBe(true);
    expect(report.records).toBe(2);
  });

  it("records an approval's request, both signer names and the key's fingerprint as they are", () => {
    const receipts = createReceipts(dir, { clock: systemClock, ids: cryptoIds });
    const approval = {
      request: "c-7f3a",
      claimed_signer: "alice@example.org",
      principal: "alice@example.org",
      fingerprint: "SHA256:hPjumfusJxqkvGI4yXz2kukoGzCwr3aLLoZ1u7ie0ZE",
    };
    receipts.write(facts(receipts.newId(), { approvalPresent: true, approval }));
    receipts.close();
    const record = JSON.parse(readFileSync(join(dir, "receipts.jsonl"), "utf8").trim());
    expect(record.args).toMatchObject({ approval_present: true, approval });
  });

  it("gives each operation its tier", () => {
    const receipts = createReceipts(dir, { clock: systemClock, ids: cryptoIds });
    for (const op of ["status", "probe", "verify", "rsync-dry-run", "replicate"] as const) {
      receipts.write(facts(receipts.newId(), { op }));
    }
    receipts.close();
    const tiers = readFileSync(join(dir, "receipts.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l).tier);
    expect(tiers).toEqual([0, 0, 0, 1, 2]);
  });
});

describe("boundClaims", () => {
  it("keeps numbers and short strings, and turns anything else into bounded text", () => {
    const bounded = boundClaims({ uid: 0, user: "root", groups: [0, 1], identity: "x".repeat(10_000) });
    expect(bounded.uid).toBe(0);
    expect(bounded.user).toBe("root");
    expect(bounded.groups).toBe("[0,1]");
    expect(Buffer.byteLength(String(bounded.identity))).toBeLessThan(400);
  });
});
