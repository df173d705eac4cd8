import { describe, expect, it } from "vitest";
import { silentLogger, systemClock } from "../core/index.js";
import { createConsoleApp } from "./app.js";
import { loadAssets } from "./assets.js";
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
};

function app(origin: string) {
  return createConsoleApp({
    origin,
    rpId: new URL(origin).hostname,
    sessionTtlSeconds: 900,
    passkeys: { current: () => ({ ok: true, keys: [] }) },
    counters: { get: () => 0, set: () => undefined },
    assets: loadAssets(),
    posture: () => POSTURE,
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
  it("escapes every value it shows", () => {
    const html = posturePage('"><b>', "op<i>", POSTURE);
    expect(html).not.toContain("<script>alert(1)</script>");
    expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(html).not.toContain("op<i>");
    expect(html).toContain('content="&quot;&gt;&lt;b&gt;"');
  });
});
