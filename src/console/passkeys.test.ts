import { generateKeyPairSync } from "node:crypto";
import { isoCBOR } from "@simplewebauthn/server/helpers";
import { describe, expect, it } from "vitest";
import { parsePasskeys, passkeyLine, passkeyNameProblem } from "./passkeys.js";

/** A real ES256 COSE key, as an authenticator reports it at enrolment. */
function es256Cose(): string {
  const jwk = generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey.export({ format: "jwk" });
  const b = (s: string | undefined) => new Uint8Array(Buffer.from(s ?? "", "base64url"));
  const key = new Map<number, number | Uint8Array>([
    [1, 2],
    [3, -7],
    [-1, 1],
    [-2, b(jwk.x)],
    [-3, b(jwk.y)],
  ]);
  return Buffer.from(isoCBOR.encode(key)).toString("base64url");
}

const LINE = {
  name: "alice-laptop",
  credential_id: "AbC_-123",
  public_key: es256Cose(),
  algorithm: -7,
  transports: ["internal"],
  created: "2026-12-01T19:00:00.000Z",
};

describe("the passkeys file as the console reads it", () => {
  it("reads one passkey a line, skipping comments and blank lines, and writes the same line back", () => {
    const read = parsePasskeys(`# operators\n\n${JSON.stringify(LINE)}\n`, "/f");
    expect(read).toEqual({
      ok: true,
      value: [
        {
          name: "alice-laptop",
          credentialId: "AbC_-123",
          publicKey: LINE.public_key,
          algorithm: -7,
          transports: ["internal"],
          created: "2026-12-01T19:00:00.000Z",
        },
      ],
    });
    if (read.ok && read.value[0]) expect(JSON.parse(passkeyLine(read.value[0]))).toEqual(LINE);
  });

  it.each([
    ["not JSON", "{", "not JSON"],
    ["an unknown algorithm", { ...LINE, algorithm: -65535 }, "algorithm"],
    ["a credential id that is not base64url", { ...LINE, credential_id: "a+b/c=" }, "credential_id"],
    ["a key that is not a COSE key", { ...LINE, public_key: "pQECAyYgASFYIA" }, "public_key"],
    ["no creation time", { ...LINE, created: "yesterday" }, "created"],
  ])("names the line of %s, as the consent gate's reader does", (_what, line, problem) => {
    const text = `# a comment\n${typeof line === "string" ? line : JSON.stringify(line)}\n`;
    const read = parsePasskeys(text, "/etc/passkeys");
    expect(read.ok).toBe(false);
    if (!read.ok) expect(read.error[0]).toContain(`/etc/passkeys:2: ${problem}`);
  });

  it("refuses a credential or a name that appears twice", () => {
    const twice = parsePasskeys(`${JSON.stringify(LINE)}\n${JSON.stringify({ ...LINE, name: "b" })}\n`, "/f");
    expect(twice.ok === false && twice.error[0]).toContain("/f:2: credential_id already enrolled on line 1");
    const sameName = parsePasskeys(
      `${JSON.stringify(LINE)}\n${JSON.stringify({ ...LINE, credential_id: "xyzw" })}\n`,
      "/f",
    );
    expect(sameName.ok === false && sameName.error[0]).toContain('/f:2: name "alice-laptop" already used');
  });

  it("accepts passkey names an operator would type and nothing that could confuse a log line", () => {
    expect(passkeyNameProblem("alice-laptop")).toBeNull();
    expect(passkeyNameProblem("ops@phone.2")).toBeNull();
    for (const bad of ["", "-x", "a b", "a\nb", "x".repeat(65), 'a"b'])
      expect(passkeyNameProblem(bad)).not.toBeNull();
  });
});
