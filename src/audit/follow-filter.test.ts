import { describe, expect, it } from "vitest";
import {
  type AuditFilter,
  type AuditOutcome,
  type MinuteCounts,
  matchesFilter,
  outcomeOf,
  perMinuteByTier,
} from "./index.js";

const base = {
  ts: "2026-07-15T10:11:12.345000+00:00",
  tool: "shell_exec",
  tier: 1,
  denied: false,
  args: { command: "uptime" },
  output_sha256: "0".repeat(64),
  output_len: 10,
  exit_code: 0,
};

function rec(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...base, ...fields };
}

const T = Date.parse("2026-07-15T10:11:12.345Z");

describe("outcomeOf", () => {
  it.each([
    ["a call that exited 0", rec(), "ok"],
    ["a call without an exit status", rec({ exit_code: null }), "ok"],
    ["a non-zero exit", rec({ exit_code: 2 }), "error"],
    ["a refusal", rec({ denied: true, exit_code: null }), "denied"],
    ["a consent refusal", rec({ action: "consent_refuse", exit_code: null }), "denied"],
    ["a broker challenge", rec({ tier: 3, action: "confirm_plan", exit_code: null }), "challenge"],
    ["a consent request", rec({ tier: 3, action: "consent_request", exit_code: null }), "challenge"],
    ["a confirmed execute", rec({ tier: 3, action: "confirm_execute" }), "ok"],
    ["a failed verify step", rec({ tier: 3, action: "confirm_verify", exit_code: 1 }), "error"],
  ] satisfies Array<[string, Record<string, unknown>, AuditOutcome]>)(
    "%s is %s",
    (_name, record, outcome) => {
      expect(outcomeOf(record)).toBe(outcome);
    },
  );
});

describe("matchesFilter", () => {
  const cases: Array<[string, AuditFilter, Record<string, unknown>, boolean]> = [
    ["an empty filter matches anything", {}, rec(), true],
    ["an empty filter matches a record missing fields", {}, {}, true],
    ["tool, same", { tool: "shell_exec" }, rec(), true],
    ["tool, other", { tool: "ssh_exec" }, rec(), false],
    ["tool is exact, not a prefix", { tool: "shell" }, rec(), false],
    ["tier, same", { tier: 1 }, rec(), true],
    ["tier, other", { tier: 0 }, rec(), false],
    ["tier 0 is a filter, not absent", { tier: 0 }, rec({ tier: 0 }), true],
    ["denied true", { denied: true }, rec({ denied: true }), true],
    ["denied false on a refusal", { denied: false }, rec({ denied: true }), false],
    ["outcome", { outcome: "challenge" }, rec({ action: "confirm_plan" }), true],
    ["outcome, other", { outcome: "ok" }, rec({ action: "confirm_plan" }), false],
    ["client", { client: "claude" }, rec({ client_id: "claude" }), true],
    ["client on a record without one", { client: "claude" }, rec(), false],
    ["host from args.host", { host: "web1" }, rec({ args: { host: "web1" } }), true],
    ["host, other", { host: "web2" }, rec({ args: { host: "web1" } }), false],
    ["host from a hosts list", { host: "db2" }, rec({ args: { hosts: "web1, db2 db3" } }), true],
    ["host from a hosts array", { host: "db3" }, rec({ args: { hosts: ["db2", "db3"] } }), true],
    ["host is a whole name", { host: "db" }, rec({ args: { hosts: "db2,db3" } }), false],
    ["host on args that are not an object", { host: "x" }, rec({ args: "x" }), false],
    ["since, equal", { since: T }, rec(), true],
    ["since, later", { since: T + 1 }, rec(), false],
    ["until is exclusive", { until: T }, rec(), false],
    ["until, later", { until: T + 1 }, rec(), true],
    ["a time range on a record without ts", { since: 0 }, rec({ ts: undefined }), false],
    ["a time range on a ts that is not a time", { until: T }, rec({ ts: "yesterday" }), false],
    ["every field must hold", { tool: "shell_exec", tier: 1, denied: true }, rec(), false],
    [
      "every field holding",
      { tool: "shell_exec", tier: 1, denied: false, outcome: "ok", since: T - 1, until: T + 1 },
      rec(),
      true,
    ],
  ];
  it.each(cases)("%s", (_name, filter, record, expected) => {
    expect(matchesFilter(record, filter)).toBe(expected);
  });

  it("does not change the record or the filter", () => {
    const record = rec({ args: { hosts: "a,b" } });
    const filter: AuditFilter = { host: "b", since: 0 };
    const before = JSON.stringify([record, filter]);
    matchesFilter(record, filter);
    expect(JSON.stringify([record, filter])).toBe(before);
  });
});

describe("perMinuteByTier", () => {
  it("counts calls per UTC minute by tier, oldest first, leaving out what it cannot place", () => {
    const at = (iso: string, tier: unknown) => rec({ ts: iso, tier });
    const counts = perMinuteByTier([
      at("2026-07-15T10:12:59.999000+00:00", 3),
      at("2026-07-15T10:11:00+00:00", 0),
      at("2026-07-15T10:11:59.999000+00:00", 1),
      at("2026-07-15T10:11:30.500000+00:00", 1),
      at("2026-07-15T10:12:00+00:00", 2),
      at("not a time", 1),
      at("2026-07-15T10:13:00+00:00", 4),
      at("2026-07-15T10:13:00+00:00", "1"),
      rec({ ts: undefined }),
    ]);
    const expected: MinuteCounts[] = [
      { minute: Date.parse("2026-07-15T10:11:00Z"), tiers: [1, 2, 0, 0] },
      { minute: Date.parse("2026-07-15T10:12:00Z"), tiers: [0, 0, 1, 1] },
    ];
    expect(counts).toEqual(expected);
  });

  it("gives nothing for nothing", () => {
    expect(perMinuteByTier([])).toEqual([]);
  });
});
