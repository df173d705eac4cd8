import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { z } from "zod";
import {
  actDigest,
  type ConsentAct,
  type ConsentStore,
  memoryCounters,
  openSqliteStore,
} from "../consent/index.js";
import { cryptoIds, silentLogger } from "../core/index.js";
import { createConsoleApp } from "./app.js";
import {
  approvalBodySchema,
  approvalProblem,
  denialBodySchema,
  denialProblem,
  optionsBodySchema,
} from "./approvals-schema.js";
import { loadAssets } from "./assets.js";
import { decodeBody, problemText } from "./body.js";
import { type LoopbackListener, listenLoopback, nodeHandler } from "./listen.js";
import { createLoginStore } from "./logins.js";
import { authenticationResponseSchema } from "./webauthn-schema.js";

/**
 * The console over HTTP, fed bodies it cannot use on every route that takes a WebAuthn body (and
 * the denial beside them): random bytes, random JSON, a real body cut short, a real body with a
 * field replaced, and bodies over the limit. Each is answered 4xx with one clear line, never 500,
 * and the console answers well-formed requests as before afterwards.
 */

const HOST = "localhost:8765";
const ORIGIN = `http://${HOST}`;
const CREDENTIAL = "Y3JlZA";
const ACT: ConsentAct = { tool: "shell_exec", tier: 2, bound: { command: "touch /tmp/x", cwd: "/srv" } };
const ASSERTION = {
  id: CREDENTIAL,
  rawId: CREDENTIAL,
  type: "public-key",
  response: { authenticatorData: "YQ", clientDataJSON: "Yg", signature: "Yw", userHandle: "ZA" },
  clientExtensionResults: {},
};

let dir: string;
let store: ConsentStore;
let listener: LoopbackListener;
/** The monotonic clock the rate limits read: moved on so that every attempt is counted on its merits. */
let monotonic = 0;
const clock = { now: () => Date.UTC(2026, 11, 1), monotonic: () => monotonic };
let operator: Record<string, string>;
let requestId: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "console-bodies-"));
  const opened = openSqliteStore(join(dir, "consent.db"), { clock, ids: cryptoIds, busyTimeoutMs: 100 });
  if (!opened.ok) throw new Error(opened.error.detail);
  store = opened.value;
  const created = await store.createRequest({
    act: ACT,
    actDigest: actDigest(ACT),
    basis: "write: touch",
    session: "s1",
    clientId: "c1",
    ttlSeconds: 300,
  });
  if (!created.ok) throw new Error(created.error.detail);
  requestId = created.value.id;
  const logins = createLoginStore(3600, clock);
  const login = await logins.create("alice-laptop", CREDENTIAL);
  operator = { Cookie: `relay_console=${login.id}`, "X-CSRF-Token": login.login.csrf };
  const app = createConsoleApp({
    origin: ORIGIN,
    rpId: "localhost",
    sessionTtlSeconds: 3600,
    passkeys: {
      current: () => ({
        ok: true,
        value: [
          {
            name: "alice-laptop",
            credentialId: CREDENTIAL,
            publicKey: "pQ",
            algorithm: -7,
            transports: ["internal"],
            created: "",
          },
        ],
      }),
    },
    counters: memoryCounters(),
    logins,
    assets: loadAssets(),
    posture: () => Promise.reject(new Error("not asked")),
    auditPath: "/nonexistent/audit.jsonl",
    approvals: {
      store,
      verifier: {
        verify: () => ({ ok: false, error: "the signature does not verify with passkey alice-laptop" }),
      },
    },
    sessions: {
      overview: () => [],
      terminate: () => Promise.reject(new Error("none")),
      watch: () => {
        throw new Error("none");
      },
    },
    audit: { append: () => true, reserve: () => true },
    recordDir: "",
    clock,
    logger: silentLogger,
  });
  listener = await listenLoopback(nodeHandler(app), 0, silentLogger);
});

afterAll(async () => {
  await listener.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Answer {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

/** One request over a socket, as a browser would send it. */
function send(method: string, path: string, body: Buffer | string, headers: Record<string, string> = {}) {
  return new Promise<Answer>((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port: listener.port,
        method,
        path,
        setHost: false,
        headers: { Host: HOST, Origin: ORIGIN, "Content-Type": "application/json", ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString("utf8"),
            headers: res.headers,
          }),
        );
      },
    );
    req.once("error", reject);
    req.end(method === "GET" ? undefined : body);
  });
}

/** A refusal: 4xx with one line that says what is wrong. */
function expectRefusal(answer: Answer): string {
  expect(answer.status, answer.body).toBeGreaterThanOrEqual(400);
  expect(answer.status, answer.body).toBeLessThan(500);
  const error = (JSON.parse(answer.body) as { error: unknown }).error;
  expect(typeof error).toBe("string");
  expect(error).toMatch(/^\S.{5,}$/);
  return error as string;
}

/** The body as the console reads it: its JSON, or undefined when it is not JSON. */
function jsonOf(body: Buffer | string): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(Buffer.from(body)));
  } catch {
    return undefined;
  }
}

/**
 * What a route must answer a body: 413 over the limit, 400 with `notJson` when it is not JSON, 400
 * naming the field when the schema refuses it (so @simplewebauthn and the store never see it), or
 * something other than 400 once it is well formed.
 */
