import { createHash, generateKeyPairSync, type KeyObject, sign } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseAllowedSigners } from "./allowed-signers.js";
import { parsePublicKey, type SshPublicKey, verifySshsig, verifySshsigWithKey } from "./index.js";
import { skSignedData } from "./signature.js";
import { wireString, wireU32 } from "./wire.js";

/*
 * A software signer, so the verifier's policy and its FIDO checks can be
 * driven where no authenticator exists: it builds exactly what OpenSSH
 * writes (PROTOCOL.sshsig, PROTOCOL.u2f), and the OpenSSH test vectors and
 * ssh-keygen itself (ssh-keygen.test.ts) check that the verifier reads it
 * the same way.
 */
type Kind = "ed25519" | "sk-ed25519" | "sk-ecdsa" | "webauthn" | "rsa-sha1" | "rsa-sha256";

interface Signer {
  kind: Kind;
  key: SshPublicKey;
  private: KeyObject;
  application: Buffer;
}

const MAGIC = Buffer.from("SSHSIG");

function mpint(bytes: Buffer): Buffer {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  const body = bytes.subarray(start);
  return wireString((body[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.of(0), body]) : body);
}

function jwkBytes(key: KeyObject, field: "x" | "y" | "n" | "e"): Buffer {
  return Buffer.from(String(key.export({ format: "jwk" })[field]), "base64url");
}

function makeSigner(kind: Kind, application = "ssh:"): Signer {
  const app = Buffer.from(application);
  let pair: { publicKey: KeyObject; privateKey: KeyObject };
  let blob: Buffer;
  if (kind === "ed25519" || kind === "sk-ed25519") {
    pair = generateKeyPairSync("ed25519");
    const x = wireString(jwkBytes(pair.publicKey, "x"));
    blob =
      kind === "ed25519"
        ? Buffer.concat([wireString("ssh-ed25519"), x])
        : Buffer.concat([wireString("sk-ssh-ed25519@openssh.com"), x, wireString(app)]);
  } else if (kind === "sk-ecdsa" || kind === "webauthn") {
    pair = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const q = Buffer.concat([Buffer.of(4), jwkBytes(pair.publicKey, "x"), jwkBytes(pair.publicKey, "y")]);
    blob = Buffer.concat([
      wireString("sk-ecdsa-sha2-nistp256@openssh.com"),
      wireString("nistp256"),
      wireString(q),
      wireString(app),
    ]);
  } else {
    pair = generateKeyPairSync("rsa", { modulusLength: 2048 });
    blob = Buffer.concat([
      wireString("ssh-rsa"),
      mpint(jwkBytes(pair.publicKey, "e")),
      mpint(jwkBytes(pair.publicKey, "n")),
    ]);
  }
  const type = blob.subarray(4, 4 + blob.readUInt32BE(0)).toString();
  return {
    kind,
    key: parsePublicKey(`${type} ${blob.toString("base64")} test`),
    private: pair.privateKey,
    application: app,
  };
}

function ecdsaSig(priv: KeyObject, data: Buffer): Buffer {
  const rs = sign("sha256", data, { key: priv, dsaEncoding: "ieee-p1363" });
  return wireString(Buffer.concat([mpint(rs.subarray(0, 32)), mpint(rs.subarray(32))]));
}

interface SignOptions {
  namespace?: string;
  hash?: string;
  flags?: number;
  counter?: number;
  /** Rewrites the client data of a WebAuthn signature (the challenge it names). */
  clientData?: (data: Buffer) => string;
  version?: number;
  trailing?: Buffer;
}

