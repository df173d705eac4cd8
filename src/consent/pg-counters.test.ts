import { randomInt } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postgresBackend } from "../../test/helpers/shared-state.js";
import { systemClock } from "../core/index.js";
import type { PgState } from "../state/index.js";
import type { PasskeyCounters } from "./passkey-counters.js";
import { createPgCounters } from "./pg-counters.js";

/** Several relays (one pool each) writing the same passkey's counter at once. */

/** Every change of a counter, in the order the database made them: what the relays cannot see. */
const CHANGE_LOG = `
CREATE TABLE counter_changes (seq bigserial PRIMARY KEY, credential_id text, old bigint, new bigint);
CREATE FUNCTION log_counter_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO counter_changes (credential_id, old, new)
    VALUES (NEW.credential_id, CASE WHEN TG_OP = 'UPDATE' THEN OLD.counter END, NEW.counter);
  RETURN NEW;
END $$;
CREATE TRIGGER counter_changes AFTER INSERT OR UPDATE ON passkey_counters
  FOR EACH ROW EXECUTE FUNCTION log_counter_change();
`;

const postgres = postgresBackend();

describe.skipIf(postgres.skip !== null)("passkey sign counters across relays", () => {
  let states: PgState[];
  let relays: PasskeyCounters[];

  beforeAll(async () => {
    await postgres.start();
    states = await postgres.relays(3);
    await (states[0] as PgState).pool.query(CHANGE_LOG);
    relays = states.map((state) => createPgCounters(state, { clock: systemClock }));
  }, 120_000);
  afterAll(() => postgres.stop());

  const relay = (i: number): PasskeyCounters => relays[i % relays.length] as PasskeyCounters;

  it("end at the highest of twenty concurrent counters, never stepping back on the way", async () => {
    for (let round = 0; round < 5; round += 1) {
      const id = `cred-${round}`;
      const values = Array.from({ length: 20 }, () => randomInt(0, 1000));
      const answers = await Promise.all(values.map((value, i) => relay(i).advance(id, value)));
      expect(await relay(1).get(id)).toBe(Math.max(...values));
      const changes = await (states[0] as PgState).pool.query<{ old: number | null; new: number }>(
        "SELECT old, new FROM counter_changes WHERE credential_id = $1 ORDER BY seq",
        [id],
      );
      // Each change the database made raised the counter (or wrote the first one) ...
      for (const change of changes.rows) {
        const raised =
          change.old === null || change.new > change.old || (change.new === 0 && change.old === 0);
        expect(raised).toBe(true);
      }
      const made = changes.rows.map((change) => change.new);
      for (let i = 1; i < made.length; i += 1)
        expect(made[i] as number).toBeGreaterThanOrEqual(made[i - 1] as number);
      // ... and each relay told "accepted" made one of them; a refusal named a counter at least as high.
      const accepted = values.filter((_, i) => answers[i]?.accepted);
      expect(accepted.sort((a, b) => a - b)).toEqual([...made].sort((a, b) => a - b));
      values.forEach((value, i) => {
        const answer = answers[i];
        if (answer && !answer.accepted) expect(answer.last).toBeGreaterThanOrEqual(value);
      });
    }
  });

  it("count one assertion once when ten relays check it at the same moment", async () => {
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => relay(i).countAssertion("cred-x", 41, "the-assertion")),
    );
    expect(answers.filter((a) => a.accepted && !a.repeat)).toHaveLength(1);
    expect(answers.filter((a) => a.accepted && a.repeat)).toHaveLength(9);
    // Two assertions carrying the same counter (a cloned authenticator): only one is taken.
    const clones = await Promise.all([
      relay(0).countAssertion("cred-x", 42, "clone-1"),
      relay(1).countAssertion("cred-x", 42, "clone-2"),
    ]);
    expect(clones.filter((a) => a.accepted)).toHaveLength(1);
    expect(clones.find((a) => !a.accepted)).toEqual({ accepted: false, last: 42 });
    expect(await relay(2).get("cred-x")).toBe(42);
  });

  it("forget assertions older than the retention, so the table stays small", async () => {
    let now = Date.UTC(2026, 11, 1);
    const clock = { now: () => now, monotonic: () => now };
    const counters = createPgCounters(states[2] as PgState, { clock, assertionRetentionMs: 60_000 });
    await counters.countAssertion("cred-old", 1, "old-assertion");
    now += 61_000;
    await counters.countAssertion("cred-old", 2, "new-assertion");
    const kept = await (states[0] as PgState).pool.query(
      "SELECT digest FROM passkey_assertions WHERE credential_id = 'cred-old'",
    );
    expect(kept.rows).toEqual([{ digest: "new-assertion" }]);
  });
});
