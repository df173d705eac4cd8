import { fork } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { serialize } from "node:v8";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { RUN, sleepers, until } from "../../test/helpers/processes.js";
import { rejection, shellRequests } from "../../test/helpers/requests.js";
import { buildEnv } from "./env.js";
import { decodeFromLauncher, decodeToLauncher } from "./launcher-protocol.js";
import { createLauncherRunner, launcherEntry } from "./launcher-runner.js";

/**
 * The Node launcher and its runner after a message neither could read, over the real IPC channel.
 * A stand-in launcher runs the real one (launcher-host.ts) and, on a marked command, puts a value
 * of the test's choosing on the channel instead: as the launcher's reply (the runner must fail the
 * call, say why once, and start another launcher) or as the server's request (the launcher must
 * say why, stop what it runs and exit). Either way the next command runs.
 */

const { sh } = shellRequests(buildEnv(process.env, ""));
const dir = mkdtempSync(join(tmpdir(), "relay-launcher-ipc-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const real = launcherEntry(new URL("./launcher-runner.ts", import.meta.url).href);
const host = fileURLToPath(new URL("./launcher-host.ts", import.meta.url));
const standIn = join(dir, "stand-in.mjs");
writeFileSync(
  standIn,
  `import { deserialize } from "node:v8";
import { serveLauncher } from ${JSON.stringify(host)};
const junk = (text, mark) => deserialize(Buffer.from(text.slice(text.indexOf(mark) + mark.length).trim(), "base64"));
// The outcome of a command that printed "REPLY <v8 base64>" is replaced by that value.
const send = process.send.bind(process);
process.send = (message, ...rest) =>
  send(message?.kind === "done" && message.outcome.output.startsWith("REPLY ") ? junk(message.outcome.output, "REPLY ") : message, ...rest);
// A request whose command is ": REQUEST <v8 base64>" reaches the launcher as that value.
const on = process.on.bind(process);
process.on = (event, listener) =>
  on(event, event !== "message" ? listener : (m) => listener(typeof m?.request?.command === "string" && m.request.command.startsWith(": REQUEST ") ? junk(m.request.command, "REQUEST ") : m));
serveLauncher(process);
`,
);
const entry = { script: standIn, execArgv: real.execArgv };

/**
 * Anything structured clone carries, except what no message could be: process.send refuses
 * undefined and a bare bigint as a message (inside an object a bigint travels).
 */
const anything = fc
  .anything({ withBigInt: true, withDate: true, withMap: true, withTypedArray: true, maxDepth: 3 })
  .filter((v) => v !== undefined && typeof v !== "bigint");
const base64 = (value: unknown): string => serialize(value).toString("base64");

/** A runner on the stand-in, with the lines it logs. */
function standInRunner() {
  const logged: Array<{ facts: object; message: string }> = [];
  const runner = createLauncherRunner({
    kind: "node",
    entry,
    logger: { error: (facts, message) => logged.push({ facts, message }) },
  });
  return { runner, logged };
}

describe("a malformed message from the Node launcher", () => {
  it("fails the call with why, is logged once, and the next command runs on a new launcher", async () => {
    const { runner, logged } = standInRunner();
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            anything,
            // Cut short, over a bound, and of an unknown kind.
            fc.constant({ kind: "done", id: 1 }),
            fc.constant({
              kind: "failed",
              id: 1,
              error: { relay: true, name: "E", type: "E", message: "m".repeat(70_000) },
            }),
            fc.constant({ kind: "progress", id: 1 }),
          ),
          async (junk) => {
            fc.pre(decodeFromLauncher(junk).kind === "bad");
            const before = logged.length;
            const err = await rejection(runner.run(sh(`printf 'REPLY %s' '${base64(junk)}'`)));
            expect(err.type).toBe("OSError");
            expect(err.message).toMatch(
              /^process launcher sent a malformed message \(.{5,}\) before the process finished$/,
            );
            expect(logged.length - before).toBe(1);
            expect(logged.at(-1)?.message).toBe("process launcher sent a malformed message; restarting it");
            expect((await runner.run(sh("echo next"))).output).toBe("next\n");
            expect(runner.active()).toBe(0);
          },
        ),
        { numRuns: 8 },
      );
    } finally {
      runner.close();
    }
  }, 120_000);
});

describe("a malformed message to the Node launcher", () => {
  const mark = `${RUN}7`;

  it("fails every call in flight with why, stops their commands, and the next command runs", async () => {
    const { runner } = standInRunner();
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            anything,
            fc.constant({ kind: "run", id: 99, aborted: false }),
            fc.constant({ kind: "abort", id: 0 }),
            fc.constant({ kind: "killAll", extra: true }),
          ),
          fc.nat({ max: 1000 }),
          async (junk, n) => {
            fc.pre(decodeToLauncher(junk).kind === "bad");
            const m = `${mark}${n}`;
            const slow = runner.run(sh(`sleep ${m}`));
            await until(() => sleepers(m).length === 1, 5000);
            const errors = await Promise.all([
              rejection(runner.run(sh(`: REQUEST ${base64(junk)}`))),
              rejection(slow),
            ]);
            for (const err of errors)
              expect(err.message).toMatch(
                /^process launcher stopped on a message it could not read \(.{5,}\) before the process finished$/,
              );
            await until(() => sleepers(m).length === 0, 5000);
            expect((await runner.run(sh("echo next"))).output).toBe("next\n");
          },
        ),
        { numRuns: 6 },
      );
    } finally {
      runner.close();
    }
  }, 120_000);

  it("says why once on stderr and on the channel, and exits 65 without throwing", async () => {
    const child = fork(real.script, [], {
      execArgv: real.execArgv,
      env: {},
      serialization: "advanced",
      stdio: ["ignore", "ignore", "pipe", "ipc"],
    });
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    const replies: unknown[] = [];
    child.on("message", (m) => replies.push(m));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    await until(() => replies.length > 0, 10_000);
    child.send(new Map([["kind", "run"]]));
    child.send({ kind: "close" });
    expect(await exited).toBe(65);
    expect(replies).toEqual([
      { kind: "ready" },
      { kind: "broken", why: "the message is not a plain object" },
    ]);
    expect(stderr).toBe(
      "relay-shell process launcher: a message from the server could not be read: the message is not a plain object\n",
    );
  }, 30_000);
});
