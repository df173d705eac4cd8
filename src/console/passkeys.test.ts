import { describe, expect, it } from "vitest";
import { parsePasskeys, passkeyLine, passkeyNameProblem } from "./passkeys.js";

const LINE = {
  name: "alice-laptop",
  credential_id: "AbC_-123",
  public_key: "pQECAyYgASFYIA",
  algorithm: -7,
  transports: ["internal"],
  created: "2026-12-01T19:00:00.000Z",
};

describe("the passkeys file", () => {
  it("reads one passkey a line, skipping comments and blank lines, and writes the same line back", () => {
    const read = parsePasskeys(`# operators\n\n${JSON.stringify(LINE)}\n`, "/f");
    expect(read).toEqual({
      ok: true,
      keys: [
        {
          name: "alice-laptop",
          credentialId: "AbC_-123",
          publicKey: "pQECAyYgASFYIA",
          algorithm: -7,
          transports: ["internal"],
          created: "2026-12-01T19:00:00.000Z",
        },
      ],
    });
    if (read.ok && read.keys[0]) expect(JSON.parse(passkeyLine(read.keys[0]))).toEqual(LINE);
  });

  it.each([
    ["not JSON", "{", "not a JSON object"],
    ["an unknown field", { ...LINE, admin: true }, 'unknown field "admin"'],
    ["an unknown algorithm", { ...LINE, algorithm: -65535 }, "algorithm: expected one of -7, -8, -257"],
    ["a credential id that is not base64url", { ...LINE, credential_id: "a+b/c=" }, "credential_id"],
    ["a name with a space", { ...LINE, name: "alice laptop" }, "name"],
    ["an unknown transport", { ...LINE, transports: ["carrier-pigeon"] }, "transports"],
    ["no creation time", { ...LINE, created: "yesterday" }, "created"],
  ])("names the line of %s", (_what, line, problem) => {
    const text = `# a comment\n${typeof line === "string" ? line : JSON.stringify(line)}\n`;
    const read = parsePasskeys(text, "/etc/passkeys");
    expect(read.ok).toBe(false);
    if (!read.ok) expect(read.problems[0]).toContain(`/etc/passkeys:2: ${problem}`);
  });

  it("refuses a credential or a name that appears twice", () => {
    const twice = parsePasskeys(`${JSON.stringify(LINE)}\n${JSON.stringify({ ...LINE, name: "b" })}\n`, "/f");
    expect(twice).toEqual({ ok: false, problems: ["/f:2: credential AbC_-123 appears twice"] });
    const sameName = parsePasskeys(
      `${JSON.stringify(LINE)}\n${JSON.stringify({ ...LINE, credential_id: "x" })}\n`,
      "/f",
    );
    expect(sameName).toEqual({ ok: false, problems: ["/f:2: the name alice-laptop appears twice"] });
  });

  it("accepts passkey names an operator would type and nothing that could confuse a log line", () => {
    expect(passkeyNameProblem("alice-laptop")).toBeNull();
    expect(passkeyNameProblem("ops@phone.2")).toBeNull();
    for (const bad of ["", "-x", "a b", "a\nb", "x".repeat(65), 'a"b'])
      expect(passkeyNameProblem(bad)).not.toBeNull();
  });
});
