import { chmodSync, linkSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { RelayError } from "../core/index.js";
import { requestInfra } from "./client.js";
import type { InfraResponse } from "./protocol.js";

const dir = mkdtempSync(join(tmpdir(), "infra-client-"));
let servers: Server[] = [];
let sockets = 0;
/** Connections the line servers accepted: kept ones would hold a server's close until they idle out. */
const accepted = new Set<Socket>();

afterEach(async () => {
  for (const socket of accepted) socket.destroy();
  accepted.clear();
  await Promise.all(servers.map((s) => new Promise((done) => s.close(done))));
  servers = [];
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A real Unix-socket server that hands each connection and its received text to `onLine`. */
async function serve(onLine: (line: string, socket: Socket) => void): Promise<string> {
  const path = join(dir, `s${++sockets}.sock`);
  const server = createServer((socket) => {
    let text = "";
    socket.on("data", (chunk) => {
      text += chunk.toString("utf8");
      const end = text.indexOf("\n");
      if (end !== -1) onLine(text.slice(0, end), socket);
    });
    socket.on("error", () => undefined);
  });
  await new Promise<void>((done) => server.listen(path, done));
  servers.push(server);
  return path;
}

/** A Unix-socket server that reads requests line by line on every connection. */
async function serveLines(
  onLine: (line: string, socket: Socket) => void,
  onConnection: () => void,
): Promise<string> {
  const path = join(dir, `s${++sockets}.sock`);
  const server = createServer((socket) => {
    accepted.add(socket);
    onConnection();
    let text = "";
    socket.on("data", (chunk) => {
      text += chunk.toString("utf8");
      for (let end = text.indexOf("\n"); end !== -1; end = text.indexOf("\n")) {
        const line = text.slice(0, end);
        text = text.slice(end + 1);
        onLine(line, socket);
      }
    });
    socket.on("error", () => undefined);
  });
  await new Promise<void>((done) => server.listen(path, done));
  servers.push(server);
  return path;
}

function answer(over: Partial<InfraResponse> = {}): InfraResponse {
  return {
    v: 1,
    receipt_id: "rcpt-1",
    op: "status",
    profile: null,
    run_id: null,
    outcome: "ok",
    code: "OK",
    message: "the broker is up",
    ...over,
  };
}

async function failureOf(promise: Promise<unknown>): Promise<RelayError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RelayError);
  return err as RelayError;
}

const opts = (socketPath: string, timeoutMs = 2000) => ({ socketPath, timeoutMs });

describe("requestInfra", () => {
  it("writes one versioned request line and returns the parsed answer", async () => {
    let seen = "";
    const path = await serve((line, socket) => {
      seen = line;
      // The answer arrives in pieces, with the line end in the last one.
      const text = JSON.stringify(answer({ op: "verify", profile: "web", run_id: "r1" }));
      socket.write(text.slice(0, 10));
      setTimeout(() => socket.end(`${text.slice(10)}\n`), 20);
    });
    const got = await requestInfra({ op: "verify", profile: "web", run_id: "r1" }, opts(path));
    expect(JSON.parse(seen)).toEqual({ v: 1, op: "verify", profile: "web", run_id: "r1" });
    expect(got).toEqual({
      kind: "answered",
      response: answer({ op: "verify", profile: "web", run_id: "r1" }),
    });
  });

  it("keeps a connection that answered cleanly for the next request, and closes one that did not", async () => {
    let connections = 0;
    const lines: string[] = [];
    const path = await serveLines(
      (line, socket) => {
        lines.push(line);
        const { op } = JSON.parse(line) as { op: string };
        // A verify is answered with a stray second line: that connection cannot be trusted again.
        const extra = op === "verify" ? `${JSON.stringify(answer())}\n` : "";
        socket.write(`${JSON.stringify(answer({ op: op as InfraResponse["op"] }))}\n${extra}`);
      },
      () => connections++,
    );
    for (let i = 0; i < 3; i++) await requestInfra({ op: "status" }, opts(path));
    expect(connections).toBe(1);
    expect(lines).toHaveLength(3);
    await requestInfra({ op: "verify", profile: "web", run_id: "r1" }, opts(path));
    await requestInfra({ op: "status" }, opts(path));
    expect(connections).toBe(2);
  });

  it("sends again on a new connection when the broker closes a kept one unanswered, except a replicate", async () => {
    let connections = 0;
    const path = await serveLines(
      (line, socket) => {
        const count = ((socket as Socket & { answered?: number }).answered ?? 0) + 1;
        (socket as Socket & { answered?: number }).answered = count;
        // Every connection answers its first request and drops the second unanswered.
        if (count > 1) socket.destroy();
        else
          socket.write(
            `${JSON.stringify(answer({ op: (JSON.parse(line) as { op: InfraResponse["op"] }).op }))}\n`,
          );
      },
      () => connections++,
    );
    await requestInfra({ op: "status" }, opts(path));
    expect((await requestInfra({ op: "status" }, opts(path))).kind).toBe("answered");
    expect(connections).toBe(2);
    const err = await failureOf(requestInfra({ op: "replicate" }, opts(path)));
    expect(err.code).toBe("INFRA_NO_RESPONSE");
    expect(err.message).toContain("the request had been sent");
    expect(connections).toBe(2);
  });

  it("reports a missing socket, a dead one and a path through a file as unreachable, not as an error", async () => {
    expect(await requestInfra({ op: "status" }, opts(join(dir, "none.sock")))).toEqual({
      kind: "unreachable",
      reason: "ENOENT",
      socketPath: join(dir, "none.sock"),
    });
    const file = join(dir, "plain-file");
    writeFileSync(file, "");
    expect(await requestInfra({ op: "status" }, opts(file))).toMatchObject({ reason: "ECONNREFUSED" });
    expect(await requestInfra({ op: "status" }, opts(join(file, "x.sock")))).toMatchObject({
      reason: "ENOTDIR",
    });
    // A socket file left behind by a broker that stopped (a second name for it survives the close).
    const live = await serve(() => undefined);
    const stale = join(dir, "stale.sock");
    linkSync(live, stale);
    await new Promise((done) => servers.pop()?.close(done));
    expect(await requestInfra({ op: "status" }, opts(stale))).toMatchObject({ reason: "ECONNREFUSED" });
  });

  it.skipIf(process.geteuid?.() === 0)(
    "reports a socket it may not open as unreachable (EACCES)",
    async () => {
      const path = await serve(() => undefined);
      chmodSync(path, 0o000);
      expect(await requestInfra({ op: "status" }, opts(path))).toMatchObject({ reason: "EACCES" });
    },
  );

  it("throws a typed error for a line that is not a response, and for an answer to another request", async () => {
    const garbage = await serve((_line, socket) => socket.end('{"hello": "world"}\n'));
    const bad = await failureOf(requestInfra({ op: "status" }, opts(garbage)));
    expect([bad.type, bad.code]).toEqual(["InfraProtocolError", "INFRA_BAD_RESPONSE"]);
    expect(bad.message).toContain(garbage);

    const notJson = await serve((_line, socket) => socket.end("Traceback (most recent call last)\n"));
    expect((await failureOf(requestInfra({ op: "status" }, opts(notJson)))).code).toBe("INFRA_BAD_RESPONSE");

    const other = await serve((_line, socket) =>
      socket.end(`${JSON.stringify(answer({ op: "probe", profile: "db" }))}\n`),
    );
    const crossed = await failureOf(requestInfra({ op: "probe", profile: "web" }, opts(other)));
    expect(crossed.message).toContain('about profile "db" to a request for "web"');
  });

  it("bounds the response line and stops reading past the bound", async () => {
    const flood = await serve((_line, socket) => {
      socket.write("x".repeat(64 * 1024));
      socket.write("x".repeat(64 * 1024));
    });
    const err = await failureOf(
      requestInfra({ op: "status" }, { socketPath: flood, timeoutMs: 2000, maxResponseBytes: 100_000 }),
    );
    expect([err.type, err.code]).toEqual(["InfraProtocolError", "INFRA_RESPONSE_TOO_LARGE"]);
  });

  it("times out a broker that never answers, and says the request was sent", async () => {
    const silent = await serve(() => undefined);
    const start = Date.now();
    const err = await failureOf(requestInfra({ op: "status" }, opts(silent, 200)));
    expect([err.type, err.code]).toEqual(["TimeoutError", "INFRA_TIMEOUT"]);
    expect(err.message).toBe(`no answer from the broker at ${silent} within 0.2s; the request had been sent`);
    expect(Date.now() - start).toBeLessThan(1500);
  });

  it("reports a connection closed before a full line", async () => {
    const hangup = await serve((_line, socket) => socket.end('{"v":1,"receipt_id":'));
    const err = await failureOf(requestInfra({ op: "replicate" }, opts(hangup)));
    expect(err.code).toBe("INFRA_NO_RESPONSE");
    expect(err.message).toContain("closed the connection without a complete answer");
  });

  it("stops waiting when the call is cancelled", async () => {
    const silent = await serve(() => undefined);
    const controller = new AbortController();
    const pending = requestInfra({ op: "status" }, { ...opts(silent), signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    expect((await failureOf(pending)).code).toBe("INFRA_ABORTED");
    expect(
      (await failureOf(requestInfra({ op: "status" }, { ...opts(silent), signal: controller.signal }))).code,
    ).toBe("INFRA_ABORTED");
  });

  it("never sends a request outside the protocol's schema", async () => {
    let connections = 0;
    const path = await serve(() => connections++);
    const err = await failureOf(requestInfra({ op: "probe", profile: "../etc" } as never, opts(path)));
    expect([err.code, err.message]).toEqual(["INFRA_BAD_REQUEST", "not a valid broker request (profile)"]);
    const smuggled = await failureOf(
      requestInfra({ op: "status", host: "evil.example" } as never, opts(path)),
    );
    expect(smuggled.code).toBe("INFRA_BAD_REQUEST");
    expect(connections).toBe(0);
  });
});
