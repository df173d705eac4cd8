import { spawn, spawnSync } from "node:child_process";
import {
  constants,
  createHash,
  sign as cryptoSign,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
} from "node:crypto";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { isoCBOR } from "@simplewebauthn/server/helpers";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { fileCounters, memoryCounters } from "./passkey-counters.js";
import { passkeyChallenge, passkeyVerifierOver } from "./passkey-verifier.js";
import { type Passkey, type PasskeyAlgorithm, parsePasskeys } from "./passkeys.js";
import type { StoredApproval } from "./types.js";

const RP_ID = "localhost";
const ORIGIN = "http://localhost:8443";
const PAYLOAD = '{"bound":{"command":"touch canary"},"request":"abc","tier":2,"tool":"shell_exec","v":1}';

const root = mkdtempSync(join(tmpdir(), "relay-passkey-"));
chmodSync(root, 0o755);
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface AssertOptions {
  payload?: string;
  challenge?: string;
  origin?: string;
  rpId?: string;
  type?: string;
  flags?: number;
  counter?: number;
  extraClientData?: Record<string, unknown>;
  /** Sign with this key instead of the authenticator's own. */
  signWith?: KeyObject;
}

/**
 * A software authenticator: a node:crypto key pair, its COSE_Key, and
 * assertions built byte by byte as a WebAuthn authenticator and browser
 * would (authenticatorData ‖ sha256(clientDataJSON), signed).
 */
function authenticator(algorithm: PasskeyAlgorithm, name = `key${algorithm}`) {
  const pair =
    algorithm === -7
      ? generateKeyPairSync("ec", { namedCurve: "P-256" })
      : algorithm === -8
        ? generateKeyPairSync("ed25519")
        : generateKeyPairSync("rsa", { modulusLength: 2048 });
  const jwk = pair.publicKey.export({ format: "jwk" });
  const b = (s: string | undefined) => new Uint8Array(Buffer.from(s ?? "", "base64url"));
  const coseKey =
    algorithm === -7
      ? new Map<number, number | Uint8Array>([
          [1, 2],
          [3, -7],
          [-1, 1],
          [-2, b(jwk.x)],
          [-3, b(jwk.y)],
        ])
      : algorithm === -8
        ? new Map<number, number | Uint8Array>([
            [1, 1],
            [3, -8],
            [-1, 6],
            [-2, b(jwk.x)],
          ])
        : new Map<number, number | Uint8Array>([
            [1, 3],
            [3, -257],
            [-1, b(jwk.n)],
            [-2, b(jwk.e)],
          ]);
  const credentialId = randomBytes(16).toString("base64url");
  let counter = 0;
  const publicKeyCose = Buffer.from(isoCBOR.encode(coseKey)).toString("base64url");
  return {
    name,
    credentialId,
    privateKey: pair.privateKey,
    line: () =>
      JSON.stringify({
        name,
        credential_id: credentialId,
        public_key: publicKeyCose,
        algorithm,
        transports: ["internal"],
        created: "2026-12-01T10:00:00.000Z",
      }),
    assert(o: AssertOptions = {}): string {
      counter = o.counter ?? counter + 1;
      const clientData = Buffer.from(
        JSON.stringify({
          type: o.type ?? "webauthn.get",
          challenge: o.challenge ?? passkeyChallenge(o.payload ?? PAYLOAD),
          origin: o.origin ?? ORIGIN,
          crossOrigin: false,
          ...o.extraClientData,
        }),
      );
      const count = Buffer.alloc(4);
      count.writeUInt32BE(counter);
      const authData = Buffer.concat([
        createHash("sha256")
          .update(o.rpId ?? RP_ID)
          .digest(),
        Buffer.from([o.flags ?? 0x05]),
        count,
      ]);
      const signed = Buffer.concat([authData, createHash("sha256").update(clientData).digest()]);
      const key = o.signWith ?? pair.privateKey;
      const signature =
        algorithm === -7
          ? cryptoSign("sha256", signed, { key, dsaEncoding: "der" })
          : algorithm === -8
            ? cryptoSign(null, signed, key)
            : cryptoSign("sha256", signed, { key, padding: constants.RSA_PKCS1_PADDING });
      return JSON.stringify({
        credential_id: credentialId,
        authenticator_data: authData.toString("base64url"),
        client_data_json: clientData.toString("base64url"),
        signature: signature.toString("base64url"),
        user_handle: null,
      });
    },
  };
}

