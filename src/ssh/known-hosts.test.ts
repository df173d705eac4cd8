import { execFileSync } from "node:child_process";
import {
  appendFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import ssh2 from "ssh2";
import { afterAll, describe, expect, it } from "vitest";
import { RelayError, wildcardMatch } from "../core/index.js";
import { createHostKeyGuard } from "./host-key.js";
import {
  entryMatches,
  fingerprintOf,
  formatHashedHost,
  formatKnownHostsLine,
  keyTypeOfBlob,
  knownHostsName,
  parseKnownHosts,
  patternListMatches,
} from "./known-hosts.js";
import { createKnownHostsStore } from "./known-hosts-store.js";

const { utils } = ssh2;

function newKey(type: "ed25519" | "ecdsa" = "ed25519"): { blob: Buffer; b64: string; type: string } {
  const pair =
    type === "ed25519"
      ? utils.generateKeyPairSync("ed25519")
      : utils.generateKeyPairSync("ecdsa", { bits: 256 });
  const [kind = "", b64 = ""] = pair.public.trim().split(/\s+/);
  return { blob: Buffer.from(b64, "base64"), b64, type: kind };
}

const dir = mkdtempSync(join(tmpdir(), "relay-kh-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let fileCount = 0;
const tempFile = (text = "") => {
  const path = join(dir, `known_hosts_${fileCount++}`);
  if (text !== "") writeFileSync(path, text);
  return path;
};

describe("known_hosts format", () => {
  const a = newKey();
  const b = newKey("ecdsa");

  it("files port 22 under the bare host and other ports as [host]:port", () => {
    expect(knownHostsName("Web1.Example.com", 22)).toBe("web1.example.com");
    expect(knownHostsName("10.0.0.5", 2222)).toBe("[10.0.0.5]:2222");
    expect(knownHostsName("[::1]", 2200)).toBe("[::1]:2200");
  });

  it("parses plain, bracketed, marked and commented lines and skips junk", () => {
    const text = [
      "# comment",
      "",
      `web1,10.0.0.5 ${a.type} ${a.b64} comment here`,
      `[10.0.0.6]:2222 ${b.type} ${b.b64}`,
      `@revoked bad.example ${a.type} ${a.b64}`,
      `@cert-authority *.example ${a.type} ${a.b64}`,
      `@weird x ${a.type} ${a.b64}`,
      "onlyhost",
      `mismatch ssh-rsa ${a.b64}`,
      `\r`,
    ].join("\n");
    const parsed = parseKnownHosts(text, "f");
    expect(parsed.entries.map((e) => [e.marker, e.patterns, e.keyType, e.line])).toEqual([
      ["", ["web1", "10.0.0.5"], a.type, 3],
      ["", ["[10.0.0.6]:2222"], b.type, 4],
      ["revoked", ["bad.example"], a.type, 5],
      ["cert-authority", ["*.example"], a.type, 6],
    ]);
    expect(parsed.skipped).toBe(3);
  });

  it("matches wildcards and negations the OpenSSH way", () => {
    expect(wildcardMatch("*.example.com", "web.example.com")).toBe(true);
    expect(wildcardMatch("web?", "web1")).toBe(true);
    expect(wildcardMatch("web?", "web12")).toBe(false);
    expect(patternListMatches(["*.example.com", "!db.example.com"], "db.example.com")).toBe(false);
    expect(patternListMatches(["*.example.com", "!db.example.com"], "web.example.com")).toBe(true);
    expect(patternListMatches(["[10.0.0.*]:2222"], "[10.0.0.9]:2222")).toBe(true);
    expect(patternListMatches(["[10.0.0.*]:2222"], "10.0.0.9")).toBe(false);
  });

  it("stays fast on a pattern built to backtrack", () => {
    const pattern = `${"*a".repeat(200)}b`;
    const started = performance.now();
    expect(wildcardMatch(pattern, "a".repeat(5000))).toBe(false);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it("wildcard matching agrees with a reference regex on random input", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[ab*?]{0,8}$/), fc.stringMatching(/^[ab]{0,10}$/), (pattern, text) => {
        const regex = new RegExp(`^${pattern.replace(/\*/g, ".*").replace(/\?/g, ".")}$`);
        expect(wildcardMatch(pattern, text)).toBe(regex.test(text));
      }),
    );
  });

  it("hashes host names as HMAC-SHA1 with the salt, compatible with ssh-keygen -H", () => {
    const hashed = formatHashedHost("[127.0.0.1]:2222");
    const entry = parseKnownHosts(`${hashed} ${a.type} ${a.b64}`).entries[0];
    expect(entry?.hashed).not.toBeNull();
    expect(entryMatches(entry!, "[127.0.0.1]:2222")).toBe(true);
    expect(entryMatches(entry!, "127.0.0.1")).toBe(false);
  });

  it.skipIf(!existsSync("/usr/bin/ssh-keygen"))("reads entries hashed by OpenSSH itself", () => {
    const path = tempFile(`[127.0.0.1]:2222 ${a.type} ${a.b64}\nplain.example ${b.type} ${b.b64}\n`);
    execFileSync("/usr/bin/ssh-keygen", ["-H", "-f", path], { stdio: "ignore" });
    const text = readFileSync(path, "utf8");
    expect(text).not.toContain("127.0.0.1");
    const store = createKnownHostsStore({ pinFile: path });
    expect(store.lookup("127.0.0.1", 2222, a.blob).kind).toBe("match");
    expect(store.lookup("plain.example", 22, b.blob).kind).toBe("match");
    expect(store.lookup("127.0.0.1", 22, a.blob).kind).toBe("unknown");
    expect(store.lookup("127.0.0.1", 2222, b.blob).kind).toBe("changed");
  });

  it("reads the key type from the blob and prints ssh-keygen fingerprints", () => {
    expect(keyTypeOfBlob(a.blob)).toBe("ssh-ed25519");
    expect(keyTypeOfBlob(Buffer.from([0, 0]))).toBe("");
    expect(fingerprintOf(a.blob)).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
  });

  it("refuses to write a host that could smuggle a second line in", () => {
    expect(() => formatKnownHostsLine("evil\n* ssh-ed25519 AAAA", 22, a.blob)).toThrow(/unsafe host/);
    expect(() => formatKnownHostsLine("a b", 22, a.blob)).toThrow(/unsafe host/);
    expect(() => formatKnownHostsLine("a,b", 22, a.blob)).toThrow(/unsafe host/);
    expect(formatKnownHostsLine("10.0.0.5", 2222, a.blob)).toBe(`[10.0.0.5]:2222 ${a.type} ${a.b64}`);
  });
});

describe("known_hosts store and host-key guard", () => {
  const key = newKey();
  const other = newKey();
  const ecdsa = newKey("ecdsa");

  it("sees every change another writer makes to a file it read before, even one of the same size", () => {
    const k1 = newKey();
    const k2 = newKey();
    const pinFile = tempFile(`web1 ${k1.type} ${k1.b64}\n`);
    const store = createKnownHostsStore({ pinFile });
    expect(store.lookup("web1", 22, k1.blob).kind).toBe("match");
    // Replaced by rename with a line of the same length: a new inode, the same size.
    const next = tempFile(`web1 ${k2.type} ${k2.b64}\n`);
    renameSync(next, pinFile);
    expect(store.lookup("web1", 22, k1.blob).kind).toBe("changed");
    expect(store.lookup("web1", 22, k2.blob).kind).toBe("match");
    appendFileSync(pinFile, `web2 ${k1.type} ${k1.b64}\n`);
    expect(store.lookup("web2", 22, k1.blob).kind).toBe("match");
    rmSync(pinFile);
    expect(store.lookup("web1", 22, k2.blob).kind).toBe("unknown");
  });

  it("learns a key on first contact, pins it port-aware, then verifies it", () => {
    const pinFile = join(dir, "sub", "dir", "known_hosts");
    const store = createKnownHostsStore({ pinFile });
    const guard = createHostKeyGuard(store, { host: "127.0.0.1", port: 2222, mode: "accept-new" });
    expect(guard.algorithms()).toBeUndefined();
    expect(guard.verify(key.blob)).toBe(true);
    // Nothing is written before the handshake completed.
    expect(existsSync(pinFile)).toBe(false);
    expect(guard.settle()).toMatchObject({
      status: "learned",
      mode: "accept-new",
      fingerprint: fingerprintOf(key.blob),
    });
    expect(readFileSync(pinFile, "utf8")).toBe(`[127.0.0.1]:2222 ${key.type} ${key.b64}\n`);

    const again = createHostKeyGuard(store, { host: "127.0.0.1", port: 2222, mode: "strict" });
    expect(again.verify(key.blob)).toBe(true);
    expect(again.settle().status).toBe("verified");
    expect(again.algorithms()?.[0]).toBe("ssh-ed25519");
    // The same address on another port is another host.
    expect(store.lookup("127.0.0.1", 22, key.blob).kind).toBe("unknown");
  });

  it("refuses a CHANGED key with the pinned file, line and both fingerprints", () => {
    const pinFile = tempFile(`# mine\n[h.example]:2200 ${key.type} ${key.b64}\n`);
    const store = createKnownHostsStore({ pinFile });
    for (const mode of ["accept-new", "strict"] as const) {
      const guard = createHostKeyGuard(store, { host: "h.example", port: 2200, mode });
      expect(guard.verify(other.blob)).toBe(false);
      const err = guard.rejection();
      expect(err).toBeInstanceOf(RelayError);
      expect(err?.type).toBe("HostKeyNotVerifiable");
      expect(err?.code).toBe("host_key_changed");
      expect(err?.message).toContain("has CHANGED");
      expect(err?.message).toContain(`${pinFile}:2`);
      expect(err?.message).toContain(fingerprintOf(key.blob));
      expect(err?.message).toContain(fingerprintOf(other.blob));
    }
    // A key of another type for a pinned host counts as a change too.
    const guard = createHostKeyGuard(store, { host: "h.example", port: 2200, mode: "accept-new" });
    expect(guard.verify(ecdsa.blob)).toBe(false);
    expect(readFileSync(pinFile, "utf8").split("\n").filter(Boolean)).toHaveLength(2);
  });

  it("strict refuses unknown hosts and writes nothing", () => {
    const pinFile = tempFile();
    const store = createKnownHostsStore({ pinFile });
    const guard = createHostKeyGuard(store, { host: "new.example", port: 22, mode: "strict" });
    expect(guard.verify(key.blob)).toBe(false);
    expect(guard.rejection()?.code).toBe("host_key_unknown");
    expect(guard.rejection()?.message).toContain("known_hosts=strict");
    expect(existsSync(pinFile)).toBe(false);
  });

  it("ignore admits anything, checks nothing, writes nothing", () => {
    const pinFile = tempFile(`x.example ${key.type} ${key.b64}\n`);
    const store = createKnownHostsStore({ pinFile });
    const guard = createHostKeyGuard(store, { host: "x.example", port: 22, mode: "ignore" });
    expect(guard.verify(other.blob)).toBe(true);
    expect(guard.settle()).toMatchObject({ status: "unchecked", mode: "ignore" });
    expect(readFileSync(pinFile, "utf8")).toBe(`x.example ${key.type} ${key.b64}\n`);
  });

  it("honours @revoked and trusts read-only files without writing to them", () => {
    const readOnly = tempFile(`ro.example ${key.type} ${key.b64}\n@revoked * ${other.type} ${other.b64}\n`);
    const pinFile = tempFile();
    const store = createKnownHostsStore({ pinFile, readOnlyFiles: [readOnly] });
    expect(store.lookup("ro.example", 22, key.blob).kind).toBe("match");
    const guard = createHostKeyGuard(store, { host: "anything.example", port: 22, mode: "accept-new" });
    expect(guard.verify(other.blob)).toBe(false);
    expect(guard.rejection()?.code).toBe("host_key_revoked");
  });

  it("pins once when two dials learned the same host, and detects a race with a different key", () => {
    const pinFile = tempFile(`no-newline.example ssh-ed25519 ${key.b64}`);
    const store = createKnownHostsStore({ pinFile });
    const first = createHostKeyGuard(store, { host: "race.example", port: 22, mode: "accept-new" });
    const second = createHostKeyGuard(store, { host: "race.example", port: 22, mode: "accept-new" });
    const third = createHostKeyGuard(store, { host: "race.example", port: 22, mode: "accept-new" });
    expect(first.verify(key.blob)).toBe(true);
    expect(second.verify(key.blob)).toBe(true);
    expect(third.verify(other.blob)).toBe(true);
    first.settle();
    second.settle();
    expect(() => third.settle()).toThrow(/CHANGED while connecting/);
    const lines = readFileSync(pinFile, "utf8").split("\n").filter(Boolean);
    // The hand-written last line kept its own line; the host was pinned once.
    expect(lines).toEqual([
      `no-newline.example ssh-ed25519 ${key.b64}`,
      `race.example ${key.type} ${key.b64}`,
    ]);
  });
});
