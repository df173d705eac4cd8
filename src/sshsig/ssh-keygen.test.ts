import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllowedSigners, parsePublicKey, type SshPublicKey, verifySshsig } from "./index.js";

/*
 * Real OpenSSH: keys made and messages signed by ssh-keygen, then checked
 * by this verifier and by `ssh-keygen -Y verify`, which must agree.
 */
const NS = "relay-shell-consent";
const haveKeygen = spawnSync("ssh-keygen", ["-?"], { encoding: "utf8" }).error === undefined;

const KEYS = [
  { name: "ed25519", args: ["-t", "ed25519"] },
  { name: "ecdsa256", args: ["-t", "ecdsa", "-b", "256"] },
  { name: "ecdsa384", args: ["-t", "ecdsa", "-b", "384"] },
  { name: "ecdsa521", args: ["-t", "ecdsa", "-b", "521"] },
  { name: "rsa3072", args: ["-t", "rsa", "-b", "3072"] },
] as const;

let dir = "";
const pub = new Map<string, SshPublicKey>();
const sig = new Map<string, string>();
const payload = '{"act":{"tool":"shell_exec"},"nonce":"00112233445566778899aabbccddeeff"}';
const now = () => Date.now();

function keygen(args: string[], input?: string): { status: number | null; stdout: string; stderr: string } {
  const out = spawnSync("ssh-keygen", args, { input: input ?? "", encoding: "utf8", timeout: 30_000 });
  return { status: out.status, stdout: out.stdout, stderr: out.stderr };
}

function signWith(name: string, message: string, namespace = NS): string {
  const path = join(dir, `msg-${name}-${namespace}`);
  writeFileSync(path, message);
  const out = keygen(["-Y", "sign", "-n", namespace, "-f", join(dir, name), path]);
  if (out.status !== 0) throw new Error(`ssh-keygen -Y sign: ${out.stderr}`);
  return readFileSync(`${path}.sig`, "utf8");
}

const principal = (name: string) => `${name}@relay.test`;

/** What ssh-keygen says about a signature: true for "Good signature". */
function keygenVerifies(
  allowed: string,
  who: string,
  namespace: string,
  armored: string,
  message: string,
): boolean {
  const file = join(dir, `allowed-${Math.random().toString(36).slice(2)}`);
  const sigFile = `${file}.sig`;
  writeFileSync(file, allowed);
  writeFileSync(sigFile, armored);
  const out = keygen(["-Y", "verify", "-f", file, "-I", who, "-n", namespace, "-s", sigFile], message);
  return out.status === 0;
}

