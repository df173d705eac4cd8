import { deserialize, serialize } from "node:v8";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ERROR_TYPES, RelayError } from "../core/index.js";
import {
  decodeFromLauncher,
  decodeToLauncher,
  type FromLauncher,
  type ToLauncher,
  toWireError,
  toWireRequest,
} from "./launcher-protocol.js";

/**
 * The decoders of the Node launcher's IPC messages, fed what structured clone can carry: the
 * messages themselves, each cut short by a field, with a field over its bound, with a field
 * replaced by anything, and anything at all. Whatever comes, the answer is a message or a "bad"
 * one that says what is wrong, and nothing is thrown.
 */

/** What the IPC channel does to a message with serialization "advanced". */
const hop = (value: unknown): unknown => deserialize(serialize(value));

/** Anything structured clone carries: Maps, Sets, Dates, typed arrays, bigints, sparse arrays, null prototypes. */
const anything = fc.anything({
  withBigInt: true,
  withDate: true,
  withMap: true,
  withSet: true,
  withTypedArray: true,
  withSparseArray: true,
  withNullPrototype: true,
  withBoxedValues: true,
  maxDepth: 4,
});

const id = fc.integer({ min: 1, max: 2 ** 31 });
const outcome = fc
  .record({
    exitCode: fc.option(fc.integer({ min: -127, max: 255 })),
    timedOut: fc.boolean(),
    output: fc.string({ unit: "binary", maxLength: 64 }),
    dropped: fc.nat({ max: 1 << 20 }),
    extra: fc.nat({ max: 1 << 20 }),
    durationMs: fc.double({ min: 0, max: 1e7, noNaN: true }),
    stopped: fc.nat({ max: 5 }),
  })
  .map(({ output, dropped, extra, stopped, ...rest }) => ({
    ...rest,
    output,
    totalBytes: Buffer.byteLength(output) + dropped + extra,
    droppedBytes: dropped,
    ...(stopped > 0 ? { stoppedProcesses: stopped } : {}),
  }));

const fromLauncher: fc.Arbitrary<FromLauncher> = fc.oneof(
  fc.constant({ kind: "ready" as const }),
  fc.record({ kind: fc.constant("done" as const), id, outcome }),
  fc.record({
    kind: fc.constant("done" as const),
    id,
    outcome,
    stages: fc.constant({ plan: 12.5, spawn: 80, drain: 3.25 }),
  }),
  fc
    .record({
      id,
      type: fc.constantFrom(...ERROR_TYPES),
      message: fc.string(),
      relay: fc.boolean(),
    })
    .map(({ id, type, message, relay }) => {
      const cause = Object.assign(new Error("inner"), { code: "ENOENT" });
      const err = relay ? new RelayError(type, message, { cause }) : new TypeError(message);
      return { kind: "failed" as const, id, error: toWireError(err) };
    }),
  fc.record({ kind: fc.constant("broken" as const), why: fc.string({ maxLength: 200 }) }),
);

const request = fc.record(
  {
    command: fc.string(),
    argv: fc.array(fc.string(), { maxLength: 5 }),
    cwd: fc.string({ maxLength: 20 }),
    env: fc.dictionary(fc.string({ maxLength: 10 }), fc.string({ maxLength: 10 }), { maxKeys: 5 }),
    stdin: fc.string({ unit: "binary", maxLength: 64 }),
    timeoutMs: fc.oneof(fc.nat(), fc.constant(Number.POSITIVE_INFINITY)),
    maxBufferBytes: fc.nat(),
    mergeStderr: fc.boolean(),
    killGraceMs: fc.nat(),
    pipeGraceMs: fc.nat(),
  },
  { requiredKeys: ["env", "timeoutMs", "maxBufferBytes", "mergeStderr"] },
);

const toLauncher: fc.Arbitrary<ToLauncher> = fc.oneof(
  fc
    .record({ id, request, aborted: fc.boolean(), trace: fc.boolean() })
    .map(({ id, request, aborted, trace }) => ({
      kind: "run" as const,
      id,
      request: toWireRequest(request),
      aborted,
      ...(trace ? { trace: true as const } : {}),
    })),
  fc.record({ kind: fc.constant("abort" as const), id }),
  fc.constant({ kind: "killAll" as const }),
  fc.constant({ kind: "close" as const }),
);

/** Every path to a field of a plain object, nested ones included. */
function paths(value: unknown, prefix: string[] = []): string[][] {
  if (typeof value !== "object" || value === null || Buffer.isBuffer(value) || Array.isArray(value))
    return [];
  return Object.keys(value).flatMap((key) => [
    [...prefix, key],
    ...paths((value as Record<string, unknown>)[key], [...prefix, key]),
  ]);
}

