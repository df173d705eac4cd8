import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { runnerWithLauncher } from "../../test/helpers/launcher.js";
import { rejection, shellRequests } from "../../test/helpers/requests.js";
import { KILL_GRACE_MS, MAX_TIMER_MS, PIPE_GRACE_MS, REAP_WAIT_MS } from "../core/index.js";
import { buildEnv } from "./env.js";
import { encodeRun } from "./native-link.js";
import { decodeReply, MAX_REPLY_BYTES, type Reply, replyFrames } from "./native-replies.js";
import type { SpawnPlan } from "./spawn-plan.js";

/** A 'D' payload as native/launcher.c writes it. */
function doneFrame(f: {
  id: number;
  code: number;
  flags: number;
  out: Buffer;
  err: Buffer;
  dropped: number;
  stopped: number;
}): Buffer {
  const head = Buffer.alloc(50);
  head.writeUInt8(0x44, 0);
  head.writeUInt32LE(f.id, 1);
  head.writeInt32LE(f.code, 5);
  head.writeUInt8(f.flags, 9);
  head.writeBigUInt64LE(BigInt(f.out.length + f.err.length + f.dropped), 10);
  head.writeBigUInt64LE(BigInt(f.dropped), 18);
  head.writeUInt32LE(f.stopped, 26);
  head.writeDoubleLE(12.5, 30);
  head.writeDoubleLE(40, 38);
  head.writeUInt32LE(f.out.length, 46);
  const errLength = Buffer.alloc(4);
  errLength.writeUInt32LE(f.err.length, 0);
  return Buffer.concat([head, f.out, errLength, f.err]);
}

function framed(payload: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head.writeUInt32LE(payload.length, 0);
  return Buffer.concat([head, payload]);
}

const done = fc.record({
  id: fc.nat({ max: 0xffffffff }),
  code: fc.integer({ min: -64, max: 255 }),
  flags: fc.nat({ max: 7 }),
  out: fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)),
  err: fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)),
  dropped: fc.nat({ max: 1 << 20 }),
  stopped: fc.nat({ max: 100 }),
});
const doneFrames = done.map(doneFrame);
const replies = fc.oneof(
  doneFrames,
  fc.constant(Buffer.from([0x59])),
  fc.tuple(fc.nat({ max: 0xffffffff }), fc.nat({ max: 200 })).map(([id, errno]) => {
    const b = Buffer.alloc(9);
    b.writeUInt8(0x46, 0);
    b.writeUInt32LE(id, 1);
    b.writeUInt32LE(errno, 5);
    return b;
  }),
);

/** Decoding must neither throw nor accept what is not a reply. */
function decodeSafely(frame: Buffer): Reply {
  let reply: Reply | undefined;
  expect(() => {
    reply = decodeReply(frame);
  }).not.toThrow();
  return reply as Reply;
}

describe("the native launcher's replies, decoded (native-link.ts)", () => {
  it("decodes what the launcher writes", () => {
    fc.assert(
      fc.property(done, (f) => {
        const reply = decodeSafely(doneFrame(f));
        expect(reply).toMatchObject({ kind: "done", id: f.id });
        if (reply.kind !== "done") return;
        expect(reply.outcome).toMatchObject({
          exitCode: f.flags & 1 ? null : f.code,
          timedOut: (f.flags & 2) !== 0,
          totalBytes: f.out.length + f.err.length + f.dropped,
          droppedBytes: f.dropped,
        });
        expect(reply.stages).toEqual(f.flags & 4 ? { spawn: 12.5, drain: 40 } : undefined);
      }),
    );
  });

  it("reports a truncated reply as an error, never reads past it", () => {
    fc.assert(
      fc.property(replies, fc.nat(), (frame, cut) => {
        const short = frame.subarray(0, cut % frame.length);
        expect(decodeSafely(short).kind).toBe("bad");
      }),
    );
  });

  it("reports a reply with bytes to spare, or inconsistent lengths, as an error", () => {
    fc.assert(
      fc.property(
        replies,
        fc.uint8Array({ minLength: 1, maxLength: 16 }),
        fc.nat({ max: 60 }),
        fc.nat({ max: 255 }),
        (frame, extra, at, value) => {
          expect(decodeSafely(Buffer.concat([frame, extra])).kind).toBe("bad");
          // One byte of a length field changed: the frame no longer adds up.
          if (frame[0] === 0x44 && frame.length > 50) {
            const changed = Buffer.from(frame);
            const field = [46, 47, 48, 49][at % 4] as number;
            changed[field] = value === changed[field] ? (value + 1) & 0xff : value;
            expect(decodeSafely(changed).kind).toBe("bad");
          }
        },
      ),
    );
  });

  it("never throws on random bytes, and says why it refused them", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        const reply = decodeSafely(Buffer.from(bytes));
        if (reply.kind === "bad") expect(reply.why).toMatch(/, in a frame of \d+ bytes$/);
      }),
      { numRuns: 2000 },
    );
  });

  it("splits a stream cut anywhere into the same frames, and refuses a length beyond any reply", () => {
    fc.assert(
      fc.property(
        fc.array(replies, { maxLength: 8 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        (frames, cuts) => {
          const stream = Buffer.concat(frames.map(framed));
          const positions = [...new Set(cuts.map((c) => c % (stream.length + 1)))].sort((a, b) => a - b);
          const split = replyFrames();
          const got: Buffer[] = [];
          let from = 0;
          for (const to of [...positions, stream.length]) {
            const result = split(stream.subarray(from, to));
            expect(result.error).toBeUndefined();
            got.push(...result.frames);
            from = to;
          }
          expect(got.map((b) => b.toString("hex"))).toEqual(frames.map((b) => b.toString("hex")));
        },
      ),
    );
    const split = replyFrames();
    const head = Buffer.alloc(4);
    head.writeUInt32LE(MAX_REPLY_BYTES + 1, 0);
    expect(split(Buffer.concat([framed(Buffer.from([0x59])), head.subarray(0, 2)]))).toEqual({
      frames: [Buffer.from([0x59])],
    });
    expect(split(head.subarray(2)).error).toMatch(/more than any reply/);
  });
});