describe.skipIf(!haveKeygen)("signatures made by ssh-keygen", () => {
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "relay-sshsig-"));
    for (const k of KEYS) {
      const made = keygen(["-q", ...k.args, "-N", "", "-C", principal(k.name), "-f", join(dir, k.name)]);
      if (made.status !== 0) throw new Error(`ssh-keygen: ${made.stderr}`);
      pub.set(k.name, parsePublicKey(readFileSync(join(dir, `${k.name}.pub`), "utf8")));
      sig.set(k.name, signWith(k.name, payload));
    }
  }, 120_000);
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const keyLine = (name: string, options = "") => {
    const key = pub.get(name);
    if (!key) throw new Error(`no key ${name}`);
    return `${principal(name)}${options ? ` ${options}` : ""} ${key.type} ${key.blob.toString("base64")}`;
  };
  const allKeys = () => KEYS.map((k) => keyLine(k.name, `namespaces="${NS}"`)).join("\n");

  for (const k of KEYS) {
    describe(k.name, () => {
      it("has the fingerprint ssh-keygen -l prints", () => {
        const listed = keygen(["-l", "-E", "sha256", "-f", join(dir, `${k.name}.pub`)]).stdout.split(" ")[1];
        expect(pub.get(k.name)?.fingerprint).toBe(listed);
      });

      it("verifies through an allowed-signers file, for its principal", () => {
        const { signers, problems } = parseAllowedSigners(`# ops\n${allKeys()}\n`);
        expect(problems).toEqual([]);
        const verdict = verifySshsig(sig.get(k.name) ?? "", payload, {
          namespace: NS,
          signers,
          now: now(),
          principal: principal(k.name),
        });
        expect(verdict).toMatchObject({
          ok: true,
          value: {
            principal: principal(k.name),
            key: { fingerprint: pub.get(k.name)?.fingerprint, type: pub.get(k.name)?.type },
            userPresent: false,
          },
        });
      });

      it("is refused: unknown key, excluded namespace, expired, tampered message, another principal", () => {
        const armored = sig.get(k.name) ?? "";
        const others = KEYS.filter((o) => o.name !== k.name).map((o) => keyLine(o.name));
        const cases: { allowed: string; message?: string; who?: string; failure: string }[] = [
          { allowed: others.join("\n"), failure: "unknown-key" },
          { allowed: keyLine(k.name, 'namespaces="git,file"'), failure: "namespace-not-allowed" },
          { allowed: keyLine(k.name, 'namespaces="*,!relay-shell-*"'), failure: "namespace-not-allowed" },
          { allowed: keyLine(k.name, 'valid-before="20200101Z"'), failure: "expired" },
          { allowed: keyLine(k.name, 'valid-after="29991231Z"'), failure: "not-yet-valid" },
          { allowed: keyLine(k.name), message: `${payload} `, failure: "bad-signature" },
          {
            allowed: keyLine(k.name),
            message: payload.replace("shell_exec", "shell_exed"),
            failure: "bad-signature",
          },
          { allowed: keyLine(k.name), who: "someone@relay.test", failure: "principal-not-allowed" },
        ];
        for (const c of cases) {
          const verdict = verifySshsig(armored, c.message ?? payload, {
            namespace: NS,
            signers: parseAllowedSigners(c.allowed).signers,
            now: now(),
            principal: c.who ?? principal(k.name),
          });
          expect(verdict, c.allowed).toMatchObject({ ok: false, error: { failure: c.failure } });
          // ssh-keygen agrees: each of these is a refusal there too.
          expect(
            keygenVerifies(c.allowed, c.who ?? principal(k.name), NS, armored, c.message ?? payload),
          ).toBe(false);
        }
      });

      it("agrees with ssh-keygen -Y verify on a genuine signature, and in another namespace", () => {
        const allowed = keyLine(k.name);
        expect(keygenVerifies(allowed, principal(k.name), NS, sig.get(k.name) ?? "", payload)).toBe(true);
        const gitSig = signWith(k.name, payload, "git");
        const signers = parseAllowedSigners(allowed).signers;
        for (const namespace of [NS, "git"]) {
          const ours = verifySshsig(gitSig, payload, {
            namespace,
            signers,
            now: now(),
            principal: principal(k.name),
          });
          expect(ours.ok).toBe(keygenVerifies(allowed, principal(k.name), namespace, gitSig, payload));
          expect(ours.ok).toBe(namespace === "git");
        }
      });
    });
  }

  it("reads allowed-signers lines as ssh-keygen does: quotes, patterns, negation, option case, times", () => {
    const key = pub.get("ed25519");
    if (!key) throw new Error("no key");
    const k = `${key.type} ${key.blob.toString("base64")}`;
    const lines = [
      `"ops team@relay.test" ${k}`,
      `*@relay.test,!eve@relay.test ${k}`,
      `ann?relay.test ${k}`,
      `ann@relay.test NAMESPACES="relay-*" ${k}`,
      `ann@relay.test namespaces="git,file" ${k}`,
      `ann@relay.test namespaces=relay-shell-consent ${k}`,
      `ann@relay.test cert-authority ${k}`,
      `ann@relay.test valid-after="20200101",Valid-Before="20990101" ${k}`,
      `ann@relay.test valid-before="20200101Z" ${k}`,
      `ann@relay.test valid-after="20990101" ${k}`,
      `ann@relay.test valid-after="20990101",valid-before="20200101" ${k}`,
      `ann@relay.test frobnicate ${k}`,
      `ann@relay.test namespaces="relay-shell-consent" valid-after="20200101" ${k}`,
    ];
    const who = ["ops team@relay.test", "ann@relay.test", "eve@relay.test", "annXrelay.test"];
    const armored = sig.get("ed25519") ?? "";
    let agreed = 0;
    let admitted = 0;
    for (const line of lines) {
      for (const principal of who) {
        const ours = verifySshsig(armored, payload, {
          namespace: NS,
          signers: parseAllowedSigners(line).signers,
          now: now(),
          principal,
        });
        expect(ours.ok, `${line} / ${principal}`).toBe(keygenVerifies(line, principal, NS, armored, payload));
        agreed++;
        if (ours.ok) admitted++;
      }
    }
    expect(agreed).toBe(lines.length * who.length);
    // The table admits some and refuses most; a verifier that refused everything would not pass it.
    expect(admitted).toBeGreaterThanOrEqual(6);
  });

  it("hostile mutations of a signature never throw and never verify", () => {
    const signers = parseAllowedSigners(allKeys()).signers;
    const armoredOf = (raw: Buffer) =>
      `-----BEGIN SSH SIGNATURE-----\n${(raw.toString("base64").match(/.{1,70}/g) ?? []).join("\n")}\n-----END SSH SIGNATURE-----\n`;
    const decoded = (armored: string) =>
      Buffer.from(armored.replace(/-----[A-Z ]+-----/g, "").replace(/\s/g, ""), "base64");
    const mutation = fc.oneof(
      // flip bits of one byte of the binary signature
      fc.record({ kind: fc.constant("flip" as const), at: fc.nat(), bits: fc.integer({ min: 1, max: 255 }) }),
      // cut the binary signature short
      fc.record({ kind: fc.constant("cut" as const), at: fc.nat(), bits: fc.constant(0) }),
      // set a length field (any aligned u32) to a hostile value
      fc.record({
        kind: fc.constant("length" as const),
        at: fc.nat(),
        bits: fc.constantFrom(0, 1, 0x7fffffff, 0xffffffff, 65),
      }),
      // truncate or garble the armored text itself
      fc.record({ kind: fc.constant("armor-cut" as const), at: fc.nat(), bits: fc.constant(0) }),
      fc.record({
        kind: fc.constant("armor-char" as const),
        at: fc.nat(),
        bits: fc.integer({ min: 0, max: 255 }),
      }),
    );
    fc.assert(
      fc.property(fc.constantFrom(...KEYS.map((k) => k.name)), mutation, (name, m) => {
        const armored = sig.get(name) ?? "";
        const raw = decoded(armored);
        let hostile: string;
        switch (m.kind) {
          case "flip": {
            const bad = Buffer.from(raw);
            const at = m.at % bad.length;
            bad[at] = (bad[at] ?? 0) ^ m.bits;
            hostile = armoredOf(bad);
            break;
          }
          case "cut":
            hostile = armoredOf(raw.subarray(0, m.at % raw.length));
            break;
          case "length": {
            const bad = Buffer.from(raw);
            const at = 10 + (m.at % Math.max(1, bad.length - 14));
            if (bad.readUInt32BE(at) === m.bits) return;
            bad.writeUInt32BE(m.bits, at);
            hostile = armoredOf(bad);
            break;
          }
          case "armor-cut":
            hostile = armored.slice(0, m.at % armored.length);
            // Cutting only the trailing newline leaves a whole signature, which must verify.
            if (hostile.trimEnd() === armored.trimEnd()) return;
            break;
          case "armor-char": {
            const at = m.at % armored.length;
            const c = String.fromCharCode(m.bits);
            if (armored[at] === c || /\s/.test(c) || /\s/.test(armored[at] ?? "")) return;
            hostile = armored.slice(0, at) + c + armored.slice(at + 1);
            break;
          }
        }
        let verdict: ReturnType<typeof verifySshsig> | undefined;
        expect(() => {
          verdict = verifySshsig(hostile, payload, { namespace: NS, signers, now: now() });
        }).not.toThrow();
        expect(verdict?.ok).toBe(false);
      }),
      { numRuns: 400 },
    );
  });
});
