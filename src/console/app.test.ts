import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { configWarnings, loadSettings } from "../config/index.js";
import { memoryCounters } from "../consent/index.js";
import { silentLogger, systemClock } from "../core/index.js";
import { createConsoleApp } from "./app.js";
import { loadAssets } from "./assets.js";
import { listenLoopback, nodeHandler } from "./listen.js";
import { type Posture, posturePage } from "./pages.js";

const POSTURE: Posture = {
  mode: "open",
  modeText: "every tier is admitted",
  denyList: false,
  allowList: false,
  broker: false,
  consent: { enabled: false, leaseMode: "manual", pending: null },
  audit: { path: "/a", chain: false, failClosed: true, degraded: false, degradedReason: "" },
  warnings: ["<script>alert(1)</script>"],
  policies: [],
};

function app(origin: string) {
  return createConsoleApp({
    origin,
    rpId: new URL(origin).hostname,
    sessionTtlSeconds: 900,
    passkeys: { current: () => ({ ok: true, value: [] }) },
    counters: memoryCounters(),
    assets: loadAssets(),
    posture: async () => POSTURE,
    auditPath: "/nonexistent/audit.jsonl",
    sessions: {
      overview: () => [],
      terminate: () => Promise.reject(new Error("none")),
      watch: () => {
        throw new Error("none");
      },
    },
    audit: { append: () => true, reserve: () => true },
    recordDir: "",
    clock: systemClock,
    logger: silentLogger,
  });
}

describe("the console's cookies", () => {
  it("are Secure behind TLS, and HttpOnly, SameSite=Strict and scoped to /console always", async () => {
    const tls = await app("https://relay.example.com").request("https://relay.example.com/console/login", {
      headers: { Host: "relay.example.com" },
    });
    expect(tls.status).toBe(200);
    const secure = tls.headers.get("set-cookie") ?? "";
    expect(secure).toMatch(/^relay_console_login=[A-Za-z0-9_-]{43};/);
    for (const part of ["HttpOnly", "SameSite=Strict", "Path=/console", "Secure"])
      expect(secure).toContain(part);

    const plain = await app("http://localhost:8765").request("http://localhost:8765/console/login", {
      headers: { Host: "localhost:8765" },
    });
    const cookie = plain.headers.get("set-cookie") ?? "";
    expect(cookie).toContain("HttpOnly");
    expect(cookie).not.toContain("Secure");
  });

  it("refuses other methods and oversized bodies", async () => {
    const served = app("http://localhost:8765");
    const put = await served.request("http://localhost:8765/console", {
      method: "PUT",
      headers: { Host: "localhost:8765" },
    });
    expect(put.status).toBe(405);
    const big = await served.request("http://localhost:8765/console/login/verify", {
      method: "POST",
      headers: {
        Host: "localhost:8765",
        Origin: "http://localhost:8765",
        "Content-Type": "application/json",
      },
      body: "x".repeat(70 * 1024),
    });
    expect(big.status).toBe(413);
    expect(big.headers.get("content-security-policy")).toContain("default-src 'self'");
  });
});

describe("the posture page", () => {
  it("lists the policies in force with their settings, never a pattern's text, escaped", () => {
    const policy = {
      name: "tag:<prod>",
      source: "/etc/relay/policy.toml",
      mode: "readonly",
      deny: 2,
      allow: 0,
      consent: true,
      leaseMode: "window",
      confirmTier3: false,
      maxTier: 2,
    };
    const html = posturePage("t", "op", { ...POSTURE, policies: [policy] });
    expect(html).toContain('<section class="card" id="policies">');
    expect(html).toContain(
      "<tr><td><code>tag:&lt;prod&gt;</code></td><td><code>/etc/relay/policy.toml</code></td><td><code>readonly</code></td><td>2</td><td>0</td><td>on (window)</td><td>off</td><td>2</td></tr>",
    );
  });

  it("escapes every value it shows", () => {
    const html = posturePage('"><b>', "op<i>", POSTURE);
    expect(html).not.toContain("<script>alert(1)</script>");
    expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(html).not.toContain("op<i>");
    expect(html).toContain('content="&quot;&gt;&lt;b&gt;"');
  });

  it("says what is true of an open policy when consent holds the calls", () => {
    const open = "policy is open with no deny list and no Tier-3 confirmation: nothing is refused";
    const off = posturePage("t", "op", { ...POSTURE, warnings: [open] });
    expect(off).toContain(open);
    // The warnings are configWarnings' own, which say so with consent on (config/warnings.ts).
    const cwd = mkdtempSync(join(tmpdir(), "console-warnings-"));
    const held = configWarnings(loadSettings({ RELAY_SHELL_CONSENT: "true" }, { cwd }), { euid: 1000 });
    rmSync(cwd, { recursive: true });
    const on = posturePage(
      "t",
      "op",
      { ...POSTURE, warnings: held, consent: { enabled: true, leaseMode: "manual", pending: 2 } },
      { pending: 2 },
    );
    expect(on).not.toContain("nothing is refused");
    expect(on).toContain(
      "human consent holds every call that is not a proven read (Tier 0) until an operator approves it",
    );
    expect(on).toContain(
      '<span id="nav-pending" class="count waiting" title="requests waiting for a decision">2</span>',
    );
    expect(off).not.toContain("nav-approvals");
  });
});

