import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RelayError } from "../core/index.js";
import { parsePublicKey } from "./index.js";

const ED = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIlizSIN3DQV78VPNjVvvwjgf+P5HqbPYCYu3BOMdjAE";

function failure(text: string): string {
  try {
    parsePublicKey(text);
  } catch (err) {
    if (err instanceof RelayError && err.type === "ValueError") return err.message;
    throw err;
  }
  throw new Error(`parsed: ${text}`);
}

describe("parsePublicKey", () => {
  it("reads type, blob, fingerprint and the comment (which may hold spaces)", () => {
    const key = parsePublicKey(`  ${ED} ED25519 test key \n`);
    expect(key).toMatchObject({
      type: "ssh-ed25519",
      fingerprint: "SHA256:ZxTZQ/K7JZpz0mHqWqdmYCUcq3MAtnu9TYA66TCBkxM",
      comment: "ED25519 test key",
    });
    expect(key.blob.length).toBe(51);
    expect(parsePublicKey(ED).comment).toBe("");
  });

  it("says what is wrong with anything else", () => {
    expect(failure("")).toBe('a public key line reads "type base64 [comment]"');
    expect(failure("ssh-ed25519")).toBe('a public key line reads "type base64 [comment]"');
    expect(failure("ssh-dss AAAA")).toContain('unsupported key type "ssh-dss" (supported: ssh-ed25519, ');
    expect(failure("ssh-ed25519-cert-v01@openssh.com AAAA")).toBe(
      "certificate keys (ssh-ed25519-cert-v01@openssh.com) are not supported; list the signer's own key",
    );
    expect(failure("ssh-ed25519 AAAA*AAA")).toBe("the ssh-ed25519 key is not valid base64");
    expect(failure(`${ED}\n${ED}`)).toBe("a public key is one line");
    expect(failure(ED.replace("ssh-ed25519 ", "ssh-rsa "))).toBe(
      "the line says ssh-rsa but the key inside is ssh-ed25519",
    );
    expect(
      failure(
        `ssh-ed25519 ${Buffer.concat([Buffer.from(ED.split(" ")[1] ?? "", "base64"), Buffer.of(0, 0, 0, 0)]).toString("base64")}`,
      ),
    ).toBe("public key has 4 trailing bytes");
    expect(failure("x".repeat(20_000))).toBe("a public key line is at most 16384 characters");
  });

  it("refuses an ECDSA point off its curve and a small RSA modulus", () => {
    const w = (b: Buffer | string) => {
      const body = typeof b === "string" ? Buffer.from(b) : b;
      const len = Buffer.alloc(4);
      len.writeUInt32BE(body.length);
      return Buffer.concat([len, body]);
    };
    const offCurve = Buffer.concat([Buffer.of(4), Buffer.alloc(32, 1), Buffer.alloc(32, 2)]);
    const ec = Buffer.concat([w("ecdsa-sha2-nistp256"), w("nistp256"), w(offCurve)]).toString("base64");
    expect(failure(`ecdsa-sha2-nistp256 ${ec}`)).toMatch(/^public key is not a valid key/);
    const wrongCurve = Buffer.concat([w("ecdsa-sha2-nistp256"), w("nistp384"), w(offCurve)]).toString(
      "base64",
    );
    expect(failure(`ecdsa-sha2-nistp256 ${wrongCurve}`)).toBe(
      "public key: curve nistp384 does not match the key type's nistp256",
    );
    const rsa = Buffer.concat([
      w("ssh-rsa"),
      w(Buffer.of(1, 0, 1)),
      w(Buffer.concat([Buffer.of(0), Buffer.alloc(64, 0xff)])),
    ]);
    expect(failure(`ssh-rsa ${rsa.toString("base64")}`)).toBe(
      "public key: an RSA modulus of 512 bits is outside 1024..16384",
    );
    const e1 = Buffer.concat([
      w("ssh-rsa"),
      w(Buffer.of(1)),
      w(Buffer.concat([Buffer.of(0), Buffer.alloc(256, 0xff)])),
    ]);
    expect(failure(`ssh-rsa ${e1.toString("base64")}`)).toBe(
      "public key: the RSA exponent is not an odd number from 3 to 64 bits",
    );
  });

  it("throws only a ValueError, whatever the text", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), fc.uint8Array({ maxLength: 120 }), (text, bytes) => {
        for (const line of [text, `ssh-ed25519 ${Buffer.from(bytes).toString("base64")}`]) {
          try {
            parsePublicKey(line);
          } catch (err) {
            expect(err).toBeInstanceOf(RelayError);
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
