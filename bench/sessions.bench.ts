import { type BenchServer, rssBytes, startBenchServer, timeEach } from "./harness.js";
import { type Bench, type BenchFigure, median } from "./types.js";

const ROUNDS = 200;
const WARMUP = 20;
const BUFFER_BYTES = 8 * 1024 * 1024;
const FLOOD_BYTES = 100 * 1024 * 1024;
/** session_recv's default max_bytes: drained the way a client that sets nothing would. */
const DRAIN_BYTES = 65536;
const WARM_FLOOD_BYTES = 16 * 1024 * 1024;
const FLOOD_DEADLINE_MS = 60_000;

function sessionIdOf(text: string): string {
  const id = /^session (sh-[0-9a-f]{12}) started/.exec(text)?.[1];
  if (!id) throw new Error(`shell_spawn failed: ${text}`);
  return id;
}

interface FloodRun {
  produced: number;
  received: number;
  /** MiB/s */
  rate: number;
  /** Highest server RSS seen while streaming. */
  peak: number;
}

/** Stream `bytes` of output through a session while the client drains it as fast as it can. */
async function floodAndDrain(server: BenchServer, bytes: number): Promise<FloodRun> {
  const id = sessionIdOf(
    await server.call("shell_spawn", { command: `bash -c "head -c ${bytes} /dev/zero | tr '\\0' x"` }),
  );
  let peak = rssBytes(server.pid);
  let received = 0;
  const started = performance.now();
  for (;;) {
    if (performance.now() - started > FLOOD_DEADLINE_MS) throw new Error("the flood did not finish in time");
    const text = await server.call("session_recv", { session_id: id, timeout: 2, max_bytes: DRAIN_BYTES });
    peak = Math.max(peak, rssBytes(server.pid));
    if (text.startsWith(`\n[session ${id} ended`)) break;
    received += Buffer.byteLength(text);
  }
  const seconds = (performance.now() - started) / 1000;
  const rows = JSON.parse(await server.call("session_list", {})) as Array<{ id: string; produced: number }>;
  const produced = rows.find((r) => r.id === id)?.produced ?? Number.NaN;
  await server.call("session_kill", { session_id: id });
  return { produced, received, rate: produced / seconds / 2 ** 20, peak };
}

/** Stream `bytes` of output through a session nobody reads: the ring keeps the newest, drops the rest. */
async function floodUnread(server: BenchServer, bytes: number): Promise<{ dropped: number; peak: number }> {
  const id = sessionIdOf(
    await server.call("shell_spawn", { command: `bash -c "head -c ${bytes} /dev/zero | tr '\\0' x"` }),
  );
  let peak = rssBytes(server.pid);
  const started = performance.now();
  for (;;) {
    if (performance.now() - started > FLOOD_DEADLINE_MS) throw new Error("the flood did not finish in time");
    const rows = JSON.parse(await server.call("session_list", {})) as Array<{
      id: string;
      closed: boolean;
      dropped: number;
    }>;
    peak = Math.max(peak, rssBytes(server.pid));
    const row = rows.find((r) => r.id === id);
    if (!row) throw new Error(`session ${id} vanished during the flood`);
    if (row.closed) {
      await server.call("session_kill", { session_id: id });
      return { dropped: row.dropped, peak };
    }
    await new Promise((done) => setTimeout(done, 20));
  }
}

/**
 * Interactive latency (type a line, read its answer) against a one-shot
 * `shell_exec true` on the same server, and memory while a session floods
 * 100 MiB of output that the client drains as fast as it can.
 *
 * Memory is measured twice over the same idle baseline: with a client that
 * drains the flood as fast as it can (every byte passes through
 * session_recv), and with nobody reading (the ring keeps the newest bytes and
 * drops the rest). The server runs with the V8 settings of src/cli/main.ts;
 * docs/adr/0013-bounded-session-memory.md has the figures without them.
 */
