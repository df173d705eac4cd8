import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cryptoIds } from "../core/index.js";
import { type KeyRecord, openLedger } from "./ledger.js";

let state: string;

beforeEach(() => {
  state = mkdtempSync(join(tmpdir(), "infra-ledger-"));
});

afterEach(() => {
  rmSync(state, { recursive: true, force: true });
});

const key = (over: Partial<KeyRecord> = {}): KeyRecord => ({
  key: "key-0000-aaaa",
  profile: "backup",
  op: "replicate",
  run_id: "r1",
  state: "started",
  outcome: null,
  at: "2026-12-01T00:00:00+00:00",
  ...over,
});

describe("the run ledger", () => {
  it("a key is claimed once, even by requests racing for it", async () => {
    const ledger = openLedger(state, cryptoIds);
    const claims = await Promise.all(
      Array.from({ length: 8 }, (_, i) => ledger.claimKey(key({ run_id: `r${i}` }))),
    );
    expect(claims.filter(Boolean)).toHaveLength(1);
    const winner = ledger.readKey("key-0000-aaaa");
    expect(winner?.run_id).toBe(`r${claims.indexOf(true)}`);
    await ledger.writeKey({
      ...key({ run_id: winner?.run_id ?? "" }),
      state: "done",
      outcome: { code: "OK", message: "ok." },
    });
    expect(ledger.readKey("key-0000-aaaa")?.state).toBe("done");
    const dir = join(state, "replication", "keys");
    expect(readdirSync(dir)).toEqual(["key-0000-aaaa.json"]);
    expect(statSync(join(dir, "key-0000-aaaa.json")).mode & 0o777).toBe(0o600);
  });

  it("writes run records whole and reads them back; an unknown run is null", async () => {
    const ledger = openLedger(state, cryptoIds);
    expect(ledger.readRun("backup", "r1")).toBeNull();
    const record = {
      run_id: "r1",
      profile: "backup",
      snapshot: null,
      dry_run: null,
      replication: null,
      verified: null,
    };
    await ledger.writeRun(record);
    await ledger.writeRun({ ...record, dry_run: { snapshot: "s", at: "t" } });
    expect(ledger.readRun("backup", "r1")?.dry_run).toEqual({ snapshot: "s", at: "t" });
    expect(readdirSync(ledger.runDir("backup", "r1"))).toEqual(["run.json"]);
    expect(JSON.parse(readFileSync(join(ledger.runDir("backup", "r1"), "run.json"), "utf8")).run_id).toBe(
      "r1",
    );
  });

  it("refuses ids that could leave the ledger's directories", () => {
    const ledger = openLedger(state, cryptoIds);
    expect(() => ledger.runDir("backup", "../../etc")).toThrow(/run id/);
    expect(() => ledger.runDir("../x", "r1")).toThrow(/profile id/);
    expect(() => ledger.readKey("../../../../etc/passwd")).toThrow(/idempotency key/);
  });

  it("sweeps scratch directories a dead process left, once, before handing out new ones", async () => {
    const first = openLedger(state, cryptoIds);
    const left = await first.scratchDir();
    const restarted = openLedger(state, cryptoIds);
    const fresh = await restarted.scratchDir();
    const another = await restarted.scratchDir();
    const names = readdirSync(join(state, "replication", "scratch"));
    expect(names.sort()).toEqual([fresh, another].map((d) => d.split("/").pop()).sort());
    expect(names).not.toContain(left.split("/").pop());
    expect(statSync(fresh).mode & 0o777).toBe(0o700);
  });
});