/** A deep copy of `value` with the field at `path` deleted, or set to `replacement`. */
function edited(value: unknown, path: string[], replacement?: { to: unknown }): unknown {
  const copy = hop(value) as Record<string, unknown>;
  let at = copy;
  for (const key of path.slice(0, -1)) at = at[key] as Record<string, unknown>;
  const last = path.at(-1) as string;
  if (replacement === undefined) delete at[last];
  else at[last] = replacement.to;
  return copy;
}

const DECODERS = [
  {
    name: "the server's decoder of the launcher's messages",
    decode: decodeFromLauncher,
    valid: fromLauncher,
  },
  { name: "the launcher's decoder of the server's messages", decode: decodeToLauncher, valid: toLauncher },
] as const;

/** A "bad" answer: why is one readable line. */
function expectBad(answer: { kind: string; why?: string }): void {
  expect(answer.kind).toBe("bad");
  expect(answer.why).toMatch(/^\S.{4,}/);
  expect(answer.why?.length).toBeLessThan(300);
  expect(answer.why).not.toContain("\n");
}

describe.each(DECODERS)("$name", ({ decode, valid }) => {
  it("gives every message back as it was sent", () => {
    fc.assert(
      fc.property(valid, (message) => {
        expect(decode(hop(message))).toEqual(message);
      }),
    );
  });

  it("names what is missing when any one field is cut", () => {
    fc.assert(
      fc.property(
        valid.chain((m) => fc.tuple(fc.constant(m), fc.constantFrom(...[["kind"], ...paths(m)]))),
        ([message, path]) => {
          const cut = edited(message, path);
          const answer = decode(hop(cut));
          // An optional field may go, and then the message is what was sent; any other is named.
          if (answer.kind === "bad") expectBad(answer);
          else expect(answer).toEqual(cut);
        },
      ),
    );
    // The fields every message of a kind needs, cut one by one.
    expectBad(decode(hop({ kind: "done", outcome: {} })));
    expectBad(decode(hop({ id: 1 })));
  });

  it("refuses a field replaced by anything of another type, never throwing", () => {
    fc.assert(
      fc.property(
        valid.chain((m) => fc.tuple(fc.constant(m), fc.constantFrom(...[["kind"], ...paths(m)]), anything)),
        ([message, path, junk]) => {
          const answer = decode(hop(edited(message, path, { to: junk })));
          if (answer.kind === "bad") expectBad(answer);
          // What decodes is a message again: decoding it once more gives it back unchanged.
          else expect(decode(hop(answer))).toEqual(answer);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("answers anything at all without throwing", () => {
    fc.assert(
      fc.property(anything, (junk) => {
        const answer = decode(junk);
        if (answer.kind === "bad") expectBad(answer);
        else expect(decode(hop(answer))).toEqual(answer);
      }),
      { numRuns: 1000 },
    );
  });

  it("refuses a field the protocol does not name, and an unknown kind", () => {
    fc.assert(
      fc.property(valid, fc.string({ minLength: 1 }), anything, (message, key, junk) => {
        fc.pre(!(key in message) && key !== "__proto__");
        expectBad(decode(hop({ ...message, [key]: junk })));
      }),
    );
    expect(decode({ kind: "x".repeat(1e6) })).toEqual({
      kind: "bad",
      why: `a message of unknown kind "${"x".repeat(64)}"`,
    });
  });
});

describe("bounds on what the launcher sends", () => {
  const done = {
    kind: "done",
    id: 7,
    outcome: { exitCode: 0, timedOut: false, output: "ok\n", totalBytes: 3, droppedBytes: 0, durationMs: 1 },
  };

  it("refuses ids, exit codes and counts out of range", () => {
    for (const bad of [0, -1, 1.5, 2 ** 53, Number.NaN, Number.POSITIVE_INFINITY, "7", 7n])
      expect(decodeFromLauncher({ ...done, id: bad })).toMatchObject({
        kind: "bad",
        why: "done.id must be a whole number of at least 1",
      });
    for (const bad of [256, -128, 0.5, "0"])
      expect(decodeFromLauncher(edited(done, ["outcome", "exitCode"], { to: bad }))).toMatchObject({
        why: "done.outcome.exitCode must be null or a whole number from -127 to 255",
      });
    expect(decodeFromLauncher(edited(done, ["outcome", "droppedBytes"], { to: 4 }))).toMatchObject({
      kind: "bad",
    });
    expect(decodeFromLauncher(edited(done, ["outcome", "totalBytes"], { to: -1 }))).toMatchObject({
      why: "done.outcome.totalBytes must be a whole number of at least 0",
    });
  });

  it("refuses more output than the bytes it says it kept, and oversized errors and stages", () => {
    expect(decodeFromLauncher(edited(done, ["outcome", "output"], { to: "ok\nmore" }))).toEqual({
      kind: "bad",
      why: "done.outcome keeps 7 characters of 3 bytes kept",
    });
    const failed = { kind: "failed", id: 1, error: toWireError(new RelayError("OSError", "x")) };
    expect(
      decodeFromLauncher(edited(failed, ["error", "message"], { to: "m".repeat(64 * 1024 + 1) })),
    ).toEqual({
      kind: "bad",
      why: "failed.error.message is over 65536 characters",
    });
    expect(decodeFromLauncher(edited(failed, ["error", "type"], { to: "t".repeat(257) }))).toMatchObject({
      why: "failed.error.type is over 256 characters",
    });
    // A relay error names a token of the closed list; a plain error keeps its own name.
    expect(decodeFromLauncher(edited(failed, ["error", "type"], { to: "ValueErorr" }))).toEqual({
      kind: "bad",
      why: "failed.error.type is not an error token of the relay",
    });
    const foreign = { kind: "failed", id: 1, error: toWireError(new TypeError("x")) };
    expect(decodeFromLauncher(foreign)).toMatchObject({
      kind: "failed",
      error: { relay: false, type: "TypeError" },
    });
    const stages = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`s${"a".repeat(i)}`, 1]));
    expect(decodeFromLauncher({ ...done, stages })).toMatchObject({ why: "done.stages has over 16 stages" });
    for (const odd of [JSON.parse('{"__proto__":1}'), { Plan: 1 }, { plan: Number.NaN }, { plan: "1" }])
      expect(decodeFromLauncher(hop({ ...done, stages: odd }))).toMatchObject({ kind: "bad" });
  });

  it("reads no getter and no Map, Date or class instance as a message", () => {
    let read = false;
    const getter = Object.defineProperty({ kind: "ready" }, "id", {
      get: () => {
        read = true;
        return 1;
      },
      enumerable: true,
    });
    expect(decodeFromLauncher(getter)).toMatchObject({ kind: "bad" });
    expect(read).toBe(false);
    for (const odd of [
      new Map([["kind", "ready"]]),
      new Date(),
      new (class {
        kind = "ready";
      })(),
      ["ready"],
    ])
      expect(decodeFromLauncher(odd)).toMatchObject({ kind: "bad" });
  });
});

describe("requests as the launcher reads them", () => {
  const run = (request: unknown) => ({ kind: "run", id: 1, aborted: false, request });
  const base = { env: { PATH: "/bin" }, timeoutMs: 1000, maxBufferBytes: 10, mergeStderr: true };

  it("keeps a variable named like an Object.prototype member a variable, on a null prototype", () => {
    const env = JSON.parse('{"__proto__":"x","constructor":"y"}') as Record<string, string>;
    const answer = decodeToLauncher(hop(run({ ...base, env })));
    expect(answer.kind).toBe("run");
    const decoded = (answer as Extract<ToLauncher, { kind: "run" }>).request.env;
    expect(Object.getPrototypeOf(decoded)).toBeNull();
    expect(Object.keys(decoded)).toEqual(["__proto__", "constructor"]);
  });

  it("refuses holes and text that is not text in argv, and stdin that is not bytes", () => {
    const holey: string[] = new Array(3);
    holey[0] = "a";
    holey[2] = "c";
    expect(decodeToLauncher(hop(run({ ...base, argv: holey })))).toEqual({
      kind: "bad",
      why: "run.request.argv[1] must be text",
    });
    expect(decodeToLauncher(hop(run({ ...base, stdin: "text" })))).toMatchObject({
      why: "run.request.stdin must be bytes",
    });
    expect(decodeToLauncher(hop(run({ ...base, timeoutMs: Number.NaN })))).toMatchObject({
      why: "run.request.timeoutMs must be a number of at least 0",
    });
    expect(decodeToLauncher(hop(run({ ...base, env: { A: 1 } })))).toMatchObject({
      why: "run.request.env must map names to text",
    });
    expect(decodeToLauncher(hop({ ...run(base), trace: false }))).toMatchObject({
      why: "run.trace must be true or absent",
    });
  });
});