type Authenticator = ReturnType<typeof authenticator>;

function approval(proof: string, channel: StoredApproval["channel"] = "passkey"): StoredApproval {
  return { channel, proof, claimedSigner: "someone", at: 0 };
}

/** A verifier over an in-memory table of the given authenticators' lines, parsed as the file would be. */
function verifierFor(keys: Authenticator[], counters = memoryCounters()) {
  const table = new Map<string, Passkey>(
    parsePasskeys(keys.map((k) => k.line()).join("\n"), "test").passkeys.map((p) => [p.credentialId, p]),
  );
  return {
    table,
    verifier: passkeyVerifierOver({ current: () => table }, { rpId: RP_ID, origin: ORIGIN, counters }),
  };
}

const ALGORITHMS: PasskeyAlgorithm[] = [-7, -8, -257];
const KEYS = new Map(ALGORITHMS.map((a) => [a, authenticator(a)]));
const key = (a: PasskeyAlgorithm) => KEYS.get(a) as Authenticator;

describe.each(ALGORITHMS)("a passkey approval with COSE algorithm %i", (algorithm) => {
  it("verifies a genuine assertion over the payload and names the passkey", async () => {
    const k = key(algorithm);
    const { verifier } = verifierFor([k]);
    expect(await verifier.verify(approval(k.assert()), PAYLOAD, 0)).toEqual({
      ok: true,
      value: {
        signer: k.name,
        key: `passkey:${k.credentialId}`,
        channel: "passkey",
      },
    });
  });

  it("refuses a signature that is not the key's", async () => {
    const k = key(algorithm);
    const { verifier } = verifierFor([k]);
    const stranger = authenticator(algorithm);
    const forged = await verifier.verify(approval(k.assert({ signWith: stranger.privateKey })), PAYLOAD, 0);
    expect(forged).toEqual({ ok: false, error: `the signature does not verify with passkey ${k.name}` });
    const proof = JSON.parse(k.assert()) as Record<string, string>;
    const sig = Buffer.from(proof.signature as string, "base64url");
    sig[sig.length - 1] = (sig[sig.length - 1] ?? 0) ^ 0x01;
    proof.signature = sig.toString("base64url");
    expect((await verifier.verify(approval(JSON.stringify(proof)), PAYLOAD, 0)).ok).toBe(false);
  });
});

