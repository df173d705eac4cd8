import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { manualClock } from "../../test/helpers/clock.js";
import { localBackend, postgresBackend, type StateBackend } from "../../test/helpers/shared-state.js";
import { fileCounters, memoryCounters, openCountersDir, type PasskeyCounters } from "./passkey-counters.js";

/**
 * The sign counters' contract: one list of behaviours, run against the memory, file and
 * PostgreSQL stores, so the console's login and consent's verifier see the same rules whichever
 * store the relay keeps.
 */

/** The memory store, which the tests of other modules and of the bundle use, beside the file one relay keeps. */
const memory: StateBackend = { ...localBackend(), name: "memory", counters: async () => memoryCounters() };

for (const backend of [memory, localBackend(), postgresBackend()]) {
  describe.skipIf(backend.skip !== null)(`passkey sign counters: ${backend.name}`, () => {
    let counters: PasskeyCounters;
    beforeAll(() => backend.start(), 120_000);
    afterAll(() => backend.stop());
    beforeEach(async () => {
      counters = await backend.counters(manualClock(Date.UTC(2026, 11, 1)));
    });

    it("take the first counter, then only a higher one, and say which one stands", async () => {
      expect(await counters.get("cred-a")).toBeUndefined();
      expect(await counters.advance("cred-a", 5)).toEqual({ accepted: true });
      expect(await counters.get("cred-a")).toBe(5);
      expect(await counters.advance("cred-a", 5)).toEqual({ accepted: false, last: 5 });
      expect(await counters.advance("cred-a", 3)).toEqual({ accepted: false, last: 5 });
      expect(await counters.advance("cred-a", 0)).toEqual({ accepted: false, last: 5 });
      expect(await counters.get("cred-a")).toBe(5);
      expect(await counters.advance("cred-a", 6)).toEqual({ accepted: true });
      expect(await counters.advance("cred-b", 1)).toEqual({ accepted: true });
      expect(await counters.get("cred-a")).toBe(6);
    });

    it("do not compare an authenticator that keeps no counter (always zero)", async () => {
      expect(await counters.advance("cred", 0)).toEqual({ accepted: true });
      expect(await counters.advance("cred", 0)).toEqual({ accepted: true });
      expect(await counters.get("cred")).toBe(0);
      expect(await counters.advance("cred", 2)).toEqual({ accepted: true });
      expect(await counters.advance("cred", 0)).toEqual({ accepted: false, last: 2 });
    });

    it("count an assertion once, and a repeat of it as a repeat, not as a replayed counter", async () => {
      expect(await counters.countAssertion("cred", 9, "digest-1")).toEqual({ accepted: true, repeat: false });
      expect(await counters.countAssertion("cred", 10, "digest-2")).toEqual({
        accepted: true,
        repeat: false,
      });
      expect(await counters.countAssertion("cred", 9, "digest-1")).toEqual({ accepted: true, repeat: true });
      expect(await counters.get("cred")).toBe(10);
      // Another assertion with a counter that did not move is refused, and not remembered as accepted.
      expect(await counters.countAssertion("cred", 10, "digest-3")).toEqual({ accepted: false, last: 10 });
      expect(await counters.countAssertion("cred", 10, "digest-3")).toEqual({ accepted: false, last: 10 });
      expect(await counters.countAssertion("other", 3, "digest-4")).toEqual({
        accepted: true,
        repeat: false,
      });
    });

    it("refuse a value no authenticator reports, changing nothing", async () => {
      await counters.advance("cred", 4);
      for (const bad of [-1, 1.5, 2 ** 32, Number.NaN]) {
        await expect(counters.advance("cred", bad)).rejects.toThrow(/32-bit unsigned integer/);
      }
      expect(await counters.get("cred")).toBe(4);
    });
  });
}

describe("the counters file", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "counters-file-"));
    return () => rmSync(dir, { recursive: true, force: true });
  });

  it("still loads the console's older file and consent's, and writes one shape, 0600", async () => {
    const older = join(dir, "sign-counters.json");
    writeFileSync(older, '{"cred-a":7}\n', { mode: 0o600 });
    const counters = fileCounters(older);
    expect(await counters.get("cred-a")).toBe(7);
    expect(await counters.advance("cred-a", 7)).toEqual({ accepted: false, last: 7 });
    expect(await counters.countAssertion("cred-a", 8, "d1")).toEqual({ accepted: true, repeat: false });
    expect(JSON.parse(readFileSync(older, "utf8"))).toEqual({ counters: { "cred-a": 8 }, accepted: ["d1"] });
    expect(statSync(older).mode & 0o777).toBe(0o600);

    const consent = join(dir, "passkey-counters.json");
    writeFileSync(consent, '{"counters":{"cred-b":3},"accepted":["d9"]}\n');
    expect(await fileCounters(consent).countAssertion("cred-b", 1, "d9")).toEqual({
      accepted: true,
      repeat: true,
    });
  });

  it("refuses a file that is not a table of counters, naming it", async () => {
    const path = join(dir, "c.json");
    for (const [text, problem] of [
      ["{not json", "is not JSON"],
      ["[1,2]", "is not a table of counters"],
      ['{"cred":-1}', "is not a table of counters"],
      ['{"counters":{"cred":"7"},"accepted":[]}', "is not a table of counters"],
    ]) {
      writeFileSync(path, text as string);
      await expect(fileCounters(path).get("cred")).rejects.toThrow(
        `the passkey counters file ${path} ${problem}`,
      );
    }
  });

  it("is opened in the console's state directory, made 0700, and a broken file stops the start", () => {
    const state = join(dir, "console");
    openCountersDir(state);
    expect(statSync(state).mode & 0o777).toBe(0o700);
    writeFileSync(join(state, "sign-counters.json"), "{not json");
    expect(() => openCountersDir(state)).toThrow(/sign-counters\.json is not JSON/);
  });
});

describe("the assertions a file or memory remembers", () => {
  it("are the last 1024 accepted", async () => {
    const counters = memoryCounters();
    for (let i = 1; i <= 1025; i += 1) await counters.countAssertion("cred", i, `d${i}`);
    expect(await counters.countAssertion("cred", 1, "d1")).toEqual({ accepted: false, last: 1025 });
    expect(await counters.countAssertion("cred", 2, "d2")).toEqual({ accepted: true, repeat: true });
  });
});
