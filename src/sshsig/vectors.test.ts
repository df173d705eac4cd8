import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parsePublicKey, verifySshsigWithKey } from "./index.js";

/** OpenSSH's own SSHSIG test vectors (test/data/sshsig/README.md). */
const DIR = join(import.meta.dirname, "..", "..", "test", "data", "sshsig");
const read = (name: string) => readFileSync(join(DIR, name));
const message = read("signed-data");
const namespace = read("namespace").toString("utf8").trim();

const VECTORS = [
  {
    name: "rsa",
    type: "ssh-rsa",
    sk: false,
    fingerprint: "SHA256:PnEztoQ74skPJhb/bvdbzdOVa2whp8Ws4housCPVrkI",
  },
  {
    name: "ecdsa",
    type: "ecdsa-sha2-nistp256",
    sk: false,
    fingerprint: "SHA256:YInG0FuXzFrI4twnU4WIDUE7/iFeM9DVtx6zdi61Pvg",
  },
  {
    name: "ed25519",
    type: "ssh-ed25519",
    sk: false,
    fingerprint: "SHA256:ZxTZQ/K7JZpz0mHqWqdmYCUcq3MAtnu9TYA66TCBkxM",
  },
  {
    name: "ecdsa_sk",
    type: "sk-ecdsa-sha2-nistp256@openssh.com",
    sk: true,
    fingerprint: "SHA256:/ALxJUlmDPE0gxeL1nZip4oXm1VG1qmR2xL5iUzZD1A",
  },
  {
    name: "ed25519_sk",
    type: "sk-ssh-ed25519@openssh.com",
    sk: true,
    fingerprint: "SHA256:pbI9wlyrFSsUbp+GTiIAOqNMvoajbF2tHsPMECyrMYU",
  },
  {
    name: "ecdsa_sk_webauthn",
    type: "sk-ecdsa-sha2-nistp256@openssh.com",
    sk: true,
    fingerprint: "SHA256:CnLUlPNaYYz05nves7k8lkzRjnzbbkaxQnfzZrS3kSM",
  },
] as const;

function vector(name: string) {
  return {
    key: parsePublicKey(read(`${name}.pub`).toString("utf8")),
    sig: read(`${name}.sig`).toString("utf8"),
  };
}

describe("OpenSSH's SSHSIG test vectors", () => {
  it("are all here, in namespace unittest", () => {
    expect(namespace).toBe("unittest");
    expect(message.toString("utf8")).toBe("This is a test, this is only a test");
  });

  for (const v of VECTORS) {
    describe(v.name, () => {
      const { key, sig } = vector(v.name);

      it("has the type and fingerprint ssh-keygen -l reports", () => {
        expect(key.type).toBe(v.type);
        expect(key.fingerprint).toBe(v.fingerprint);
      });

      it("verifies for its key over signed-data in namespace unittest", () => {
        const verdict = verifySshsigWithKey(sig, message, namespace, key);
        expect(verdict).toMatchObject({
          ok: true,
          value: { key: { fingerprint: v.fingerprint, type: v.type } },
        });
        expect(verdict.ok && verdict.value.userPresent).toBe(v.sk);
        if (v.sk) expect(verdict.ok && typeof verdict.value.counter).toBe("number");
        else expect(verdict.ok && verdict.value.counter).toBeUndefined();
      });

      it("is refused when any one byte of the message changes", () => {
        for (let i = 0; i < message.length; i++) {
          const changed = Buffer.from(message);
          changed[i] = (changed[i] ?? 0) ^ 0x01;
          expect(verifySshsigWithKey(sig, changed, namespace, key)).toMatchObject({
            ok: false,
            error: {
              failure: "bad-signature",
            },
          });
        }
        expect(verifySshsigWithKey(sig, Buffer.concat([message, Buffer.of(0x0a)]), namespace, key).ok).toBe(
          false,
        );
      });

      it("is refused in another namespace", () => {
        for (const other of ["unittest2", "relay-shell-consent", "UNITTEST", "unittes"]) {
          expect(verifySshsigWithKey(sig, message, other, key)).toEqual({
            ok: false,
            error: {
              failure: "wrong-namespace",
              reason: `the signature is for namespace "unittest", not "${other}"`,
            },
          });
        }
      });

      it("is refused for every other vector's key", () => {
        for (const other of VECTORS.filter((o) => o.name !== v.name)) {
          const otherKey = vector(other.name).key;
          const verdict = verifySshsigWithKey(sig, message, namespace, otherKey);
          expect(verdict).toMatchObject({ ok: false, error: { failure: "unknown-key" } });
          expect(verdict.ok || verdict.error.reason).toContain(otherKey.fingerprint);
        }
      });
    });
  }

  it("refuses an sk signature whose user-presence flag was cleared (the flag is signed, so it fails too)", () => {
    for (const name of ["ed25519_sk", "ecdsa_sk", "ecdsa_sk_webauthn"]) {
      const { key, sig } = vector(name);
      const raw = Buffer.from(sig.replace(/-----[A-Z ]+-----/g, "").replace(/\s/g, ""), "base64");
      const flagAt = flagOffset(raw);
      expect((raw[flagAt] ?? 0) & 0x01).toBe(1);
      const cleared = Buffer.from(raw);
      cleared[flagAt] = (cleared[flagAt] ?? 0) & ~0x01;
      const armored = `-----BEGIN SSH SIGNATURE-----\n${cleared.toString("base64")}\n-----END SSH SIGNATURE-----\n`;
      const verdict = verifySshsigWithKey(armored, message, namespace, key);
      expect(verdict).toMatchObject({ ok: false, error: { failure: "bad-signature" } });
    }
  });
});

/** Walks the envelope: magic, version, then five strings; the last is the signature blob. */
function envelopeStrings(raw: Buffer): { start: number; length: number }[] {
  let at = 6 + 4;
  const out: { start: number; length: number }[] = [];
  for (let i = 0; i < 5; i++) {
    const length = raw.readUInt32BE(at);
    out.push({ start: at + 4, length });
    at += 4 + length;
  }
  return out;
}

/** In an sk signature blob: string algorithm, string signature, then the flags byte. */
function flagOffset(raw: Buffer): number {
  const blob = envelopeStrings(raw)[4];
  if (!blob) throw new Error("no signature blob");
  let at = blob.start;
  at += 4 + raw.readUInt32BE(at);
  at += 4 + raw.readUInt32BE(at);
  return at;
}
