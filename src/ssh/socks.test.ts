import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  methodReply,
  parseGreeting,
  parseRequest,
  replyForOpenFailure,
  requestReply,
  SocksReply,
} from "./socks.js";

const bytes = (...values: number[]) => Uint8Array.from(values);

describe("SOCKS5 greeting", () => {
  it("accepts the no-auth method among others and says how much it read", () => {
    expect(parseGreeting(bytes(5, 2, 2, 0, 99))).toEqual({ kind: "ok", noAuth: true, consumed: 4 });
    expect(parseGreeting(bytes(5, 1, 2))).toEqual({ kind: "ok", noAuth: false, consumed: 3 });
    expect([...methodReply(true)]).toEqual([5, 0]);
    expect([...methodReply(false)]).toEqual([5, 0xff]);
  });

  it("waits for the rest and refuses other versions", () => {
    expect(parseGreeting(bytes(5))).toEqual({ kind: "more" });
    expect(parseGreeting(bytes(5, 3, 0))).toEqual({ kind: "more" });
    expect(parseGreeting(bytes(4, 1, 0)).kind).toBe("bad");
    expect(parseGreeting(bytes(5, 0)).kind).toBe("bad");
  });
});

describe("SOCKS5 request", () => {
  it("reads CONNECT to IPv4, a domain and IPv6", () => {
    expect(parseRequest(bytes(5, 1, 0, 1, 127, 0, 0, 1, 0x1f, 0x90))).toEqual({
      kind: "connect",
      host: "127.0.0.1",
      port: 8080,
      consumed: 10,
    });
    const name = [..."db.example"].map((c) => c.charCodeAt(0));
    expect(parseRequest(bytes(5, 1, 0, 3, name.length, ...name, 0, 22, 0xaa))).toEqual({
      kind: "connect",
      host: "db.example",
      port: 22,
      consumed: 5 + name.length + 2,
    });
    const v6 = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    expect(parseRequest(bytes(5, 1, 0, 4, ...v6, 1, 0))).toMatchObject({
      host: "2001:db8:0:0:0:0:0:1",
      port: 256,
    });
  });

  it("refuses what the relay does not offer with the protocol's codes", () => {
    expect(parseRequest(bytes(5, 2, 0, 1, 127, 0, 0, 1, 0, 80))).toMatchObject({
      kind: "refuse",
      reply: SocksReply.commandNotSupported,
    });
    expect(parseRequest(bytes(5, 1, 0, 7, 0, 0))).toMatchObject({
      kind: "refuse",
      reply: SocksReply.addressTypeNotSupported,
    });
    expect(parseRequest(bytes(5, 1, 0, 3, 3, 0x61, 0x20, 0x62, 0, 80))).toMatchObject({
      kind: "refuse",
      reply: SocksReply.hostUnreachable,
    });
    expect(parseRequest(bytes(5, 1, 0, 1, 10, 0, 0, 1, 0, 0))).toMatchObject({ kind: "refuse" });
    expect([...requestReply(SocksReply.connectionRefused)]).toEqual([5, 5, 0, 1, 0, 0, 0, 0, 0, 0]);
  });

  it("asks for more until a request is whole, for every prefix", () => {
    const name = [..."host.example.org"].map((c) => c.charCodeAt(0));
    const full = bytes(5, 1, 0, 3, name.length, ...name, 1, 187);
    for (let i = 0; i < full.length; i++) expect(parseRequest(full.subarray(0, i))).toEqual({ kind: "more" });
    expect(parseRequest(full).kind).toBe("connect");
  });

  it("never throws and never reads past the buffer on arbitrary bytes", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (data) => {
        const greeting = parseGreeting(data);
        if (greeting.kind === "ok") expect(greeting.consumed).toBeLessThanOrEqual(data.length);
        const request = parseRequest(data);
        if (request.kind === "connect") {
          expect(request.consumed).toBeLessThanOrEqual(data.length);
          expect(request.port).toBeGreaterThan(0);
        }
      }),
    );
  });
});

describe("replyForOpenFailure", () => {
  it("maps the SSH server's reasons onto SOCKS reply codes", () => {
    expect(
      replyForOpenFailure({ reason: 2, message: "(SSH) Channel open failure: Connection refused" }),
    ).toBe(SocksReply.connectionRefused);
    expect(replyForOpenFailure({ reason: 1, message: "(SSH) Channel open failure: open failed" })).toBe(
      SocksReply.notAllowed,
    );
    expect(replyForOpenFailure({ reason: 2, message: "No route to host" })).toBe(SocksReply.hostUnreachable);
    expect(replyForOpenFailure({ reason: 2, message: "Network is unreachable" })).toBe(
      SocksReply.networkUnreachable,
    );
    expect(replyForOpenFailure(new Error("something else"))).toBe(SocksReply.generalFailure);
  });
});
