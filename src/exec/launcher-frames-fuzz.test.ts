import { type ChildProcess, spawn } from "node:child_process";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LAUNCHER_KINDS } from "../../test/helpers/processes.js";
import { MAX_OUTPUT_BYTES, MAX_REQUEST_FRAME_BYTES } from "../core/index.js";
import { nativeLauncherPath } from "./native-link.js";
import { decodeReply, type Reply, replyFrames } from "./native-replies.js";

/**
 * The native launcher (native/, ADR 0031) reading frames it was never meant to get: random,
 * truncated, inconsistent and oversized requests written straight to its stdin. Whatever comes, it
 * answers each run request (done, or failed with EINVAL when malformed), ignores what it does not
 * know, and ends with one of its documented statuses (0 closed or stdin ended, 70 oversized), never
 * by a signal. RELAY_LAUNCHER_BINARY picks the build: the sanitized one aborts on any report.
 */
const BINARY = nativeLauncherPath(import.meta.url);
const NATIVE = LAUNCHER_KINDS.includes("native") && BINARY !== null;
const EINVAL = 22;
/** MAX_FRAME and MAX_BUDGET in native/launcher.h. */
const MAX_FRAME = MAX_REQUEST_FRAME_BYTES;
const MAX_BUDGET = MAX_OUTPUT_BYTES;

const u32 = (v: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v >>> 0, 0);
  return b;
};
const u64 = (v: bigint): Buffer => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(v, 0);
  return b;
};
const str = (s: Buffer | string): Buffer => {
  const b = Buffer.from(s);
  return Buffer.concat([u32(b.length), b]);
};
const framed = (payload: Buffer): Buffer => Buffer.concat([u32(payload.length), payload]);

interface Run {
  id: number;
  flags: number;
  timeout: bigint;
  grace: bigint;
  pipeGrace: bigint;
  reapWait: bigint;
  budget: bigint;
  file: string;
  cwd: string;
  argv: Buffer[];
  env: Buffer[];
  stdin: Buffer | undefined;
}

function runPayload(r: Run): Buffer {
  return Buffer.concat([
    Buffer.from("R"),
    u32(r.id),
    Buffer.from([r.flags]),
    u64(r.timeout),
    u64(r.grace),
    u64(r.pipeGrace),
    u64(r.reapWait),
    u64(r.budget),
    str(r.file),
    str(r.cwd),
    u32(r.argv.length),
    ...r.argv.map(str),
    u32(r.env.length),
    ...r.env.map(str),
    r.stdin === undefined ? Buffer.from([0]) : Buffer.concat([Buffer.from([1]), str(r.stdin)]),
  ]);
}

interface Launcher {
  child: ChildProcess;
  replies: Reply[];
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** The launcher, its replies decoded as the server decodes them (or its stdout to `onStdout`). */
function startLauncher(onStdout?: (chunk: Buffer) => void): Launcher {
  const child = spawn(BINARY as string, [], { stdio: ["pipe", "pipe", "pipe"], env: {} });
  const replies: Reply[] = [];
  const split = replyFrames();
  let stderr = "";
  child.stdin?.on("error", () => {
    // Gone already (an oversized request ends it): what was left unsent does not matter.
  });
  child.stdout?.on(
    "data",
    onStdout ??
      ((chunk: Buffer) => {
        for (const frame of split(chunk).frames) replies.push(decodeReply(frame));
      }),
  );
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("close", (code, signal) => resolve({ code, signal })),
  );
  return { child, replies, stderr: () => stderr, exited };
}

/** Resolves with the exit, or kills the launcher and fails after `ms`. */
async function exitWithin(l: Launcher, ms: number) {
  const timer = setTimeout(() => l.child.kill("SIGKILL"), ms);
  const end = await l.exited;
  clearTimeout(timer);
  return end;
}

