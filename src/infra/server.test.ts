import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { verifyAuditChain } from "../audit/index.js";
import { cryptoIds, silentLogger, systemClock } from "../core/index.js";
import { MAX_FRAME_BYTES, parseResponse } from "../infra-protocol/index.js";
import { type AdmissionConfig, createAdmission } from "./admission.js";
import type { Dispatcher } from "./dispatch.js";
import { createReceipts, type Receipts } from "./receipts.js";
import { readFrame } from "./request-read.js";
import { createInfraServer, type InfraServer } from "./server.js";
import type { Principal } from "./types.js";

const PEER: Principal = { uid: 1000, gid: 1000, pid: 7, groups: [] };

/** A budget no test here reaches, except the ones about budgets. */
const GENEROUS: AdmissionConfig = {
  knownFrames: { perSecond: 1e6, burst: 1e6 },
  strangerFrames: { perSecond: 1e6, burst: 1e6 },
  strangersTogether: { perSecond: 1e6, burst: 1e6 },
  refusalReceipts: { perSecond: 1e6, burst: 1e6 },
};

describe("readFrame", () => {
  it("takes identity claims out before validation and keeps them, bounded, for the receipt", () => {
    const reading = readFrame({
      kind: "line",
      text: JSON.stringify({
        op: "status",
        uid: 0,
        user: "root",
        principal: { uid: 0 },
        pid: "x".repeat(1000),
      }),
    });
    expect(reading.refusal).toBeNull();
    expect(reading.request).toEqual({ op: "status" });
    expect(reading.claims?.uid).toBe(0);
    expect(reading.claims?.user).toBe("root");
    expect(reading.claims?.principal).toBe('{"uid":0}');
    expect(String(reading.claims?.pid).length).toBeLessThan(400);
  });

  it.each([
    [{ kind: "too-large" } as const, "FRAME_TOO_LARGE"],
    [{ kind: "not-utf8" } as const, "MALFORMED_JSON"],
    [{ kind: "line", text: "{nope" } as const, "MALFORMED_JSON"],
    [{ kind: "line", text: "[1,2]" } as const, "SCHEMA_VIOLATION"],
    [{ kind: "line", text: "null" } as const, "SCHEMA_VIOLATION"],
    [{ kind: "line", text: '"status"' } as const, "SCHEMA_VIOLATION"],
  ])("refuses %j with %s", (frame, code) => {
    expect(readFrame(frame).refusal?.code).toBe(code);
  });

  it("names the field a schema violation is about", () => {
    expect(readFrame({ kind: "line", text: '{"op":"status","profile":"../x"}' }).refusal?.message).toMatch(
      /^field "profile": /,
    );
    expect(readFrame({ kind: "line", text: '{"op":"shell"}' }).refusal?.message).toMatch(/^field "op": /);
    expect(readFrame({ kind: "line", text: '{"op":"probe","command":"id"}' }).refusal?.message).toContain(
      '"command"',
    );
    // A claim does not turn an otherwise broken request into a valid one, and is still kept.
    const both = readFrame({ kind: "line", text: '{"op":"probe","uid":0,"path":"/etc"}' });
    expect(both.refusal?.code).toBe("SCHEMA_VIOLATION");
    expect(both.claims).toEqual({ uid: 0 });
  });

  it("does not let __proto__ through as a field", () => {
    expect(
      readFrame({ kind: "line", text: '{"op":"status","__proto__":{"profile":"x"}}' }).refusal?.code,
    ).toBe("SCHEMA_VIOLATION");
  });
});

describe("readFrame's approval", () => {
  const approval = {
    request: "c-1f2e",
    nonce: "9f".repeat(16),
    payload: '{"v":1}',
    signature: "-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n",
    signer: "operator@example.org",
  };
  const read = (value: unknown) =>
    readFrame({
      kind: "line",
      text: JSON.stringify({
        op: "replicate",
        profile: "p",
        run_id: "r",
        idempotency_key: "key-0001",
        approval: value,
      }),
    });

  it("takes the five fields of a consented capability", () => {
    expect(read(approval).request?.approval).toEqual(approval);
  });

  it.each([
    ["an opaque string", "sig:abc", /^field "approval": /],
    ["a missing field", { ...approval, signer: undefined }, /^field "approval\.signer": /],
    [
      "an extra field",
      { ...approval, principal_uid: 0 },
      /^unknown field\(s\) "principal_uid" in approval: an approval names only request, nonce, payload, signature and signer$/,
    ],
    ["a payload over 8 KiB", { ...approval, payload: "x".repeat(8193) }, /^field "approval\.payload": /],
    [
      "a control character in the payload",
      { ...approval, payload: "{\u0007}" },
      /^field "approval\.payload": /,
    ],
    [
      "a signature over 8 KiB",
      { ...approval, signature: "A".repeat(8193) },
      /^field "approval\.signature": /,
    ],
    ["a tab in the signature", { ...approval, signature: "A\tB" }, /^field "approval\.signature": /],
    ["a signer with a space", { ...approval, signer: "a b" }, /^field "approval\.signer": /],
    ["a long request id", { ...approval, request: "r".repeat(129) }, /^field "approval\.request": /],
  ])("refuses %s as a schema violation naming the field", (_what, value, message) => {
    const reading = read(value);
    expect(reading.refusal?.code).toBe("SCHEMA_VIOLATION");
    expect(reading.refusal?.message).toMatch(message);
  });
});

