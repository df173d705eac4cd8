import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RelayError } from "../core/index.js";
import { destinationText, parseForwardSpec } from "./forward-spec.js";

const L_MESSAGE = "invalid L forward spec; expected L:<listen_port>:<dest_host>:<dest_port>";
const R_MESSAGE = "invalid R forward spec; expected R:<listen_port>:<dest_host>:<dest_port>";
const D_MESSAGE = "invalid D forward spec; expected D:<listen_port>";
const KIND_MESSAGE = "forward spec must start with L:, R: or D:";

function failure(spec: string): { type: string; message: string } {
  try {
    parseForwardSpec(spec);
  } catch (err) {
    if (err instanceof RelayError) return { type: err.type, message: err.message };
    throw err;
  }
  throw new Error(`${spec} parsed`);
}

describe("parseForwardSpec", () => {
  it("parses the three kinds, any case, with the real destination", () => {
    expect(parseForwardSpec("L:8080:db:5432")).toEqual({
      kind: "local",
      text: "L:8080:db:5432",
      listenPort: 8080,
      dest: { host: "db", port: 5432 },
    });
    expect(parseForwardSpec(" r:0:10.0.0.5:22 ")).toEqual({
      kind: "remote",
      text: "r:0:10.0.0.5:22",
      listenPort: 0,
      dest: { host: "10.0.0.5", port: 22 },
    });
    expect(parseForwardSpec("d:1080")).toEqual({
      kind: "dynamic",
      text: "d:1080",
      listenPort: 1080,
      dest: null,
    });
  });

  it("takes IPv6 destinations in brackets only", () => {
    expect(parseForwardSpec("L:0:[::1]:80").dest).toEqual({ host: "::1", port: 80 });
    expect(parseForwardSpec("R:9:[fe80::1%eth0]:22").dest).toEqual({ host: "fe80::1%eth0", port: 22 });
    expect(destinationText({ host: "::1", port: 80 })).toBe("[::1]:80");
    expect(destinationText({ host: "db", port: 5432 })).toBe("db:5432");
    for (const spec of ["L:0:::1:80", "L:0:[db]:80", "L:0:[]:80", "L:0:[::1:80", "L:0:::1]:80"]) {
      expect(failure(spec)).toEqual({ type: "ValueError", message: L_MESSAGE });
    }
  });

  it.each([
    ["X:1:2", KIND_MESSAGE],
    ["", KIND_MESSAGE],
    ["8080:db:5432", KIND_MESSAGE],
    ["LL:1:db:2", KIND_MESSAGE],
    ["L:8080:db", L_MESSAGE],
    ["L:8080:db:5432:9", L_MESSAGE],
    ["L:x:db:5432", L_MESSAGE],
    ["L:-1:db:5432", L_MESSAGE],
    ["L:65536:db:5432", L_MESSAGE],
    ["L:80:db:0", L_MESSAGE],
    ["L:80::5432", L_MESSAGE],
    ["L:80:db host:5432", L_MESSAGE],
    ["L:80:-oProxyCommand=x:5432", L_MESSAGE],
    ["R:80:db$(id):22", R_MESSAGE],
    ["R:1e3:db:22", R_MESSAGE],
    ["D:", D_MESSAGE],
    ["D:1080:x", D_MESSAGE],
    ["D:+1080", D_MESSAGE],
  ])("refuses %j with the contract's ValueError", (spec, message) => {
    expect(failure(spec)).toEqual({ type: "ValueError", message });
  });

  it("never echoes the spec, so the message stays short whatever was sent", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 2000 }), (spec) => {
        try {
          const parsed = parseForwardSpec(spec);
          // Whatever parses is well formed.
          expect(parsed.listenPort).toBeGreaterThanOrEqual(0);
          expect(parsed.listenPort).toBeLessThanOrEqual(65535);
          if (parsed.dest) expect(parsed.dest.port).toBeGreaterThanOrEqual(1);
        } catch (err) {
          expect(err).toBeInstanceOf(RelayError);
          expect((err as RelayError).type).toBe("ValueError");
          expect((err as RelayError).message.length).toBeLessThan(100);
        }
      }),
    );
  });

  it("round-trips every well-formed L spec", () => {
    const host = fc.stringMatching(/^[a-z0-9][a-z0-9.-]{0,30}$/);
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 65535 }),
        host,
        fc.integer({ min: 1, max: 65535 }),
        (lp, h, dp) => {
          expect(parseForwardSpec(`L:${lp}:${h}:${dp}`)).toMatchObject({
            listenPort: lp,
            dest: { host: h, port: dp },
          });
        },
      ),
    );
  });
});
