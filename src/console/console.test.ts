import { describe, expect, it } from "vitest";
import { consoleOrigin } from "../config/index.js";
import { type ConsoleSettings, consoleOriginProblem } from "./console.js";

const BASE: ConsoleSettings = {
  transport: "stdio",
  httpHost: "127.0.0.1",
  httpPort: 8080,
  httpPath: "/mcp",
  console: true,
  consolePort: 8765,
  consolePasskeys: "/etc/relay-shell/passkeys",
  consoleRpId: "localhost",
  consoleOrigin: "",
  consoleSessionTtl: 900,
  consoleStateDir: "/var/lib/relay-shell/console",
  auditPath: "/var/log/relay-shell/audit.jsonl",
  sessionRecordDir: "",
};

describe("the console's origin", () => {
  it("defaults to localhost on the port the console is served on", () => {
    expect(consoleOrigin(BASE)).toBe("http://localhost:8765");
    expect(consoleOrigin({ ...BASE, transport: "http" })).toBe("http://localhost:8080");
    expect(consoleOrigin({ ...BASE, consoleOrigin: "https://relay.example.com" })).toBe(
      "https://relay.example.com",
    );
    expect(consoleOriginProblem(BASE)).toBeNull();
  });

  it("must be under the relying party", () => {
    expect(consoleOriginProblem({ ...BASE, consoleRpId: "example.com" })).toContain(
      "RELAY_SHELL_CONSOLE_RP_ID",
    );
    expect(
      consoleOriginProblem({
        ...BASE,
        consoleRpId: "example.com",
        consoleOrigin: "https://relay.example.com",
      }),
    ).toBeNull();
    expect(
      consoleOriginProblem({
        ...BASE,
        consoleRpId: "example.com",
        consoleOrigin: "https://relayexample.com",
      }),
    ).toContain("RELAY_SHELL_CONSOLE_RP_ID");
  });

  it("is https unless it is a loopback name, and https when the HTTP listener is not loopback", () => {
    expect(
      consoleOriginProblem({ ...BASE, consoleRpId: "relay.lan", consoleOrigin: "http://relay.lan:8765" }),
    ).toContain("only over https");
    expect(consoleOriginProblem({ ...BASE, transport: "http", httpHost: "0.0.0.0" })).toContain(
      "must be https://",
    );
    expect(
      consoleOriginProblem({
        ...BASE,
        transport: "http",
        httpHost: "0.0.0.0",
        consoleRpId: "relay.example.com",
        consoleOrigin: "https://relay.example.com",
      }),
    ).toBeNull();
  });

  it("does not share its path with the MCP endpoint", () => {
    expect(consoleOriginProblem({ ...BASE, transport: "http", httpPath: "/console/mcp" })).toContain(
      "RELAY_SHELL_HTTP_PATH: /console/mcp is under /console",
    );
    expect(consoleOriginProblem({ ...BASE, transport: "http", httpPath: "/consoles" })).toBeNull();
  });
  it("refuses an IP address as the relying party, or as the origin's host: WebAuthn allows neither", () => {
    for (const rpId of ["127.0.0.1", "127.1", "0x7f.0.0.1", "::1", "[::1]", "192.168.1.20"]) {
      const problem = consoleOriginProblem({
        ...BASE,
        consoleRpId: rpId,
        consoleOrigin: rpId.includes(":") ? "http://[::1]:8765" : `http://${rpId}:8765`,
      });
      expect(problem, rpId).toContain(`RELAY_SHELL_CONSOLE_RP_ID: "${rpId}" is an IP address`);
      expect(problem).toContain("WebAuthn accepts only a domain name as the relying party");
    }
    expect(consoleOriginProblem({ ...BASE, consoleOrigin: "http://127.0.0.1:8765" })).toContain(
      "RELAY_SHELL_CONSOLE_ORIGIN: http://127.0.0.1:8765 names an IP address",
    );
    expect(
      consoleOriginProblem({
        ...BASE,
        consoleRpId: "relay.example.com",
        consoleOrigin: "https://relay.example.com",
      }),
    ).toBeNull();
  });
});