describe("what a passkey approval binds", () => {
  const k = key(-7);

  it("refuses an assertion over another payload (its challenge)", async () => {
    const { verifier } = verifierFor([k]);
    const other = PAYLOAD.replace("touch canary", "rm -f canary");
    expect(await verifier.verify(approval(k.assert({ payload: other })), PAYLOAD, 0)).toEqual({
      ok: false,
      error: "the assertion's challenge is not the digest of this act's payload",
    });
    // The challenge is the digest's exact base64url: padded or hex spellings are other strings.
    const digest = createHash("sha256").update(PAYLOAD).digest();
    for (const challenge of [
      `${digest.toString("base64url")}=`,
      digest.toString("base64"),
      digest.toString("hex"),
    ]) {
      expect((await verifier.verify(approval(k.assert({ challenge })), PAYLOAD, 0)).ok).toBe(false);
    }
  });

  it("refuses another origin, a cross-origin frame, an embedded frame and a registration", async () => {
    const { verifier } = verifierFor([k]);
    const proofs = [
      k.assert({ origin: "http://localhost:8444" }),
      k.assert({ origin: "https://localhost:8443" }),
      k.assert({ extraClientData: { crossOrigin: true } }),
      k.assert({ extraClientData: { topOrigin: ORIGIN } }),
      k.assert({ type: "webauthn.create" }),
    ];
    const refusals = await Promise.all(proofs.map((proof) => verifier.verify(approval(proof), PAYLOAD, 0)));
    expect(refusals).toEqual([
      { ok: false, error: `the assertion was made at origin "http://localhost:8444", not ${ORIGIN}` },
      { ok: false, error: `the assertion was made at origin "https://localhost:8443", not ${ORIGIN}` },
      { ok: false, error: "the assertion was made in a cross-origin frame" },
      { ok: false, error: "the assertion was made in an embedded frame (topOrigin)" },
      { ok: false, error: 'clientDataJSON type is "webauthn.create", not "webauthn.get"' },
    ]);
  });

  it("refuses another relying party, and an assertion without user presence or verification", async () => {
    const { verifier } = verifierFor([k]);
    expect(await verifier.verify(approval(k.assert({ rpId: "evil.example" })), PAYLOAD, 0)).toEqual({
      ok: false,
      error: `the assertion is not for relying party ${RP_ID}`,
    });
    expect(await verifier.verify(approval(k.assert({ flags: 0x04 })), PAYLOAD, 0)).toEqual({
      ok: false,
      error: "the authenticator did not see the user (UP unset)",
    });
    expect(await verifier.verify(approval(k.assert({ flags: 0x01 })), PAYLOAD, 0)).toEqual({
      ok: false,
      error: "the authenticator did not verify the user (UV unset)",
    });
    expect((await verifier.verify(approval(k.assert({ flags: 0x45 })), PAYLOAD, 0)).ok).toBe(true);
  });

  it("refuses an unknown credential and one revoked after enrolment", async () => {
    const stranger = authenticator(-7, "stranger");
    const { verifier, table } = verifierFor([k]);
    const unknown = await verifier.verify(approval(stranger.assert()), PAYLOAD, 0);
    expect(unknown).toEqual({
      ok: false,
      error: `credential ${stranger.credentialId} is not in the passkeys file (never enrolled or revoked)`,
    });
    const proof = k.assert();
    table.delete(k.credentialId);
    expect((await verifier.verify(approval(proof), PAYLOAD, 0)).ok).toBe(false);
  });

  it("refuses an approval given on another channel", async () => {
    const { verifier } = verifierFor([k]);
    expect(await verifier.verify(approval(k.assert(), "sshsig"), PAYLOAD, 0)).toEqual({
      ok: false,
      error: "an approval given by sshsig is not a passkey assertion",
    });
  });
});