/** One POST through Node's HTTP server, its body sized (Content-Length) or streamed (chunked). */
function postOver(
  port: number,
  path: string,
  body: string,
  framing: "sized" | "chunked",
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path,
        setHost: false,
        headers: {
          Host: "localhost:8765",
          Origin: "http://localhost:8765",
          ...headers,
          ...(framing === "chunked"
            ? { "Transfer-Encoding": "chunked" }
            : { "Content-Length": String(Buffer.byteLength(body)) }),
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.once("error", reject);
    // Several writes, so a chunked body really arrives in chunks.
    for (let i = 0; i < body.length; i += 1000) req.write(body.slice(i, i + 1000));
    req.end();
  });
}

describe("request bodies", () => {
  it("are answered the same whether they are sized or chunked, on every route", async () => {
    const listener = await listenLoopback(nodeHandler(app("http://localhost:8765")), 0, silentLogger);
    try {
      const cases: Array<[path: string, body: string, headers: Record<string, string>]> = [
        ["/console/logout", "csrf=abc", { "Content-Type": "application/x-www-form-urlencoded" }],
        ["/console/login/options", "{}", { "Content-Type": "application/json" }],
        ["/console/login/verify", '{"id":"AAAA"}', { "Content-Type": "application/json" }],
        ["/console/sessions/sh-000000000000/kill", "{}", { "Content-Type": "application/json" }],
        ["/console/nowhere", "{}", { "Content-Type": "application/json" }],
        ["/console/login/verify", "x".repeat(70 * 1024), { "Content-Type": "application/json" }],
      ];
      for (const [path, body, headers] of cases) {
        const sized = await postOver(listener.port, path, body, "sized", headers);
        const chunked = await postOver(listener.port, path, body, "chunked", headers);
        expect(sized.status, path).not.toBe(500);
        expect(chunked, path).toEqual(sized);
      }
      const over = await postOver(listener.port, "/console/login/verify", "x".repeat(70 * 1024), "chunked");
      expect(over.status).toBe(413);
    } finally {
      await listener.close();
    }
  });
});

describe("the login page", () => {
  const get = (served: ReturnType<typeof app>, headers: Record<string, string> = {}) =>
    served.request("http://localhost:8765/console/login", {
      headers: { Host: "localhost:8765", ...headers },
    });

  it("is not started by an image or a script of another page", async () => {
    const served = app("http://localhost:8765");
    const image = await get(served, { "Sec-Fetch-Dest": "image", "Sec-Fetch-Site": "same-site" });
    expect(image.status).toBe(403);
    expect(image.headers.get("set-cookie")).toBeNull();
    expect((await get(served, { "Sec-Fetch-Dest": "document" })).status).toBe(200);
  });

  it("gives a browser in the middle of a login the same login again", async () => {
    const served = app("http://localhost:8765");
    const first = await get(served);
    const cookie = /relay_console_login=([^;]+)/.exec(first.headers.get("set-cookie") ?? "")?.[1] ?? "";
    const csrf = (html: string) => /<meta name="csrf-token" content="([^"]+)">/.exec(html)?.[1];
    const token = csrf(await first.text());
    const again = await get(served, { Cookie: `relay_console_login=${cookie}` });
    expect(again.headers.get("set-cookie")).toBeNull();
    expect(csrf(await again.text())).toBe(token);
  });
});
