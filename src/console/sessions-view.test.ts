import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { FakeTransport, registryHarness } from "../../test/helpers/registry.js";
import type { AuditEntry } from "../audit/types.js";
import { silentLogger, systemClock } from "../core/index.js";
import { securityHeaders } from "./http-rules.js";
import { sameSecret } from "./logins.js";
import { registerSessionsView } from "./sessions-view.js";

const { setup, cleanup, tempDir } = registryHarness();
afterEach(cleanup);

const CSRF = "c".repeat(43);
const LOGGED_IN = { cookie: "op=alice" };

function world(options: { recordDir?: string; auditWorks?: boolean } = {}) {
  const recordDir = options.recordDir ?? "";
  const { registry, open } = setup({ recordDir });
  const written: AuditEntry[] = [];
  const app = new Hono();
  app.use("*", securityHeaders());
  registerSessionsView(app, {
    sessions: registry,
    audit: {
      append: (entry) => {
        written.push(entry);
        return options.auditWorks ?? true;
      },
      reserve: () => options.auditWorks ?? true,
    },
    recordDir,
    operator: async (c) =>
      c.req.header("cookie") === "op=alice"
        ? { csrf: CSRF, passkey: "alice-laptop", credentialId: "cred-1" }
        : null,
    sentCsrf: async (c) => c.req.header("x-csrf-token") ?? "",
    sameSecret,
    clock: systemClock,
    logger: silentLogger,
  });
  const kill = (id: string, csrf = CSRF) =>
    app.request(`/console/sessions/${id}/kill`, {
      method: "POST",
      headers: { ...LOGGED_IN, "x-csrf-token": csrf },
    });
  return { app, registry, open, written, kill };
}

/** Read a server-sent event stream until `until` matches what came, or it ends. */
async function readStream(response: Response, until: RegExp): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) throw new Error("no body");
  const decoder = new TextDecoder();
  let text = "";
  while (!until.test(text)) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  await reader.cancel();
  return text;
}