describe("the sign counter", () => {
  it("must increase from one assertion to the next when the authenticator keeps one", async () => {
    const k = authenticator(-8);
    const { verifier } = verifierFor([k]);
    // Each assertion is for another act: Ed25519 is deterministic, and the very same bytes are one assertion.
    const act = (n: number) => PAYLOAD.replace("canary", `canary-${n}`);
    const verify = async (counter: number, n: number) =>
      await verifier.verify(approval(k.assert({ counter, payload: act(n) })), act(n), 0);
    expect((await verify(5, 1)).ok).toBe(true);
    expect(await verify(5, 2)).toEqual({
      ok: false,
      error: `the sign counter of passkey ${k.name} did not increase (5, last seen 5): a copy of the authenticator may be in use`,
    });
    expect((await verify(4, 3)).ok).toBe(false);
    expect((await verify(0, 4)).ok).toBe(false);
    expect((await verify(6, 5)).ok).toBe(true);
  });

  it("is not compared when the authenticator keeps none (always zero)", async () => {
    const k = authenticator(-7);
    const { verifier } = verifierFor([k]);
    for (let i = 0; i < 3; i++)
      expect((await verifier.verify(approval(k.assert({ counter: 0 })), PAYLOAD, 0)).ok).toBe(true);
  });

  it("lets the same accepted assertion be checked again (console, then gate)", async () => {
    const k = authenticator(-7);
    const { verifier } = verifierFor([k]);
    const proof = k.assert({ counter: 9 });
    expect((await verifier.verify(approval(proof), PAYLOAD, 0)).ok).toBe(true);
    expect((await verifier.verify(approval(k.assert({ counter: 10 })), PAYLOAD, 0)).ok).toBe(true);
    expect((await verifier.verify(approval(proof), PAYLOAD, 0)).ok).toBe(true);
  });

  it("is kept in a 0600 file that other verifiers share, and a broken file refuses", async () => {
    const dir = join(root, "counters");
    mkdirSync(dir, { mode: 0o700 });
    const path = join(dir, "passkey-counters.json");
    const k = authenticator(-7);
    const first = verifierFor([k], fileCounters(path)).verifier;
    const proof = k.assert({ counter: 7 });
    expect((await first.verify(approval(proof), PAYLOAD, 0)).ok).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const table = JSON.parse(readFileSync(path, "utf8")) as { counters: unknown; accepted: unknown[] };
    expect(table.counters).toEqual({ [k.credentialId]: 7 });
    expect(table.accepted).toHaveLength(1);
    // Another verifier (the gate after the console, another process, a restart) sees what the first saw:
    // the same assertion passes again, another one with the same counter does not.
    const second = verifierFor([k], fileCounters(path)).verifier;
    expect((await second.verify(approval(proof), PAYLOAD, 0)).ok).toBe(true);
    const otherAct = PAYLOAD.replace("canary", "other");
    expect(
      await second.verify(approval(k.assert({ counter: 7, payload: otherAct })), otherAct, 0),
    ).toMatchObject({
      ok: false,
      error: expect.stringContaining("did not increase (7, last seen 7)"),
    });
    writeFileSync(path, "{not json");
    const refused = await second.verify(approval(k.assert({ counter: 8 })), PAYLOAD, 0);
    expect(refused).toEqual({
      ok: false,
      error: `the passkey sign counters cannot be used: the passkey counters file ${path} is not JSON`,
    });
  });

  it("does not let one passkey's accepted assertion excuse another's counter", async () => {
    const a = authenticator(-8, "a");
    const b = authenticator(-8, "b");
    const { verifier } = verifierFor([a, b]);
    const otherAct = PAYLOAD.replace("canary", "other");
    expect(
      (await verifier.verify(approval(b.assert({ counter: 5, payload: otherAct })), otherAct, 0)).ok,
    ).toBe(true);
    expect((await verifier.verify(approval(a.assert({ counter: 3 })), PAYLOAD, 0)).ok).toBe(true);
    // b's bytes to sign are now exactly a's (same rpId, flags, counter, client data): still b's counter 5 decides.
    expect(await verifier.verify(approval(b.assert({ counter: 3 })), PAYLOAD, 0)).toMatchObject({
      ok: false,
      error: expect.stringContaining("did not increase (3, last seen 5)"),
    });
  });
});

describe("hostile proofs", () => {
  const k = key(-7);
  const { verifier } = verifierFor([k]);
  const genuine = JSON.parse(k.assert({ counter: 0 })) as Record<string, unknown>;
  const b64 = fc.uint8Array({ maxLength: 80 }).map((u) => Buffer.from(u).toString("base64url"));
  const anyValue = fc.oneof(
    fc.string(),
    b64,
    fc.integer(),
    fc.constant(null),
    fc.array(fc.string()),
    fc.object(),
  );

  it("never throw and never verify: arbitrary text, objects, and a genuine proof with one field replaced", async () => {
    const field = fc.constantFrom("credential_id", "authenticator_data", "client_data_json", "signature");
    const hostile = fc.oneof(
      fc.string(),
      fc.json(),
      fc
        .dictionary(fc.constantFrom(...Object.keys(genuine), "extra"), anyValue)
        .map((o) => JSON.stringify(o)),
      fc.tuple(field, fc.oneof(anyValue, b64)).map(([f, v]) => JSON.stringify({ ...genuine, [f]: v })),
    );
    await fc.assert(
      fc.asyncProperty(hostile, async (proof) => {
        fc.pre(proof !== JSON.stringify(genuine));
        const result = await verifier.verify(approval(proof), PAYLOAD, 0);
        expect(result.ok).toBe(false);
      }),
      { numRuns: 500 },
    );
  });

  it("refuse a proof too large to be one before parsing it", async () => {
    const result = await verifier.verify(approval(" ".repeat(70_000)), PAYLOAD, 0);
    expect(result).toEqual({ ok: false, error: "the proof is over 65536 characters" });
  });
});

