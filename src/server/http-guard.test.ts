import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { allowedHostnames, checkHostAndOrigin, normalizeHostname } from "./http-guard.js";

const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;

describe("Host and Origin validation", () => {
  const allowed = allowedHostnames({ bindHost: "127.0.0.1", issuer: "https://relay.example.test" });

  it("allows loopback, the bind address and the issuer's host, on any port", () => {
    expect([...allowed].sort()).toEqual(["127.0.0.1", "relay.example.test"]);
    for (const host of [
      "127.0.0.1:8080",
      "127.0.0.2",
      "localhost",
      "[::1]:9",
      "[::ffff:127.0.0.1]:80",
      "relay.example.test",
      "LOCALHOST:1",
    ]) {
      expect(checkHostAndOrigin(req({ host }), allowed), host).toEqual({ ok: true, value: undefined });
    }
  });

  it("refuses a missing, unknown or malformed Host", () => {
    expect(checkHostAndOrigin(req({}), allowed).ok).toBe(false);
    for (const host of [
      "evil.example",
      "127.0.0.1.evil.example",
      "localhost@evil.example",
      "[zz",
      "10.0.0.1",
    ]) {
      expect(checkHostAndOrigin(req({ host }), allowed).ok, host).toBe(false);
    }
  });

  it("refuses a request with more than one Host line, whatever their order, with 400", () => {
    const twice = (first: string, second: string) =>
      ({
        headers: { host: first },
        rawHeaders: ["Host", first, "Accept", "*/*", "host", second],
      }) as unknown as IncomingMessage;
    expect(checkHostAndOrigin(twice("localhost", "evil.example"), allowed)).toEqual({
      ok: false,
      error: { message: "Multiple Host headers", status: 400 },
    });
    expect(checkHostAndOrigin(twice("localhost", "localhost"), allowed).ok).toBe(false);
    const once = {
      headers: { host: "localhost" },
      rawHeaders: ["HOST", "localhost"],
    } as unknown as IncomingMessage;
    expect(checkHostAndOrigin(once, allowed)).toEqual({ ok: true, value: undefined });
  });

  it("refuses an Origin that names another host, a null Origin or a non-web scheme", () => {
    for (const origin of ["https://evil.example", "null", "file://localhost", "http://evil.example:8080"]) {
      expect(checkHostAndOrigin(req({ host: "localhost", origin }), allowed).ok, origin).toBe(false);
    }
    expect(checkHostAndOrigin(req({ host: "localhost", origin: "http://localhost:6274" }), allowed).ok).toBe(
      true,
    );
  });

  it("on a wildcard bind, allows this machine's addresses but still not foreign names", () => {
    const wide = allowedHostnames({ bindHost: "0.0.0.0", issuer: "https://localhost:8080" });
    expect(wide.has("127.0.0.1")).toBe(true);
    expect(wide.has("evil.example")).toBe(false);
    expect(normalizeHostname("::1")).toBe("[::1]");
    expect(normalizeHostname("[::1]")).toBe("[::1]");
    expect(normalizeHostname("Relay.Example")).toBe("relay.example");
  });
});
