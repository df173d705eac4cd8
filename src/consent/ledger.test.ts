import { execFileSync, spawnSync } from "node:child_process";
import { appendFileSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { manualClock } from "../../test/helpers/clock.js";
import { type ConsentLedger, type LedgerResult, openLedger } from "./ledger.js";

// Setting the append-only flag needs CAP_LINUX_IMMUTABLE: these run as root (as CI does).
const ROOT = process.geteuid?.() === 0;

function must<T>(result: LedgerResult<T>): T {
  if (!result.ok) throw new Error(result.error);
  return result.value;
}

describe.skipIf(!ROOT)("the consent ledger", () => {
  let dir: string;
  let path: string;
  const opened: ConsentLedger[] = [];
  let clock = manualClock(1_000_000);
  const open = (): ConsentLedger => {
    const ledger = must(openLedger(path, { clock }));
    opened.push(ledger);
    return ledger;
  };

  beforeEach(() => {
    clock = manualClock(1_000_000);
    dir = mkdtempSync(join(tmpdir(), "ledger-"));
    path = join(dir, "consent.ledger");
    writeFileSync(path, "", { mode: 0o600 });
    execFileSync("/usr/bin/chattr", ["+a", path]);
  });
  afterEach(() => {
    for (const ledger of opened.splice(0)) ledger.close();
    spawnSync("/usr/bin/chattr", ["-a", path], { stdio: "ignore" });
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses a missing file, a link, and a file without the append-only flag, saying how to make one", () => {
    const missing = openLedger(join(dir, "none"), { clock });
    expect(missing.ok === false && missing.error).toMatch(
      /does not exist; as root: install .* chattr \+a FILE/,
    );
    const link = join(dir, "link");
    symlinkSync(path, link);
    expect(openLedger(link, { clock })).toMatchObject({
      ok: false,
      error: expect.stringContaining("symbolic link"),
    });
    const plain = join(dir, "plain");
    writeFileSync(plain, "");
    expect(openLedger(plain, { clock })).toMatchObject({
      ok: false,
      error: expect.stringContaining("is not append-only"),
    });
  });

  it("keeps denials, revocations and spent nonces, and a second handle reads them", () => {
    const a = open();
    must(a.deny("aaaaaaaaaa", "root", "wrong host"));
    must(a.revoke("bbbbbbbbbb"));
    must(a.revoke("session-1"));
    expect(must(a.spend("n1", "cccccccccc"))).toBe(true);
    const b = open();
    expect(b.denial("aaaaaaaaaa")).toEqual({ by: "root", reason: "wrong host", at: 1_000_000 });
    expect(b.denial("zzzzzzzzzz")).toBeNull();
    expect(b.leaseRevoked("bbbbbbbbbb", "other", 5)).toBe(true);
    expect(b.leaseRevoked("dddddddddd", "session-1", 5)).toBe(true);
    expect(b.leaseRevoked("dddddddddd", "session-2", 5)).toBe(false);
    expect(b.spent("n1")).toBe(true);
    expect(must(b.spend("n1", "cccccccccc"))).toBe(false);
  });

  it("revokes every lease opened until a revoke-all, not those opened after", () => {
    const ledger = open();
    clock.advance(1000);
    must(ledger.revokeAll());
    expect(ledger.leaseRevoked("l1", "s", clock.now() - 1)).toBe(true);
    expect(ledger.leaseRevoked("l2", "s", clock.now() + 1)).toBe(false);
  });

  it("lets the first claim of a nonce win: a claim appended by someone else first leaves this one nothing", () => {
    const ledger = open();
    appendFileSync(
      path,
      `\n${JSON.stringify({ v: 1, kind: "spend", nonce: "n2", claim: "theirs", at: 1 })}\n`,
    );
    expect(must(ledger.spend("n2", "r"))).toBe(false);
    expect(must(ledger.spend("n3", "r"))).toBe(true);
  });

  it("reads records appended after an unfinished line, and ignores lines that are no record", () => {
    const ledger = open();
    appendFileSync(path, '{"v":1,"kind":"deny","request":"');
    appendFileSync(path, "not json\n[1,2]\n");
    appendFileSync(path, `${JSON.stringify({ v: 2, kind: "deny", request: "x", at: 1 })}\n`);
    must(ledger.deny("eeeeeeeeee", "root", ""));
    must(ledger.refresh());
    expect(ledger.denial("eeeeeeeeee")).not.toBeNull();
    expect(ledger.denial("x")).toBeNull();
    const version = ledger.version();
    must(ledger.revoke("ffffffffff"));
    expect(ledger.version()).toBeGreaterThan(version);
  });

  it("cannot be truncated or rewritten in place, even through its own open handle's owner", () => {
    const ledger = open();
    must(ledger.deny("aaaaaaaaaa", "root", "kept"));
    expect(() => writeFileSync(path, "")).toThrow(/EPERM|operation not permitted/i);
    expect(must(openLedger(path, { clock })).denial("aaaaaaaaaa")).not.toBeNull();
  });
});
