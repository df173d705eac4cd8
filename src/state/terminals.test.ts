import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manualClock } from "../../test/helpers/clock.js";
import { POSTGRES_SKIP_REASON, type PostgresCluster, startPostgres } from "../../test/helpers/postgres.js";
import { type Clock, silentLogger } from "../core/index.js";
import { migrate } from "./migrations.js";
import { openPgState, type PgState } from "./pg.js";
import { createTerminalDirectory, type TerminalDirectory } from "./terminals.js";

/** Until `check` holds (the directory writes in the background), for at most two seconds. */
async function eventually(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 100; i += 1) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error("the directory never showed it");
}

describe.skipIf(POSTGRES_SKIP_REASON !== null)("the shared directory of terminals", () => {
  let cluster: PostgresCluster;
  const states: PgState[] = [];

  beforeAll(async () => {
    cluster = await startPostgres();
  });
  afterAll(async () => {
    await Promise.all(states.map((s) => s.close()));
    await cluster?.stop();
  });

  async function relays(database: string, names: string[], clock: Clock): Promise<TerminalDirectory[]> {
    const url = await cluster.createDatabase(database);
    const directories: TerminalDirectory[] = [];
    for (const name of names) {
      const state = openPgState(url, { instance: name });
      if (!state.ok) throw new Error(state.error.detail);
      states.push(state.value);
      const migrated = await migrate(state.value);
      if (!migrated.ok) throw new Error(migrated.error.detail);
      const directory = createTerminalDirectory(state.value, { clock, logger: silentLogger });
      await directory.start();
      directories.push(directory);
    }
    return directories;
  }

  it("lists another relay's terminals to their owner (and unowned ones to all), never its own", async () => {
    const clock = manualClock(1_000_000);
    const [a, b] = await relays("terminals_list", ["relay-a", "relay-b"], clock);
    if (!a || !b) throw new Error("no relays");
    a.announce({
      id: "sh-000000000001@relay-a",
      kind: "local",
      title: "sh",
      owner: "client-1",
      startedAt: 1,
    });
    a.announce({
      id: "sh-000000000002@relay-a",
      kind: "local",
      title: "top",
      owner: "client-2",
      startedAt: 2,
    });
    a.announce({ id: "ssh-000000000003@relay-a", kind: "ssh", title: "ssh web", owner: "", startedAt: 3 });
    await eventually(async () => (await b.elsewhere("client-1")).length === 2);
    const seen = await b.elsewhere("client-1");
    expect(seen.map((t) => [t.id, t.instance, t.relayUp])).toEqual([
      ["ssh-000000000003@relay-a", "relay-a", true],
      ["sh-000000000001@relay-a", "relay-a", true],
    ]);
    expect(await a.elsewhere("client-1")).toEqual([]);
    a.withdraw("sh-000000000001@relay-a");
    await eventually(async () => (await b.elsewhere("client-1")).length === 1);
  });

  it("marks a relay that stopped beating as down, and forgets a relay's terminals when it starts again", async () => {
    const clock = manualClock(5_000_000);
    const [a, b] = await relays("terminals_down", ["relay-a", "relay-b"], clock);
    if (!a || !b) throw new Error("no relays");
    a.announce({ id: "sh-0000000000aa@relay-a", kind: "local", title: "sh", owner: "c", startedAt: 1 });
    await eventually(async () => (await b.elsewhere("c")).length === 1);
    clock.advance(60_000);
    expect((await b.elsewhere("c"))[0]?.relayUp).toBe(false);
    // relay-a starts again: nothing it held before survived its process.
    const again = createTerminalDirectory(states[states.length - 2] as PgState, {
      clock,
      logger: silentLogger,
    });
    await again.start();
    expect(await b.elsewhere("c")).toEqual([]);
    await again.close();
  });

  it("never throws: with the database gone it lists nothing and writes nothing", async () => {
    const clock = manualClock(9_000_000);
    const [a, b] = await relays("terminals_gone", ["relay-a", "relay-b"], clock);
    if (!a || !b) throw new Error("no relays");
    await cluster.stopServer();
    try {
      a.announce({ id: "sh-0000000000bb@relay-a", kind: "local", title: "sh", owner: "c", startedAt: 1 });
      a.withdraw("sh-0000000000bb@relay-a");
      expect(await b.elsewhere("c")).toEqual([]);
    } finally {
      await cluster.startServer();
    }
  });
});