describe("the console's sessions view", () => {
  it("lists every session, whoever owns it, only to a logged-in operator", async () => {
    const { app, open, registry } = world();
    const a = await open("client-a");
    const b = await open("client-b");
    const remote = await registry.add({
      kind: "ssh",
      title: "ssh deploy@web-1",
      owner: "client-c",
      cols: 80,
      rows: 24,
      transport: new FakeTransport(),
    });
    expect((await app.request("/console/sessions/list")).status).toBe(401);
    const listed = (await (await app.request("/console/sessions/list", { headers: LOGGED_IN })).json()) as {
      sessions: Array<{ id: string; kind: string; owner: string }>;
    };
    expect(listed.sessions.map((s) => [s.id, s.kind, s.owner])).toEqual([
      [a.id, "local", "client-a"],
      [b.id, "local", "client-b"],
      [remote.id, "ssh", "client-c"],
    ]);
    expect(listed).toMatchObject({ recording: false, recordings: [], recordingsProblem: null });
    const page = await app.request("/console/sessions");
    expect(page.status).toBe(303);
  });

  it("kills a session at the operator's word and writes it to the audit log as the operator's", async () => {
    const { open, registry, written, kill } = world();
    const s = await open("client-a");
    const done = await kill(s.id);
    expect(done.status).toBe(200);
    expect(await done.json()).toEqual({
      ok: true,
      session: s.id,
      signal: "SIGTERM",
      by: "alice-laptop",
      audited: true,
    });
    expect(s.transport.signals).toEqual(["TERM"]);
    expect(s.transport.closed).toBe(1);
    expect(registry.overview()).toEqual([]);
    expect(written).toEqual([
      {
        tool: "session_kill",
        tier: 1,
        denied: false,
        args: {
          session_id: s.id,
          signal_name: "TERM",
          close: true,
          operator: { channel: "console", passkey: "alice-laptop", credential_id: "cred-1" },
        },
        output: `killed and closed ${s.id}`,
        exitCode: null,
        clientId: "console",
        action: "operator_kill",
      },
    ]);
  });

  it("refuses a kill without the CSRF token, without a login, or of a session that is not there", async () => {
    const { app, open, written, kill } = world();
    const s = await open();
    expect((await kill(s.id, "")).status).toBe(403);
    expect((await kill(s.id, "x".repeat(43))).status).toBe(403);
    const anonymous = await app.request(`/console/sessions/${s.id}/kill`, {
      method: "POST",
      headers: { "x-csrf-token": CSRF },
    });
    expect(anonymous.status).toBe(401);
    expect((await kill("sh-ffffffffffff")).status).toBe(404);
    expect((await kill("../../etc")).status).toBe(404);
    expect(s.transport.signals).toEqual([]);
    expect(written).toEqual([]);
  });

  it("still kills when the audit log cannot take the record, and says so", async () => {
    const { open, kill } = world({ auditWorks: false });
    const s = await open();
    expect(await (await kill(s.id)).json()).toMatchObject({ ok: true, audited: false });
    expect(s.transport.closed).toBe(1);
  });

  it("serves recordings by session name only, never through a link, and allows WebAssembly only on the player page", async () => {
    const dir = tempDir("recordings-");
    const { app, open } = world({ recordDir: dir });
    const s = await open("client-a");
    s.transport.emit("hello from the recording\r\n");
    const name = `${s.id}.cast`;
    const cast = await app.request(`/console/recordings/${name}/cast`, { headers: LOGGED_IN });
    expect(cast.status).toBe(200);
    const lines = (await cast.text()).trim().split("\n");
    expect(JSON.parse(lines[0] ?? "")).toMatchObject({ version: 2, width: 80, height: 24, command: "bash" });
    expect(JSON.parse(lines[1] ?? "")).toEqual([expect.any(Number), "o", "hello from the recording\r\n"]);

    const player = await app.request(`/console/recordings/${name}`, { headers: LOGGED_IN });
    expect(player.status).toBe(200);
    expect(player.headers.get("content-security-policy")).toContain("script-src 'self' 'wasm-unsafe-eval'");
    expect(await player.text()).toContain(`data-src="/console/recordings/${name}/cast"`);
    const list = await app.request("/console/sessions/list", { headers: LOGGED_IN });
    expect(list.headers.get("content-security-policy")).toContain("script-src 'self';");
    expect(((await list.json()) as { recordings: unknown }).recordings).toMatchObject([
      { name, command: "bash", width: 80, height: 24 },
    ]);

    // A link planted under a recording's name, and names that are not a recording's, are not served.
    const secret = join(dir, "..", "secret.txt");
    writeFileSync(secret, "not for the console\n");
    symlinkSync(secret, join(dir, "sh-0123456789ab.cast"));
    mkdirSync(join(dir, "ssh-0123456789ab.cast"));
    for (const bad of ["sh-0123456789ab.cast", "ssh-0123456789ab.cast", "..%2Fsecret.txt", "secret.txt"]) {
      const refused = await app.request(`/console/recordings/${bad}/cast`, { headers: LOGGED_IN });
      expect(refused.status, bad).toBe(404);
    }
    expect((await app.request(`/console/recordings/${name}/cast`)).status).toBe(401);
  });

  it("follows a live session read-only: the screen so far, then live output, then the end", async () => {
    const dir = tempDir("recordings-");
    const { app, open, registry } = world({ recordDir: dir });
    const s = await open("client-a");
    s.transport.emit("earlier output\r\n");
    const response = await app.request(`/console/sessions/${s.id}/stream`, { headers: LOGGED_IN });
    expect(response.status).toBe(200);
    setTimeout(() => {
      s.transport.emit("later output\r\n");
      registry.resize(s.id, "client-a", 100, 30);
      s.transport.events?.exit(0);
    }, 20);
    const text = await readStream(response, /event: done/);
    const data = [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1] ?? ""));
    expect(data[0]).toEqual({ cols: 80, rows: 24, time: 0, init: "earlier output\r\n" });
    expect(data.slice(1, 3)).toEqual([
      [expect.any(Number), "o", "later output\r\n"],
      [expect.any(Number), "r", "100x30"],
    ]);
    expect(text).toContain('event: done\ndata: {"reason":"the session ended"}');
    // The follow took nothing from the owner.
    expect((await registry.recv(s.id, "client-a", { timeoutMs: 0, maxBytes: 256 })).text).toBe(
      "earlier output\r\nlater output\r\n",
    );
  });

  it("refuses to follow an unknown session or without a login", async () => {
    const { app, open } = world();
    const s = await open();
    expect((await app.request(`/console/sessions/${s.id}/stream`)).status).toBe(401);
    expect(
      (await app.request("/console/sessions/sh-ffffffffffff/stream", { headers: LOGGED_IN })).status,
    ).toBe(404);
    expect(
      (await app.request("/console/sessions/sh-ffffffffffff/follow", { headers: LOGGED_IN })).status,
    ).toBe(404);
  });

  it("starts a follow without a recording from the live output on", async () => {
    const { app, open } = world();
    const s = await open();
    s.transport.emit("not recorded\r\n");
    const response = await app.request(`/console/sessions/${s.id}/stream`, { headers: LOGGED_IN });
    setTimeout(() => s.transport.emit("now\r\n"), 20);
    const text = await readStream(response, /now/);
    const data = [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1] ?? ""));
    expect(data[0]).toEqual({ cols: 80, rows: 24, time: 0, init: "" });
    expect(data[1]).toEqual([expect.any(Number), "o", "now\r\n"]);
  });

  it("ends a follow whose page falls too far behind, instead of holding the output", async () => {
    const { app, open } = world();
    const s = await open();
    const response = await app.request(`/console/sessions/${s.id}/stream`, { headers: LOGGED_IN });
    // Nobody reads yet: more than the follow may hold arrives.
    const chunk = "x".repeat(64 * 1024);
    for (let i = 0; i < 80; i++) s.transport.emit(chunk);
    const text = await readStream(response, /event: done/);
    expect(text).toContain(
      'event: done\ndata: {"reason":"this page fell too far behind the session\'s output; reload it to follow again"}',
    );
  });
});
