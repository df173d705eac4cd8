import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { baseEnv, SERVER_ENTRY } from "../helpers/server.js";

describe("relay-shell console (built CLI): wrong arguments", () => {
  const run = (...args: string[]) =>
    spawnSync(process.execPath, [SERVER_ENTRY, "console", ...args], {
      env: baseEnv(),
      encoding: "utf8",
      timeout: 30_000,
    });

  it.each([
    [[], "console needs a command"],
    [["unenrol"], "unknown console command: unenrol"],
    [["enrol", "--passkeys", "/tmp/p"], "console enrol needs --name NAME"],
    [["enrol", "--name", "a b", "--passkeys", "/tmp/p"], "--name: a passkey name is"],
    [
      ["enrol", "--name", "a", "--passkeys", "/tmp/p", "--port", "70000"],
      "--port: expected an integer 0..65535",
    ],
    [["enrol", "--name", "a", "--passkeys", "/tmp/p", "--origin", "https://x/path"], "--origin: expected"],
    [["enrol", "--name", "a", "--passkeys", "/tmp/p", "--bogus"], "unknown argument: --bogus"],
  ])("refuses %j with exit status 2", (args, message) => {
    const result = run(...args);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(`relay_shell: ${message}`);
    expect(result.stderr).toContain("usage: relay-shell console enrol");
  });

  it("refuses to enrol for an IP address as the relying party, and says why", () => {
    const result = run("enrol", "--name", "a", "--passkeys", "/nonexistent/passkeys", "--rp-id", "127.0.0.1");
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('relay_shell: console enrol: --rp-id: "127.0.0.1" is an IP address');
  });
});