function signSshsig(signer: Signer, message: string, opts: SignOptions = {}): string {
  const namespace = opts.namespace ?? "relay-shell-consent";
  const hash = opts.hash ?? "sha512";
  const flags = opts.flags ?? 0x01;
  const counter = opts.counter ?? 42;
  const digest = createHash(hash === "sha256" ? "sha256" : "sha512")
    .update(message)
    .digest();
  const data = Buffer.concat([
    MAGIC,
    wireString(namespace),
    wireString(""),
    wireString(hash),
    wireString(digest),
  ]);
  let sigBlob: Buffer;
  switch (signer.kind) {
    case "ed25519":
      sigBlob = Buffer.concat([wireString("ssh-ed25519"), wireString(sign(null, data, signer.private))]);
      break;
    case "sk-ed25519": {
      const signed = skSignedData(signer.application, flags, counter, Buffer.alloc(0), data);
      sigBlob = Buffer.concat([
        wireString("sk-ssh-ed25519@openssh.com"),
        wireString(sign(null, signed, signer.private)),
        Buffer.of(flags),
        wireU32(counter),
      ]);
      break;
    }
    case "sk-ecdsa": {
      const signed = skSignedData(signer.application, flags, counter, Buffer.alloc(0), data);
      sigBlob = Buffer.concat([
        wireString("sk-ecdsa-sha2-nistp256@openssh.com"),
        ecdsaSig(signer.private, signed),
        Buffer.of(flags),
        wireU32(counter),
      ]);
      break;
    }
    case "webauthn": {
      const origin = "https://relay.example";
      const clientData = Buffer.from(
        opts.clientData?.(data) ??
          `{"type":"webauthn.get","challenge":"${data.toString("base64url")}","origin":"${origin}","crossOrigin":false}`,
      );
      const signed = skSignedData(signer.application, flags, counter, Buffer.alloc(0), clientData);
      sigBlob = Buffer.concat([
        wireString("webauthn-sk-ecdsa-sha2-nistp256@openssh.com"),
        ecdsaSig(signer.private, signed),
        Buffer.of(flags),
        wireU32(counter),
        wireString(origin),
        wireString(clientData),
        wireString(""),
      ]);
      break;
    }
    case "rsa-sha1":
    case "rsa-sha256": {
      const [name, algo] = signer.kind === "rsa-sha1" ? ["ssh-rsa", "sha1"] : ["rsa-sha2-256", "sha256"];
      sigBlob = Buffer.concat([wireString(name), wireString(sign(algo, data, signer.private))]);
      break;
    }
  }
  const raw = Buffer.concat([
    MAGIC,
    wireU32(opts.version ?? 1),
    wireString(signer.key.blob),
    wireString(namespace),
    wireString(""),
    wireString(hash),
    wireString(sigBlob),
    opts.trailing ?? Buffer.alloc(0),
  ]);
  const lines = raw.toString("base64").match(/.{1,70}/g) ?? [];
  return `-----BEGIN SSH SIGNATURE-----\n${lines.join("\n")}\n-----END SSH SIGNATURE-----\n`;
}

const NS = "relay-shell-consent";
const NOW = Date.UTC(2026, 5, 15, 12, 0, 0);
const keyText = (s: Signer) => `${s.key.type} ${s.key.blob.toString("base64")}`;