function expectJudged(
  answer: Answer,
  body: Buffer | string,
  schema: z.ZodType,
  notJson: string,
  words: (problem: { field: string; why: string }) => string,
): void {
  const error = expectRefusal(answer);
  if (Buffer.byteLength(body) > 64 * 1024) {
    expect(answer.status).toBe(413);
    return;
  }
  const json = jsonOf(body);
  const decoded = json === undefined ? undefined : decodeBody(schema, json);
  if (decoded === undefined) expect([answer.status, error]).toEqual([400, notJson]);
  else if (!decoded.ok) expect([answer.status, error]).toEqual([400, words(decoded.error)]);
  else expect(answer.status).not.toBe(400);
}

/** A real body cut short, with a field replaced, or over the limit; random bytes, text and JSON. */
function bodies(valid: object): fc.Arbitrary<Buffer | string> {
  const text = JSON.stringify(valid);
  const fields = (value: unknown, prefix: string[] = []): string[][] =>
    typeof value === "object" && value !== null
      ? Object.entries(value).flatMap(([k, v]) => [[...prefix, k], ...fields(v, [...prefix, k])])
      : [];
  const replaced = fc
    .tuple(
      fc.constantFrom(...fields(valid)),
      fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.string({ minLength: 5000, maxLength: 9000 })),
    )
    .map(([path, junk]) => {
      const copy = structuredClone(valid) as Record<string, unknown>;
      let at = copy;
      for (const key of path.slice(0, -1)) at = at[key] as Record<string, unknown>;
      at[path.at(-1) as string] = junk;
      return JSON.stringify(copy);
    });
  return fc.oneof(
    fc.nat({ max: text.length - 1 }).map((cut) => text.slice(0, cut)),
    replaced,
    replaced,
    fc.jsonValue().map((v) => JSON.stringify(v) ?? "null"),
    fc.string({ unit: "binary" }),
    fc.uint8Array({ maxLength: 512 }).map((bytes) => Buffer.from(bytes)),
    fc.constant(JSON.stringify({ ...valid, id: "A".repeat(70 * 1024) })),
  );
}

describe("the console's WebAuthn routes over HTTP", () => {
  it("refuse random, truncated and oversized approval bodies with 4xx, and still approve a good one", async () => {
    const approval = { digest: actDigest(ACT), assertion: ASSERTION };
    await fc.assert(
      fc.asyncProperty(bodies(approval), async (body) => {
        const answer = await send("POST", `/console/approvals/${requestId}/approve`, body, operator);
        const notJson = "Expected a JSON body with the digest shown and the assertion";
        expectJudged(answer, body, approvalBodySchema, notJson, approvalProblem);
      }),
      { numRuns: 80 },
    );
    // A good body still reaches the verifier, whose refusal is the answer.
    const good = await send(
      "POST",
      `/console/approvals/${requestId}/approve`,
      JSON.stringify(approval),
      operator,
    );
    expect(JSON.parse(good.body)).toEqual({
      error: "Approval refused: the signature does not verify with passkey alice-laptop",
    });
  }, 60_000);

  it("refuse random, truncated and oversized options and denial bodies with 4xx", async () => {
    const routes = [
      {
        path: "options",
        valid: { digest: actDigest(ACT) },
        schema: optionsBodySchema,
        notJson: "Expected a JSON body with the digest shown",
        words: approvalProblem,
      },
      {
        path: "deny",
        valid: { reason: "not now" },
        schema: denialBodySchema,
        notJson: "Expected a JSON body with a reason",
        words: denialProblem,
      },
    ];
    for (const { path, valid, schema, notJson, words } of routes) {
      await fc.assert(
        fc.asyncProperty(bodies(valid), async (body) => {
          // A denial that happens to be a good one would decide the request the other runs need pending.
          if (path === "deny") fc.pre(!decodeBody(denialBodySchema, jsonOf(body)).ok);
          const answer = await send("POST", `/console/approvals/${requestId}/${path}`, body, operator);
          // A good options body is answered 200 with the challenge: only the refused ones are judged.
          if (answer.status === 200 && path === "options") return;
          expectJudged(answer, body, schema, notJson, words);
        }),
        { numRuns: 50 },
      );
    }
    const options = JSON.stringify({ digest: actDigest(ACT) });
    expect((await send("POST", `/console/approvals/${requestId}/options`, options, operator)).status).toBe(
      200,
    );
  }, 60_000);

  it("refuse random, truncated and oversized login bodies with 4xx, and still look a good one up", async () => {
    /** A fresh login with its challenge, as the login page makes it; then the body in question. */
    const verify = async (body: Buffer | string) => {
      monotonic += 6500; // 10 attempts a minute: each one here is judged, none is rate-limited
      const page = await send("GET", "/console/login", "");
      const cookie = /relay_console_login=([^;]+)/.exec(String(page.headers["set-cookie"]))?.[1];
      const csrf = /<meta name="csrf-token" content="([^"]+)">/.exec(page.body)?.[1] ?? "";
      const headers = { Cookie: `relay_console_login=${cookie}`, "X-CSRF-Token": csrf };
      expect((await send("POST", "/console/login/options", "{}", headers)).status).toBe(200);
      return send("POST", "/console/login/verify", body, headers);
    };
    const words = (problem: { field: string; why: string }) =>
      `Expected a JSON WebAuthn response: ${problemText(problem)}`;
    await fc.assert(
      fc.asyncProperty(bodies(ASSERTION), async (body) => {
        const answer = await verify(body);
        expect(answer.status).not.toBe(429);
        expectJudged(answer, body, authenticationResponseSchema, "Expected a JSON WebAuthn response", words);
      }),
      { numRuns: 50 },
    );
    const stranger = await verify(JSON.stringify({ ...ASSERTION, id: "QUFB", rawId: "QUFB" }));
    expect(stranger.status).toBe(401);
    expect(JSON.parse(stranger.body)).toEqual({ error: "This passkey is not enrolled" });
  }, 60_000);
});