describe("the passkeys file's lines", () => {
  const good = key(-7);
  const parse = (text: string) => () => parsePasskeys(text, "pk");

  it("ignores blank lines and comments and parses each algorithm's key", () => {
    const text = ["# operator passkeys", "", ...ALGORITHMS.map((a) => key(a).line()), "   "].join("\n");
    const passkeys = parsePasskeys(text, "pk").passkeys;
    expect(passkeys.map((p) => [p.name, p.algorithm, p.publicKey.asymmetricKeyType])).toEqual([
      ["key-7", -7, "ec"],
      ["key-8", -8, "ed25519"],
      ["key-257", -257, "rsa"],
    ]);
  });

  it("names every problem with its line", () => {
    const line = JSON.parse(good.line()) as Record<string, unknown>;
    const text = [
      "{not json",
      JSON.stringify({ ...line, name: "", credential_id: "a+b/", algorithm: -35 }),
      JSON.stringify({ ...line, public_key: "pQECAyYgASFYIA" }),
      JSON.stringify({ ...line, algorithm: -8 }),
      JSON.stringify({ ...line, created: "yesterday", transports: "usb" }),
      good.line(),
      JSON.stringify({ ...line, name: "other" }),
      JSON.stringify({
        ...line,
        name: "trailing",
        public_key: Buffer.concat([
          Buffer.from(line.public_key as string, "base64url"),
          Buffer.from([0]),
        ]).toString("base64url"),
      }),
      JSON.stringify({ ...line, credential_id: randomBytes(16).toString("base64url") }),
    ].join("\n");
    expect(parse(text)).toThrow(
      [
        "pk:1: not JSON",
        "pk:2: name: expected 1..128 printable characters without surrounding blanks",
        "pk:2: credential_id: expected base64url of 1..1023 bytes",
        "pk:2: algorithm: expected -7 (ES256), -8 (EdDSA) or -257 (RS256)",
        "pk:3: public_key: not CBOR",
      ].join("; "),
    );
    const messages = (() => {
      try {
        parsePasskeys(text, "pk");
        return "";
      } catch (err) {
        return (err as Error).message;
      }
    })();
    expect(messages).toContain("pk:4: public_key: the key is for COSE algorithm -7, not -8");
    expect(messages).toContain("pk:5: transports: expected an array of strings");
    expect(messages).toContain("pk:5: created: expected an ISO 8601 date and time");
    expect(messages).toContain("pk:7: credential_id already enrolled on line 6");
    expect(messages).toContain(`pk:8: public_key: bytes follow the COSE_Key`);
    expect(messages).toContain(`pk:9: name "${good.name}" already used on line 6`);
  });
});

const RUNUSER = "/usr/sbin/runuser";
const DIST = join(import.meta.dirname, "..", "..", "dist", "consent", "index.js");
const NOBODY_SKIP =
  process.getuid?.() !== 0
    ? "it runs a verifier as nobody: run as root"
    : spawnSync(RUNUSER, ["--help"]).error !== undefined
      ? `${RUNUSER} is not installed (util-linux)`
      : !existsSync(DIST)
        ? "it loads the built module: run npm run build first"
        : null;
if (NOBODY_SKIP) process.stderr.write(`[skipped] the passkeys file as nobody: ${NOBODY_SKIP}\n`);

/**
 * The real passkeys file, checked as the relay's account would check it:
 * a verifier from the built module runs as `nobody` and answers one line
 * per proof it is sent, while this (root) process edits the file between.
 */