describe("FIDO user presence", () => {
  for (const kind of ["sk-ed25519", "sk-ecdsa", "webauthn"] as const) {
    describe(kind, () => {
      const signer = makeSigner(kind);

      it("a touched signature verifies and reports presence and the counter", () => {
        expect(
          verifySshsigWithKey(signSshsig(signer, "act", { flags: 0x05, counter: 7 }), "act", NS, signer.key),
        ).toEqual({
          ok: true,
          value: {
            key: { fingerprint: signer.key.fingerprint, type: signer.key.type },
            userPresent: true,
            counter: 7,
          },
        });
      });

      it("a genuine signature without the user-presence flag is refused, and says why", () => {
        for (const flags of [0x00, 0x04]) {
          const verdict = verifySshsigWithKey(signSshsig(signer, "act", { flags }), "act", NS, signer.key);
          expect(verdict).toEqual({
            ok: false,
            error: {
              failure: "no-user-presence",
              reason: `${signer.key.type} key ${signer.key.fingerprint}: the FIDO signature was made without user presence (the authenticator was not touched)`,
            },
          });
        }
      });

      it("binds the FIDO application: the same key pair under another application does not verify", () => {
        const head = signer.key.blob.subarray(0, signer.key.blob.length - 4 - signer.application.length);
        const blob = Buffer.concat([head, wireString("ssh:other")]);
        const relabelled = {
          ...signer,
          key: parsePublicKey(`${signer.key.type} ${blob.toString("base64")}`),
        };
        const verdict = verifySshsigWithKey(signSshsig(relabelled, "act"), "act", NS, relabelled.key);
        expect(verdict).toMatchObject({ ok: false, error: { failure: "bad-signature" } });
      });
    });
  }

  it("a WebAuthn signature whose client data names another challenge or type is refused", () => {
    const signer = makeSigner("webauthn");
    const other = Buffer.from("SSHSIG-other-data").toString("base64url");
    const variants = [
      () => `{"type":"webauthn.get","challenge":"${other}","origin":"https://relay.example"}`,
      (d: Buffer) =>
        `{"type":"webauthn.create","challenge":"${d.toString("base64url")}","origin":"https://relay.example"}`,
      (d: Buffer) =>
        `{"challenge":"${d.toString("base64url")}","type":"webauthn.get","origin":"https://relay.example"}`,
      (d: Buffer) =>
        `{"type":"webauthn.get","challenge":"${d.toString("base64url")}","origin":"https://evil.example"}`,
    ];
    for (const clientData of variants) {
      const verdict = verifySshsigWithKey(signSshsig(signer, "act", { clientData }), "act", NS, signer.key);
      expect(verdict).toMatchObject({ ok: false, error: { failure: "bad-signature" } });
    }
  });
});

describe("signature algorithms", () => {
  it("refuses an RSA signature over SHA-1 (ssh-rsa) and accepts rsa-sha2-256", () => {
    const signer = makeSigner("rsa-sha1");
    expect(verifySshsigWithKey(signSshsig(signer, "act"), "act", NS, signer.key)).toMatchObject({
      ok: false,
      error: {
        failure: "unsupported-type",
        reason: expect.stringContaining("RSA signatures over SHA-1 (ssh-rsa) are refused"),
      },
    });
    const modern = { ...signer, kind: "rsa-sha256" as const };
    expect(verifySshsigWithKey(signSshsig(modern, "act"), "act", NS, signer.key)).toMatchObject({ ok: true });
  });

  it("refuses hashes other than sha256 and sha512, other versions and trailing bytes", () => {
    const signer = makeSigner("ed25519");
    expect(verifySshsigWithKey(signSshsig(signer, "m", { hash: "sha256" }), "m", NS, signer.key).ok).toBe(
      true,
    );
    expect(verifySshsigWithKey(signSshsig(signer, "m", { hash: "sha1" }), "m", NS, signer.key)).toMatchObject(
      { error: { failure: "unsupported-hash" } },
    );
    expect(verifySshsigWithKey(signSshsig(signer, "m", { version: 2 }), "m", NS, signer.key)).toMatchObject({
      error: { failure: "unsupported-version" },
    });
    expect(
      verifySshsigWithKey(signSshsig(signer, "m", { trailing: Buffer.of(0) }), "m", NS, signer.key),
    ).toMatchObject({ error: { failure: "malformed", reason: "signature has 1 trailing bytes" } });
  });

  it("refuses bad armor with a precise reason and an empty namespace", () => {
    const signer = makeSigner("ed25519");
    const good = signSshsig(signer, "m");
    const cases: [string, string][] = [
      ["", "bad-armor"],
      [good.replace("BEGIN", "BEGUN"), "bad-armor"],
      [good.replace("-----END SSH SIGNATURE-----", ""), "bad-armor"],
      [good.replace(/\n([A-Za-z])/, "\n!$1"), "bad-armor"],
      [
        `-----BEGIN SSH SIGNATURE-----\n${Buffer.from("NOTSIG0000").toString("base64")}\n-----END SSH SIGNATURE-----`,
        "bad-armor",
      ],
      ["x".repeat(70_000), "too-large"],
    ];
    for (const [armored, failure] of cases) {
      expect(verifySshsigWithKey(armored, "m", NS, signer.key)).toMatchObject({
        ok: false,
        error: { failure },
      });
    }
    expect(verifySshsigWithKey(good, "m", "", signer.key)).toMatchObject({
      ok: false,
      error: {
        failure: "wrong-namespace",
      },
    });
    expect(verifySshsigWithKey(null as unknown as string, "m", NS, signer.key)).toMatchObject({ ok: false });
  });
});