// Programs the fuzzer may start: nothing that lasts or writes anywhere but its pipes.
const files = fc.constantFrom("/bin/true", "/bin/cat", "/nonexistent/relay-fuzz", "", "relative-name");
const bytes = (max: number) => fc.uint8Array({ maxLength: max }).map((a) => Buffer.from(a));
const u64s = fc.oneof(
  fc.constant(0n),
  fc.bigInt({ min: 0n, max: 300n }),
  fc.constant(2n ** 64n - 1n),
  fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
);
const runs = fc
  .record({
    flags: fc.nat({ max: 255 }),
    timeout: u64s,
    grace: u64s,
    pipeGrace: u64s,
    reapWait: u64s,
    budget: u64s,
    file: files,
    cwd: fc.constantFrom("", "/", "/nonexistent-relay-dir", "/tmp"),
    argv: fc.array(bytes(24), { minLength: 1, maxLength: 4 }),
    env: fc.array(bytes(24), { maxLength: 4 }),
    stdin: fc.option(bytes(4096), { nil: undefined }),
  })
  // cat reads its stdin only: a random argument could name a file that never ends.
  .map((run) => (run.file === "/bin/cat" ? { ...run, argv: [Buffer.from("cat")] } : run));

/** One frame of a session, and whether the launcher owes it an answer (a run request). */
type Step =
  | { kind: "run"; run: Omit<Run, "id"> }
  | { kind: "bad-run"; run: Omit<Run, "id">; how: "cut" | "extra" | "count"; at: number }
  | { kind: "raw"; payload: Buffer }
  | { kind: "abort"; id: number; short: boolean }
  | { kind: "kill-all" };

const steps: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: runs.map((run) => ({ kind: "run" as const, run })) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("bad-run" as const),
      run: runs,
      how: fc.constantFrom("cut" as const, "extra" as const, "count" as const),
      at: fc.nat(),
    }),
  },
  { weight: 2, arbitrary: bytes(64).map((payload) => ({ kind: "raw" as const, payload })) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("abort" as const),
      id: fc.nat({ max: 20 }),
      short: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "kill-all" as const }) },
);

/** How the session ends: a close request, stdin closed, a frame cut off, or a length beyond MAX_FRAME. */
const endings = fc.constantFrom("close", "eof", "cut-stream", "oversized");

function encode(step: Step, id: number): { frame: Buffer; owed: boolean } {
  switch (step.kind) {
    case "run":
      return { frame: framed(runPayload({ ...step.run, id })), owed: true };
    case "bad-run": {
      const whole = runPayload({ ...step.run, id });
      let payload: Buffer;
      if (step.how === "cut") payload = whole.subarray(0, 1 + (step.at % (whole.length - 1)));
      else if (step.how === "extra") payload = Buffer.concat([whole, Buffer.from([step.at & 0xff])]);
      // argc claims more strings than the frame could hold: after kind, id, flags, five u64s, file and cwd.
      else
        payload = Buffer.concat([
          whole.subarray(0, 1 + 4 + 1 + 8 * 5 + 4 + step.run.file.length + 4 + step.run.cwd.length),
          u32(step.at | (1 << 20)),
        ]);
      return { frame: framed(payload), owed: true };
    }
    case "raw":
      return { frame: framed(step.payload), owed: step.payload[0] === 0x52 };
    case "abort":
      return {
        frame: framed(step.short ? Buffer.from("A") : Buffer.concat([Buffer.from("A"), u32(step.id)])),
        owed: false,
      };
    case "kill-all":
      return { frame: framed(Buffer.from("K")), owed: false };
  }
}