describe("createInfraServer", () => {
  let dir = "";
  let server: InfraServer | null = null;
  let receipts: Receipts | null = null;

  afterEach(async () => {
    await server?.close();
    receipts?.close();
    server = null;
    receipts = null;
    rmSync(dir, { recursive: true, force: true });
  });

  async function start(options: {
    dispatcher?: Dispatcher;
    identify?: () => Principal | null;
    maxConnections?: number;
    maxPerUid?: number;
    idleMs?: number;
    admission?: AdmissionConfig;
    isKnown?: (p: Principal) => boolean;
    maxReceiptsPerConnection?: number;
    summaryWindowMs?: number;
  }): Promise<string> {
    dir = mkdtempSync(join(tmpdir(), "relay-infra-server-"));
    receipts = createReceipts(dir, { clock: systemClock, ids: cryptoIds, stderr: () => undefined });
    server = createInfraServer({
      dispatcher: options.dispatcher ?? {
        dispatch: async (_p, r) => ({ code: "OK", message: `${r.op} ${r.run_id ?? ""}`.trim() }),
      },
      receipts,
      logger: silentLogger,
      identify: options.identify ?? (() => PEER),
      maxConnections: options.maxConnections ?? 8,
      maxPerUid: options.maxPerUid ?? 8,
      idleMs: options.idleMs ?? 10_000,
      admission: createAdmission({ clock: systemClock }, options.admission ?? GENEROUS),
      isKnown: options.isKnown ?? (() => true),
      maxReceiptsPerConnection: options.maxReceiptsPerConnection ?? 10_000,
      summaryWindowMs: options.summaryWindowMs ?? 60_000,
    });
    const path = join(dir, "s.sock");
    await server.listen(path);
    return path;
  }

  /** Write `payload`, optionally half-close, and collect lines until the server closes or `count` arrive. */
  function exchange(
    path: string,
    payload: string | Buffer,
    count: number,
    halfClose = false,
  ): Promise<string[]> {
    return new Promise((resolve, reject) => {
      const socket: Socket = connect(path);
      const lines: string[] = [];
      let rest = "";
      socket.on("error", reject);
      socket.on("connect", () => {
        socket.write(payload);
        if (halfClose) socket.end();
      });
      socket.on("data", (data) => {
        rest += data.toString("utf8");
        for (let at = rest.indexOf("\n"); at >= 0; at = rest.indexOf("\n")) {
          lines.push(rest.slice(0, at));
          rest = rest.slice(at + 1);
        }
        if (lines.length >= count) socket.destroy();
        if (lines.length >= count) resolve(lines);
      });
      socket.on("close", () => resolve(lines));
    });
  }

  it("answers pipelined requests in order on one connection, each with its own receipt", async () => {
    const path = await start({});
    const payload = ["status", "probe", "verify"].map((op) => `{"op":"${op}","run_id":"r${op.length}"}\n`);
    const lines = await exchange(path, payload.join(""), 3);
    const responses = lines.map((l) => parseResponse(l));
    expect(responses.map((r) => r?.message)).toEqual(["status r6", "probe r5", "verify r6"]);
    const ids = responses.map((r) => r?.receipt_id);
    const log = readFileSync(receipts?.path ?? "", "utf8");
    for (const id of ids) expect(log).toContain(`"request_id": "${id}"`);
    expect(verifyAuditChain(receipts?.path ?? "").ok).toBe(true);
  });

  it("answers a request whose sender half-closed right after it, and one without its newline", async () => {
    const path = await start({});
    const lines = await exchange(path, '{"op":"status"}\n{"op":"probe"}', 2, true);
    expect(lines.map((l) => parseResponse(l)?.message)).toEqual(["status", "probe"]);
  });

  it("skips an over-long line without holding it and keeps the connection", async () => {
    const path = await start({});
    const payload = Buffer.concat([
      Buffer.alloc(MAX_FRAME_BYTES + 1, 0x61),
      Buffer.from('\n{"op":"status"}\n'),
    ]);
    const lines = await exchange(path, payload, 2);
    expect(lines.map((l) => parseResponse(l)?.code)).toEqual(["FRAME_TOO_LARGE", "OK"]);
  });

  it("refuses a peer whose credentials cannot be read, with a typed answer and nothing read", async () => {
    let asked = false;
    const path = await start({
      identify: () => null,
      dispatcher: {
        dispatch: async () => {
          asked = true;
          return { code: "OK", message: "should not happen" };
        },
      },
    });
    const lines = await exchange(path, '{"op":"status"}\n', 5);
    expect(lines).toHaveLength(1);
    expect(parseResponse(lines[0] ?? "")?.code).toBe("PRINCIPAL_NOT_ALLOWED");
    expect(asked).toBe(false);
    const record = JSON.parse(readFileSync(receipts?.path ?? "", "utf8").trim()) as {
      tool: string;
      args: { principal: unknown };
    };
    expect(record.tool).toBe("infra.invalid");
    expect(record.args.principal).toBeNull();
  });

  it("closes a connection that sends no whole request in time, even one trickling bytes", async () => {
    const path = await start({ idleMs: 300 });
    const started = Date.now();
    const closed = await new Promise<number>((resolve) => {
      const socket = connect(path);
      const trickle = setInterval(() => socket.write("{"), 50);
      socket.on("close", () => {
        clearInterval(trickle);
        resolve(Date.now() - started);
      });
      socket.on("error", () => undefined);
    });
    expect(closed).toBeGreaterThanOrEqual(250);
    expect(closed).toBeLessThan(5000);
  });

  it("does not close a connection for idleness while its request is being worked on", async () => {
    const path = await start({
      idleMs: 100,
      dispatcher: {
        dispatch: () =>
          new Promise((resolve) => setTimeout(() => resolve({ code: "OK", message: "slow" }), 400)),
      },
    });
    const lines = await exchange(path, '{"op":"probe"}\n', 1);
    expect(parseResponse(lines[0] ?? "")?.message).toBe("slow");
  });

  it("closes connections beyond the bound as they arrive", async () => {
    const path = await start({ maxConnections: 1 });
    const first = connect(path);
    await new Promise((resolve) => first.once("connect", resolve));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const second = await exchange(path, '{"op":"status"}\n', 1).catch(() => []);
    expect(second).toEqual([]);
    first.destroy();
  });

  it("bounds the connections of one uid, leaving room for others", async () => {
    const uids = [5, 5, 6];
    const path = await start({ maxPerUid: 1, identify: () => ({ ...PEER, uid: uids.shift() ?? 0 }) });
    const first = connect(path);
    first.on("error", () => undefined);
    await new Promise((resolve) => first.once("connect", resolve));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await exchange(path, '{"op":"status"}\n', 1).catch(() => [])).toEqual([]);
    const third = await exchange(path, '{"op":"status"}\n', 1);
    expect(parseResponse(third[0] ?? "")?.code).toBe("OK");
    first.destroy();
  });

  it("closes a connection whose peer stops reading its answers", async () => {
    const big = { code: "OK" as const, message: "x", data: { pad: "y".repeat(256 * 1024) } };
    const path = await start({ idleMs: 300, dispatcher: { dispatch: async () => big } });
    const socket = connect(path);
    socket.on("error", () => undefined);
    socket.pause();
    socket.write('{"op":"status"}\n'.repeat(64));
    // Not reading for well past the bound; then read what is left and see the connection was dropped.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    let received = 0;
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString("utf8").split("\n").length - 1;
    });
    await new Promise<void>((resolve) => {
      socket.once("close", () => resolve());
      socket.resume();
    });
    expect(received).toBeLessThan(64);
  });

  it("answers INTERNAL_ERROR, with a receipt, for a result the protocol cannot carry", async () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const answers = [
      { code: "NOT_A_CODE", message: "x" },
      { code: "OK", message: 42 },
      { code: "OK", message: "x", data: cyclic },
    ];
    const path = await start({ dispatcher: { dispatch: async () => answers.shift() as never } });
    const lines = await exchange(path, '{"op":"probe"}\n'.repeat(3), 3);
    expect(lines.map((l) => parseResponse(l)?.code)).toEqual([
      "INTERNAL_ERROR",
      "INTERNAL_ERROR",
      "INTERNAL_ERROR",
    ]);
    expect(verifyAuditChain(receipts?.path ?? "").records).toBe(3);
  });

  it("waits for a request in progress when closing, so its receipt is written", async () => {
    let release: () => void = () => undefined;
    const path = await start({
      dispatcher: {
        dispatch: () =>
          new Promise((resolve) => {
            release = () => resolve({ code: "OK", message: "late" });
          }),
      },
    });
    const socket = connect(path);
    socket.on("error", () => undefined);
    socket.write('{"op":"probe"}\n');
    await new Promise((resolve) => setTimeout(resolve, 100));
    const closing = server?.close();
    server = null;
    setTimeout(() => release(), 100);
    await closing;
    expect(readFileSync(receipts?.path ?? "", "utf8")).toContain('"code": "OK"');
  });

  it("answers the request in progress before closing its connection, and runs nothing queued behind it", async () => {
    let release: () => void = () => undefined;
    let calls = 0;
    const path = await start({
      dispatcher: {
        dispatch: () =>
          new Promise((resolve) => {
            calls += 1;
            release = () => resolve({ code: "OK", message: "finished while stopping" });
          }),
      },
    });
    const socket = connect(path);
    socket.on("error", () => undefined);
    let received = "";
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString("utf8");
    });
    const ended = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    socket.write(
      '{"op":"replicate","profile":"p","run_id":"r","idempotency_key":"key-0001"}\n{"op":"probe"}\n',
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    const closing = server?.close();
    server = null;
    setTimeout(() => release(), 100);
    await closing;
    await ended;
    const lines = received.split("\n").filter((l) => l !== "");
    expect(lines).toHaveLength(1);
    expect(parseResponse(lines[0] ?? "")?.message).toBe("finished while stopping");
    expect(calls).toBe(1);
  });

  it("ends a connection once it caused its bound of receipts, after answering the last", async () => {
    const path = await start({ maxReceiptsPerConnection: 3 });
    const lines = await exchange(path, '{"op":"status"}\n'.repeat(10), 10);
    expect(lines).toHaveLength(3);
    expect(verifyAuditChain(receipts?.path ?? "").records).toBe(3);
  });

  it("counts a burst of refusals into one summary receipt, every answer naming it", async () => {
    const path = await start({
      admission: { ...GENEROUS, refusalReceipts: { perSecond: 0.001, burst: 2 } },
      summaryWindowMs: 60_000,
    });
    const lines = await exchange(path, "{}\n".repeat(500), 500, true);
    expect(lines).toHaveLength(500);
    const ids = lines.map((l) => parseResponse(l)?.receipt_id);
    expect(new Set(ids).size).toBe(3);
    // The summary is written when its window closes or the broker stops.
    await server?.close();
    server = null;
    const records = readFileSync(receipts?.path ?? "", "utf8")
      .trim()
      .split("\n")
      .map(
        (l) => JSON.parse(l) as { request_id: string; args: { burst?: { count: number; codes: unknown } } },
      );
    expect(records).toHaveLength(3);
    expect(records[2]?.request_id).toBe(ids[499]);
    expect(records[2]?.args.burst).toEqual({ count: 498, codes: { SCHEMA_VIOLATION: 498 } });
    expect(verifyAuditChain(receipts?.path ?? "").ok).toBe(true);
  });

  it("bounds what a flood from strangers costs, and answers the allowed principal meanwhile", async () => {
    const stranger: Principal = { uid: 2000, gid: 2000, pid: 9, groups: [] };
    const who: Principal[] = [stranger, stranger, stranger, stranger, PEER];
    const path = await start({
      maxPerUid: 8,
      identify: () => who.shift() ?? PEER,
      isKnown: (p) => p.uid === PEER.uid,
      admission: {
        knownFrames: { perSecond: 50, burst: 200 },
        strangerFrames: { perSecond: 10, burst: 20 },
        strangersTogether: { perSecond: 20, burst: 40 },
        refusalReceipts: { perSecond: 1, burst: 16 },
      },
      summaryWindowMs: 500,
    });
    const flood = Buffer.from("{}\n".repeat(20_000));
    const flooders: Socket[] = [];
    for (let i = 0; i < 4; i++) {
      const socket = connect(path);
      socket.on("error", () => undefined);
      socket.on("data", () => undefined);
      await new Promise((resolve) => socket.once("connect", resolve));
      flooders.push(socket);
    }
    const pour = setInterval(() => {
      for (const socket of flooders) if (socket.writableLength < 1 << 20) socket.write(flood);
    }, 20);
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      const waits: number[] = [];
      for (let i = 0; i < 5; i++) {
        const asked = performance.now();
        const [line] = await exchange(path, '{"op":"status"}\n', 1);
        waits.push(performance.now() - asked);
        expect(parseResponse(line ?? "")?.code).toBe("OK");
        who.push(PEER);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(Math.max(...waits)).toBeLessThan(250);
    } finally {
      clearInterval(pour);
      for (const socket of flooders) socket.destroy();
    }
    await server?.close();
    server = null;
    // Well over a second of flooding from four connections: a handful of receipts, not one per frame.
    const bytes = readFileSync(receipts?.path ?? "").length;
    expect(verifyAuditChain(receipts?.path ?? "").records).toBeLessThan(40);
    expect(bytes).toBeLessThan(64 * 1024);
  });
});