it("refuses armor whose base64 sets the spare bits of its last group (one signature, two texts)", () => {
  const signer = makeSigner("ed25519");
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  let tested = 0;
  for (const namespace of ["a", "ab", "abc"]) {
    const good = signSshsig(signer, "m", { namespace });
    const at = good.indexOf("=");
    if (at < 0) continue;
    expect(verifySshsigWithKey(good, "m", namespace, signer.key).ok).toBe(true);
    const spare = alphabet[alphabet.indexOf(good[at - 1] ?? "") ^ 1] ?? "";
    const twin = `${good.slice(0, at - 1)}${spare}${good.slice(at)}`;
    // Node decodes both texts to the same bytes; the verifier accepts only the canonical one.
    const decode = (s: string) =>
      Buffer.from(s.replace(/-----[A-Z ]+-----/g, "").replace(/\s/g, ""), "base64");
    expect(decode(twin).equals(decode(good))).toBe(true);
    expect(verifySshsigWithKey(twin, "m", namespace, signer.key)).toMatchObject({
      ok: false,
      error: {
        failure: "bad-armor",
      },
    });
    tested++;
  }
  expect(tested).toBeGreaterThan(0);
});

describe("verifySshsig against allowed signers", () => {
  const alice = makeSigner("ed25519");
  const bob = makeSigner("sk-ed25519");
  const mallory = makeSigner("ed25519");
  const file = [
    `alice@example.com,ops@example.com ${keyText(alice)}`,
    `"bob@example.com" namespaces="file,git" ${keyText(bob)}`,
    `bob@example.com namespaces="relay-*",valid-after="20260101Z",valid-before="20261231Z" ${keyText(bob)}`,
  ].join("\n");
  const { signers, problems } = parseAllowedSigners(file);

  it("admits a listed key and names the principal and line", () => {
    expect(problems).toEqual([]);
    const verdict = verifySshsig(signSshsig(alice, "payload"), "payload", {
      namespace: NS,
      signers,
      now: NOW,
    });
    expect(verdict).toEqual({
      ok: true,
      value: {
        principal: "alice@example.com,ops@example.com",
        line: 1,
        key: { fingerprint: alice.key.fingerprint, type: "ssh-ed25519" },
        userPresent: false,
      },
    });
    expect(
      verifySshsig(signSshsig(alice, "payload"), "payload", {
        namespace: NS,
        signers,
        now: NOW,
        principal: "ops@example.com",
      }),
    ).toMatchObject({ ok: true, value: { principal: "ops@example.com" } });
  });

  it("uses the first line whose options admit the signature", () => {
    const verdict = verifySshsig(signSshsig(bob, "payload"), "payload", { namespace: NS, signers, now: NOW });
    expect(verdict).toMatchObject({
      ok: true,
      value: { line: 3, principal: "bob@example.com", userPresent: true },
    });
  });

  it("refuses an unknown key, another principal, a namespace outside the option, and outside the window", () => {
    const sig = signSshsig(bob, "payload");
    expect(
      verifySshsig(signSshsig(mallory, "payload"), "payload", { namespace: NS, signers, now: NOW }),
    ).toEqual({
      ok: false,
      error: {
        failure: "unknown-key",
        reason: `ssh-ed25519 key ${mallory.key.fingerprint} is not an allowed signer`,
      },
    });
    expect(
      verifySshsig(signSshsig(alice, "payload"), "payload", {
        namespace: NS,
        signers,
        now: NOW,
        principal: "mallory@example.com",
      }),
    ).toMatchObject({ ok: false, error: { failure: "principal-not-allowed" } });
    const otherNs = signSshsig(bob, "payload", { namespace: "other" });
    expect(verifySshsig(otherNs, "payload", { namespace: "other", signers, now: NOW })).toEqual({
      ok: false,
      error: {
        failure: "namespace-not-allowed",
        reason: `key ${bob.key.fingerprint} (allowed-signers line 2) may sign only in namespaces "file,git", not "other"`,
      },
    });
    expect(
      verifySshsig(sig, "payload", { namespace: NS, signers, now: Date.UTC(2025, 11, 31, 23, 59, 59) }),
    ).toEqual({
      ok: false,
      error: {
        failure: "namespace-not-allowed",
        reason: `key ${bob.key.fingerprint} (allowed-signers line 2) may sign only in namespaces "file,git", not "${NS}"`,
      },
    });
    const onlyLine3 = signers.filter((s) => s.line === 3);
    expect(
      verifySshsig(sig, "payload", {
        namespace: NS,
        signers: onlyLine3,
        now: Date.UTC(2025, 11, 31, 23, 59, 59),
      }),
    ).toEqual({
      ok: false,
      error: {
        failure: "not-yet-valid",
        reason: `key ${bob.key.fingerprint} (allowed-signers line 3) is not valid before 2026-01-01T00:00:00Z`,
      },
    });
    expect(
      verifySshsig(sig, "payload", { namespace: NS, signers: onlyLine3, now: Date.UTC(2026, 11, 31) }),
    ).toMatchObject({
      ok: true,
    });
    expect(
      verifySshsig(sig, "payload", {
        namespace: NS,
        signers: onlyLine3,
        now: Date.UTC(2026, 11, 31, 0, 0, 1),
      }),
    ).toEqual({
      ok: false,
      error: {
        failure: "expired",
        reason: `key ${bob.key.fingerprint} (allowed-signers line 3) expired at 2026-12-31T00:00:00Z`,
      },
    });
  });

  it("refuses when the time to check against is not a number, even for a line without a window", () => {
    for (const now of [Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(
        verifySshsig(signSshsig(alice, "payload"), "payload", { namespace: NS, signers, now }),
      ).toMatchObject({
        ok: false,
        error: {
          failure: "bad-policy",
        },
      });
    }
  });

  it("random text and random bytes in armor never throw and never verify", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 300 }), fc.uint8Array({ maxLength: 600 })), (input) => {
        const armored =
          typeof input === "string"
            ? input
            : `-----BEGIN SSH SIGNATURE-----\n${Buffer.from(input).toString("base64")}\n-----END SSH SIGNATURE-----`;
        expect(verifySshsig(armored, "payload", { namespace: NS, signers, now: NOW }).ok).toBe(false);
        expect(verifySshsigWithKey(armored, "payload", NS, alice.key).ok).toBe(false);
      }),
      { numRuns: 300 },
    );
    // An envelope that is SSHSIG down to its last field, with random bytes where the signature goes.
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (tail) => {
        const raw = Buffer.concat([
          Buffer.from("SSHSIG"),
          wireU32(1),
          wireString(alice.key.blob),
          wireString(NS),
          wireString(""),
          wireString("sha512"),
          wireString(Buffer.from(tail)),
        ]);
        const armored = `-----BEGIN SSH SIGNATURE-----\n${raw.toString("base64")}\n-----END SSH SIGNATURE-----`;
        expect(verifySshsig(armored, "payload", { namespace: NS, signers, now: NOW }).ok).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it("refuses a tampered message before it looks at the signers", () => {
    expect(
      verifySshsig(signSshsig(alice, "payload"), "payloae", { namespace: NS, signers, now: NOW }),
    ).toMatchObject({
      ok: false,
      error: {
        failure: "bad-signature",
      },
    });
  });

  it("a signature made in one namespace never passes in another", () => {
    expect(
      verifySshsig(signSshsig(alice, "payload", { namespace: "git" }), "payload", {
        namespace: NS,
        signers,
        now: NOW,
      }),
    ).toMatchObject({ ok: false, error: { failure: "wrong-namespace" } });
  });
});