describe.skipIf(!NATIVE)("the native launcher, fed random frames", () => {
  it("answers or exits with a documented status, never by a signal", async () => {
    const started = performance.now();
    await fc.assert(
      fc.asyncProperty(fc.array(steps, { maxLength: 10 }), endings, async (session, ending) => {
        const l = startLauncher();
        let owed = 0;
        const ids: number[] = [];
        const frames = session.map((step, i) => {
          const { frame, owed: answer } = encode(step, 1000 + i);
          if (answer) owed++;
          if (step.kind === "run") ids.push(1000 + i);
          return frame;
        });
        const stream = Buffer.concat(frames);
        // Written in two pieces cut anywhere: frames are read as they come, not as they were sent.
        const cut = stream.length === 0 ? 0 : (owed * 7919) % stream.length;
        l.child.stdin?.write(stream.subarray(0, cut));
        l.child.stdin?.write(stream.subarray(cut));
        if (ending === "close") l.child.stdin?.write(framed(Buffer.from("C")));
        if (ending === "cut-stream") l.child.stdin?.write(Buffer.concat([u32(100), Buffer.from("R123")]));
        if (ending === "oversized") l.child.stdin?.write(u32(MAX_FRAME + 1));
        // Closed stdin means the server is gone: the launcher stops everything and exits at once, so
        // after a close request it stays open until the launcher has answered and exited.
        if (ending === "eof" || ending === "cut-stream") l.child.stdin?.end();
        const end = await exitWithin(l, 8000);
        l.child.stdin?.end();
        expect(l.stderr()).not.toMatch(/runtime error|Sanitizer/);
        expect(end.signal).toBeNull();
        expect(end.code).toBe(ending === "oversized" ? 70 : 0);
        expect(l.replies[0]).toEqual({ kind: "ready" });
        for (const reply of l.replies) expect(reply.kind).not.toBe("bad");
        if (ending === "close") {
          // Closing answers everything still open before the launcher exits.
          const answers = l.replies.filter((r) => r.kind === "done" || r.kind === "failed");
          expect(answers).toHaveLength(owed);
          for (const id of ids) expect(answers.some((r) => "id" in r && r.id === id)).toBe(true);
          for (const r of answers) {
            if (r.kind === "failed" && !ids.includes(r.id)) expect(r.errno).toBe(EINVAL);
          }
        }
      }),
      { numRuns: 300, interruptAfterTimeLimit: 4000 },
    );
    expect(performance.now() - started).toBeLessThan(20_000);
  });

  it("keeps at most MAX_BUDGET of output, whatever budget a run asks for", async () => {
    let head = Buffer.alloc(0);
    let seen = 0;
    let answered: () => void = () => undefined;
    const whole = new Promise<void>((resolve) => {
      answered = resolve;
    });
    // Only the done frame's fields are kept here; its 128 MiB of output are counted, not stored.
    const l = startLauncher((chunk) => {
      seen += chunk.length;
      if (head.length < 5 + 4 + 26) head = Buffer.concat([head, chunk.subarray(0, 64)]);
      if (head.length >= 9 && seen >= 9 + head.readUInt32LE(5)) answered();
    });
    const total = MAX_BUDGET + 4096;
    const run = runPayload({
      id: 1,
      flags: 0,
      timeout: 60_000n,
      grace: 100n,
      pipeGrace: 100n,
      reapWait: 3000n,
      budget: 2n ** 64n - 1n,
      file: "/bin/sh",
      cwd: "",
      argv: [Buffer.from("sh"), Buffer.from("-c"), Buffer.from(`head -c ${total} /dev/zero`)],
      env: [Buffer.from("PATH=/usr/bin:/bin")],
      stdin: undefined,
    });
    l.child.stdin?.write(framed(run));
    await Promise.race([whole, l.exited]);
    l.child.stdin?.end();
    const end = await exitWithin(l, 5000);
    expect(end).toEqual({ code: 0, signal: null });
    // After the 5-byte ready frame: the done frame's length, kind, id, code, flags, total, dropped.
    const done = head.subarray(5);
    const kept = done.readUInt32LE(0) - 54;
    expect(done[4]).toBe(0x44);
    expect(Number(done.readBigUInt64LE(4 + 10))).toBe(total);
    expect(Number(done.readBigUInt64LE(4 + 18))).toBe(total - MAX_BUDGET);
    expect(kept).toBe(MAX_BUDGET);
    expect(seen).toBe(5 + 4 + 54 + MAX_BUDGET);
  }, 30_000);
});