describe("the run frame the server writes (native-link.ts)", () => {
  const plan: SpawnPlan = {
    file: "/bin/sh",
    args: ["-c", "true"],
    argv0: "/bin/sh",
    cwd: undefined,
    stdin: Buffer.from("in"),
    programName: "/bin/sh",
  };
  const { sh } = shellRequests({ PATH: "/bin" });
  /** The fixed fields of an 'R' frame, as native/frames.c reads them, and how long the frame says it is. */
  const fields = (frame: Buffer) => ({
    length: frame.readUInt32LE(0),
    kind: String.fromCharCode(frame.readUInt8(4)),
    id: frame.readUInt32LE(5),
    flags: frame.readUInt8(9),
    timings: [10, 18, 26, 34].map((at) => Number(frame.readBigUInt64LE(at))),
    budget: Number(frame.readBigUInt64LE(42)),
  });

  it("carries every timing of the command, the limits' own where the request names none", () => {
    const { killGraceMs: _, ...request } = sh("true", { timeoutMs: 1500, maxBufferBytes: 4096 });
    const frame = encodeRun(9, plan, request, true);
    expect(fields(frame)).toEqual({
      length: frame.length - 4,
      kind: "R",
      id: 9,
      flags: 3,
      timings: [1500, KILL_GRACE_MS, PIPE_GRACE_MS, REAP_WAIT_MS],
      budget: 4096,
    });
    const told = encodeRun(9, plan, sh("true", { killGraceMs: 250, pipeGraceMs: 750 }), false);
    expect(fields(told).timings).toEqual([10_000, 250, 750, REAP_WAIT_MS]);
  });

  it("reads an unbounded timing as the longest a timer honours, as the in-process runner does", () => {
    const frame = encodeRun(
      1,
      plan,
      sh("true", { timeoutMs: Number.POSITIVE_INFINITY, pipeGraceMs: -5 }),
      false,
    );
    expect(fields(frame).timings).toEqual([MAX_TIMER_MS, 200, 0, REAP_WAIT_MS]);
    const odd = encodeRun(1, plan, sh("true", { timeoutMs: Number.NaN, killGraceMs: 2 ** 40 }), false);
    expect(fields(odd).timings).toEqual([0, MAX_TIMER_MS, PIPE_GRACE_MS, REAP_WAIT_MS]);
  });
});

/**
 * A stand-in launcher that says it is ready, waits for a request and answers with one frame given
 * in hex, then waits to be ended. Each start is counted in a file.
 */
function fakeLauncher(dir: string, replyHex: string): string {
  const path = join(dir, `fake-${replyHex.slice(0, 16)}`);
  const escaped = (replyHex.match(/../g) ?? [])
    .map((h) => `\\${Number.parseInt(h, 16).toString(8)}`)
    .join("");
  writeFileSync(
    path,
    `#!/bin/sh
echo start >> '${dir}/starts'
printf '\\001\\000\\000\\000Y'
/bin/dd bs=1 count=1 2>/dev/null >/dev/null
printf '${escaped}'
exec /bin/cat >/dev/null
`,
  );
  chmodSync(path, 0o755);
  return path;
}

describe("a malformed reply from the native launcher", () => {
  const dir = mkdtempSync(join(tmpdir(), "relay-link-"));
  const { sh } = shellRequests(buildEnv(process.env, ""));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const runnerOf = runnerWithLauncher;

  it.each([
    ["a done reply cut short", "0500000044" + "01000000", /done reply with too few bytes/],
    ["a failed reply cut short", "0300000046" + "0100", /failed reply of the wrong length/],
    ["an empty reply", "00000000", /an empty reply/],
    ["a reply of unknown kind", "020000005a00", /unknown kind 90/],
    ["a length beyond any reply", "ffffffff", /more than any reply/],
  ])(
    "fails the calls in flight with an error naming %s, and the next call starts another launcher",
    async (_, hex, why) => {
      rmSync(join(dir, "starts"), { force: true });
      const runner = runnerOf(fakeLauncher(dir, hex));
      try {
        const err = await rejection(runner.run(sh("true")));
        expect(err.type).toBe("OSError");
        expect(err.message).toMatch(/^process launcher sent a malformed reply \(/);
        expect(err.message).toMatch(why);
        await rejection(runner.run(sh("true")));
        expect(readFileSync(join(dir, "starts"), "utf8")).toBe("start\nstart\n");
        expect(runner.active()).toBe(0);
      } finally {
        runner.close();
      }
    },
  );
});