function verifierAsNobody(path: string) {
  const script = `
    const { createPasskeyVerifier, memoryCounters } = await import(${JSON.stringify(DIST)});
    const { createInterface } = await import("node:readline");
    let verifier;
    try {
      verifier = createPasskeyVerifier(${JSON.stringify(path)}, { selfUid: process.getuid(), rpId: "${RP_ID}", origin: "${ORIGIN}", counters: memoryCounters() });
      process.stdout.write(JSON.stringify({ started: true }) + "\\n");
    } catch (err) {
      process.stdout.write(JSON.stringify({ started: false, error: err.message }) + "\\n");
      process.exit(0);
    }
    for await (const line of createInterface({ input: process.stdin })) {
      const { proof, payload } = JSON.parse(line);
      process.stdout.write(JSON.stringify(await verifier.verify({ channel: "passkey", proof, claimedSigner: "x", at: 0 }, payload, 0)) + "\\n");
    }
  `;
  const child = spawn(
    RUNUSER,
    ["-u", "nobody", "--", process.execPath, "--input-type=module", "-e", script],
    {
      stdio: ["pipe", "pipe", "inherit"],
    },
  );
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async () =>
    JSON.parse(((await lines.next()).value as string) ?? "null") as Record<string, unknown>;
  return {
    next,
    async verify(proof: string) {
      child.stdin.write(`${JSON.stringify({ proof, payload: PAYLOAD })}\n`);
      return next();
    },
    close: () => child.stdin.end(),
  };
}

describe.skipIf(NOBODY_SKIP !== null)("the passkeys file, read by a relay running as nobody", () => {
  it("revokes a deleted line, refuses a file or directory that became writable by the relay, and recovers when fixed", async () => {
    const dir = join(root, "anchors");
    mkdirSync(dir, { mode: 0o755 });
    const path = join(dir, "passkeys");
    const alice = authenticator(-7, "alice-laptop");
    const bob = authenticator(-8, "bob-phone");
    writeFileSync(path, `${alice.line()}\n${bob.line()}\n`, { mode: 0o644 });
    const relay = verifierAsNobody(path);
    try {
      expect(await relay.next()).toEqual({ started: true });
      expect(await relay.verify(alice.assert())).toMatchObject({
        ok: true,
        value: { signer: "alice-laptop" },
      });
      writeFileSync(path, `${bob.line()}\n`);
      expect(await relay.verify(alice.assert())).toMatchObject({
        ok: false,
        error: expect.stringContaining("revoked"),
      });
      expect(await relay.verify(bob.assert())).toMatchObject({ ok: true, value: { signer: "bob-phone" } });
      chownSync(path, 65534, 65534);
      expect(await relay.verify(bob.assert())).toEqual({
        ok: false,
        error: `the passkeys file cannot be trusted now: ${path} is owned by the relay's own uid 65534, which could rewrite it; ${path} is writable by the relay's process (uid 65534)`,
      });
      chownSync(path, 0, 0);
      chmodSync(path, 0o666);
      expect(await relay.verify(bob.assert())).toMatchObject({
        ok: false,
        error: expect.stringContaining("is writable by group and others (mode 0666)"),
      });
      chmodSync(path, 0o644);
      expect(await relay.verify(bob.assert())).toMatchObject({ ok: true, value: { signer: "bob-phone" } });
      // The file itself is untouched; the directory holding it became writable by everyone.
      chmodSync(dir, 0o777);
      expect(await relay.verify(bob.assert())).toMatchObject({
        ok: false,
        error: expect.stringContaining(`directory ${dir} is writable by group and others`),
      });
      chmodSync(dir, 0o755);
      expect(await relay.verify(bob.assert())).toMatchObject({ ok: true, value: { signer: "bob-phone" } });
    } finally {
      relay.close();
    }
  });

  it("refuses to start on a file the relay could write", async () => {
    const dir = join(root, "loose");
    mkdirSync(dir, { mode: 0o755 });
    const path = join(dir, "passkeys");
    writeFileSync(path, `${key(-7).line()}\n`, { mode: 0o644 });
    chmodSync(path, 0o646);
    const relay = verifierAsNobody(path);
    const started = await relay.next();
    relay.close();
    expect(started).toMatchObject({ started: false, error: expect.stringContaining("writable by others") });
  });
});