export const sessionsBench: Bench = {
  name: "sessions",
  async run(): Promise<BenchFigure[]> {
    const server = await startBenchServer({
      RELAY_SHELL_SESSION_BUFFER_BYTES: String(BUFFER_BYTES),
    });
    try {
      // /bin/sh without line editing: with echo off and an empty prompt, "x\r\n" is the whole answer.
      const id = sessionIdOf(
        await server.call("shell_spawn", { command: "/bin/sh", env_json: '{"PS1":""}' }),
      );
      await server.call("session_send", { session_id: id, data: "stty -echo; echo ready" });
      let settled = "";
      while (!/ready\r\n/.test(settled))
        settled += await server.call("session_recv", { session_id: id, timeout: 2 });

      const roundTrip = async () => {
        await server.call("session_send", { session_id: id, data: "echo x" });
        let text = "";
        while (!/(^|\n)x\r\n/.test(text))
          text += await server.call("session_recv", { session_id: id, timeout: 2 });
      };
      const exec = () => server.call("shell_exec", { command: "true" });
      await timeEach(WARMUP, roundTrip);
      await timeEach(WARMUP, exec);
      const session: number[] = [];
      const oneShot: number[] = [];
      // Interleaved so background load hits both alike.
      for (let round = 0; round < 4; round++) {
        session.push(...(await timeEach(ROUNDS / 4, roundTrip)));
        oneShot.push(...(await timeEach(ROUNDS / 4, exec)));
      }
      await server.call("session_kill", { session_id: id });
      const sessionMedian = median(session);
      const execMedian = median(oneShot);

      const cold = rssBytes(server.pid);
      await floodAndDrain(server, WARM_FLOOD_BYTES);
      const warm = rssBytes(server.pid);
      const run = await floodAndDrain(server, FLOOD_BYTES);
      const unread = await floodUnread(server, FLOOD_BYTES);
      return [
        {
          name: 'session_send("echo x") -> session_recv until x, median',
          value: sessionMedian,
          unit: "ms",
          target: "reported",
          met: null,
        },
        {
          name: "shell_exec true, median (same run)",
          value: execMedian,
          unit: "ms",
          target: "reported",
          met: null,
        },
        {
          name: "session round trip / shell_exec true (median)",
          value: sessionMedian / execMedian,
          unit: "x",
          target: "reported",
          met: null,
        },
        {
          name: "flood: bytes produced by the session",
          value: run.produced,
          unit: "B",
          target: `${FLOOD_BYTES}`,
          met: run.produced === FLOOD_BYTES,
        },
        {
          name: "flood: bytes drained by session_recv (the ring dropped the rest)",
          value: run.received,
          unit: "B",
          target: "reported",
          met: null,
        },
        {
          name: "flood: output rate while draining",
          value: run.rate,
          unit: "MiB/s",
          target: "reported",
          met: null,
        },
        {
          name: "flood, client draining: server RSS growth over the idle server",
          value: (run.peak - cold) / 2 ** 20,
          unit: "MiB",
          target: `< 2 x RELAY_SHELL_SESSION_BUFFER_BYTES (${(2 * BUFFER_BYTES) / 2 ** 20} MiB)`,
          met: run.peak - cold < 2 * BUFFER_BYTES,
        },
        {
          name: `flood, client draining: server RSS growth after a ${WARM_FLOOD_BYTES / 2 ** 20} MiB warm-up flood`,
          value: (run.peak - warm) / 2 ** 20,
          unit: "MiB",
          target: "reported (flat memory: does not grow with the volume streamed)",
          met: null,
        },
        {
          name: "flood, nobody reading: bytes the ring dropped",
          value: unread.dropped,
          unit: "B",
          target: `${FLOOD_BYTES - BUFFER_BYTES} (all but the newest buffer's worth)`,
          met: unread.dropped === FLOOD_BYTES - BUFFER_BYTES,
        },
        {
          name: "flood, nobody reading: server RSS growth over the idle server",
          value: (unread.peak - cold) / 2 ** 20,
          unit: "MiB",
          target: `< 2 x RELAY_SHELL_SESSION_BUFFER_BYTES (${(2 * BUFFER_BYTES) / 2 ** 20} MiB)`,
          met: unread.peak - cold < 2 * BUFFER_BYTES,
        },
      ];
    } finally {
      await server.close();
    }
  },
};
