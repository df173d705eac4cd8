import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { loadProfiles, MAX_PROFILE_BYTES, MAX_PROFILES } from "./profiles.js";

const root = mkdtempSync(join(tmpdir(), "relay-profiles-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const IS_ROOT = process.geteuid?.() === 0;
/** A uid no file here belongs to: the daemon's own account in these tests. */
const DAEMON_UID = 4242;

let n = 0;
let dir: string;
let pins: string;
let sources: string;

beforeEach(() => {
  const base = join(root, `case-${n++}`);
  dir = join(base, "profiles");
  pins = join(base, "pins");
  sources = join(base, "src");
  for (const d of [dir, pins, join(sources, "site"), join(sources, "conf")]) {
    mkdirSync(d, { recursive: true, mode: 0o755 });
    chmodSync(d, 0o755);
  }
  writeFileSync(
    join(pins, "known_hosts"),
    "[127.0.0.1]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample\n",
    {
      mode: 0o644,
    },
  );
});

function valid(): Record<string, unknown> {
  return {
    host: "127.0.0.1",
    port: 2222,
    user: "deploy",
    source_roots: [join(sources, "site"), join(sources, "conf")],
    remote_root: "backups",
    known_hosts: join(pins, "known_hosts"),
    credential: "backup-key",
    allowed_principals: { uids: [1000] },
    approval: "none",
    receiver: "rrsync",
  };
}

function write(id: string, value: unknown, mode = 0o644): string {
  const file = join(dir, `${id}.json`);
  writeFileSync(file, typeof value === "string" ? value : JSON.stringify(value), { mode });
  chmodSync(file, mode);
  return file;
}

function problemsOf(id: string, daemonUid = DAEMON_UID): string[] {
  const set = loadProfiles(dir, { daemonUid });
  expect(set.profiles.has(id)).toBe(false);
  const broken = set.broken.get(id);
  expect(broken).toBeDefined();
  return broken?.problems ?? [];
}

describe("loadProfiles", () => {
  it("reads a valid profile with its defaults filled in", () => {
    const file = write("backup", valid());
    const set = loadProfiles(dir, { daemonUid: DAEMON_UID });
    expect(set.broken.size).toBe(0);
    expect(set.profiles.get("backup")).toEqual({
      id: "backup",
      file,
      enabled: true,
      host: "127.0.0.1",
      port: 2222,
      user: "deploy",
      sourceRoots: [join(sources, "site"), join(sources, "conf")],
      remoteRoot: "backups",
      knownHostsFile: join(pins, "known_hosts"),
      credentialId: "backup-key",
      limits: { timeoutSeconds: 300, outputBytes: 1024 * 1024, transferBytes: 1024 ** 3, fileCount: 10_000 },
      allowedPrincipals: { uids: [1000], gids: [] },
      approval: "none",
      receiver: "rrsync",
      requireDryRun: true,
    });
  });

  it("ignores files that are not *.json and reports every *.json", () => {
    write("good", valid());
    writeFileSync(join(dir, "README"), "not a profile");
    writeFileSync(join(dir, "good.json.bak"), "{");
    const set = loadProfiles(dir, { daemonUid: DAEMON_UID });
    expect([...set.profiles.keys()]).toEqual(["good"]);
    expect(set.broken.size).toBe(0);
  });

  it("refuses a file writable by group or others", () => {
    write("loose", valid(), 0o666);
    expect(problemsOf("loose")).toEqual([
      expect.stringMatching(/loose\.json is writable by group or others \(mode 0666\)/),
    ]);
  });

  it("refuses every profile of a directory writable by others", () => {
    write("a", valid());
    write("b", valid());
    chmodSync(dir, 0o777);
    for (const id of ["a", "b"]) {
      expect(problemsOf(id)).toEqual([
        expect.stringMatching(/^directory .* is writable by group or others \(mode 0777\)$/),
      ]);
    }
  });

  it("refuses a symbolic link without following it", () => {
    const target = join(root, `target-${n}.json`);
    writeFileSync(target, JSON.stringify(valid()), { mode: 0o644 });
    symlinkSync(target, join(dir, "link.json"));
    expect(problemsOf("link")).toEqual([expect.stringMatching(/link\.json is a symbolic link/)]);
  });

  it.runIf(IS_ROOT)("refuses a file or directory owned by the daemon's own account", () => {
    const file = write("mine", valid());
    chownSync(file, DAEMON_UID, 0);
    expect(problemsOf("mine")).toEqual([
      expect.stringMatching(/mine\.json is owned by the daemon's own uid 4242/),
    ]);
    chownSync(file, 0, 0);
    chownSync(dir, DAEMON_UID, 0);
    expect(problemsOf("mine")).toEqual([
      expect.stringMatching(/^directory .* is owned by the daemon's own uid 4242$/),
    ]);
  });

  it.runIf(IS_ROOT)("refuses a file owned by neither root nor the directory's owner", () => {
    const file = write("other", valid());
    chownSync(file, 5151, 0);
    expect(problemsOf("other")).toEqual([
      expect.stringMatching(/owned by uid 5151, neither root nor the owner/),
    ]);
  });

  it.runIf(IS_ROOT)("accepts a daemon running as root reading root's files", () => {
    write("rooted", valid());
    expect(loadProfiles(dir, { daemonUid: 0 }).profiles.has("rooted")).toBe(true);
  });

  it("refuses unknown keys at every level, naming them", () => {
    write("extra", { ...valid(), hosts: ["x"], limits: { timeout_seconds: 5, retries: 3 } });
    expect(problemsOf("extra")).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^unknown key "hosts"$/),
        expect.stringMatching(/^unknown key "retries" in limits$/),
      ]),
    );
  });

  it("names the key of a schema error", () => {
    write("bad", { ...valid(), port: 70_000, approval: "maybe" });
    const problems = problemsOf("bad");
    expect(problems).toEqual(
      expect.arrayContaining([expect.stringMatching(/^port: /), expect.stringMatching(/^approval: /)]),
    );
  });

  it("refuses '..' in a source root and in the remote root", () => {
    write("dots", { ...valid(), source_roots: [`${sources}/../etc`], remote_root: "backups/../../etc" });
    expect(problemsOf("dots")).toEqual([
      "source_roots.0: must not contain a '..' component",
      "remote_root: must not contain a '..' component",
    ]);
  });

  it.each([
    ["/abs", "no leading '/'"],
    ["-e", "must not start with '-'"],
    ["a b", "is not a plain name"],
    ["a/*", "is not a plain name"],
    ["a//b", "is not a plain name"],
  ])("refuses the remote root %j", (remoteRoot, why) => {
    write("remote", { ...valid(), remote_root: remoteRoot });
    expect(problemsOf("remote").join("\n")).toContain(why);
  });

  it("accepts '.' as the remote root", () => {
    write("dot", { ...valid(), remote_root: "." });
    expect(loadProfiles(dir, { daemonUid: DAEMON_UID }).profiles.get("dot")?.remoteRoot).toBe(".");
  });

  it("refuses source roots that are missing, relative, links, files or share a base name", () => {
    mkdirSync(join(root, `elsewhere-${n}`, "site"), { recursive: true });
    symlinkSync(join(sources, "site"), join(sources, "alias"));
    writeFileSync(join(sources, "file"), "x");
    write("roots", {
      ...valid(),
      source_roots: [
        join(sources, "site"),
        join(sources, "missing"),
        "relative/dir",
        join(sources, "alias"),
        join(sources, "file"),
        join(root, `elsewhere-${n}`, "site"),
      ],
    });
    expect(problemsOf("roots")).toEqual(["source_roots.2: must be an absolute path"]);
    write("roots", {
      ...valid(),
      source_roots: [
        join(sources, "site"),
        join(sources, "missing"),
        join(sources, "alias"),
        join(sources, "file"),
        join(root, `elsewhere-${n}`, "site"),
      ],
    });
    expect(problemsOf("roots")).toEqual([
      `source_roots: ${join(sources, "missing")} does not exist`,
      `source_roots: ${join(sources, "alias")} is a symbolic link; name the directory it points to`,
      `source_roots: ${join(sources, "file")} is not a directory`,
      `source_roots: ${join(root, `elsewhere-${n}`, "site")} and ${join(sources, "site")} share the base name "site"`,
    ]);
  });

  it("refuses a source root reached through a symbolic link higher up", () => {
    symlinkSync(sources, join(root, `via-${n}`));
    write("via", { ...valid(), source_roots: [join(root, `via-${n}`, "site")] });
    expect(problemsOf("via")).toEqual([expect.stringMatching(/passes through a symbolic link/)]);
  });

  it("refuses a missing or loosely held pin file", () => {
    write("nopin", { ...valid(), known_hosts: join(pins, "absent") });
    expect(problemsOf("nopin")).toEqual([`known_hosts: ${join(pins, "absent")} does not exist`]);
    chmodSync(join(pins, "known_hosts"), 0o666);
    write("loosepin", valid());
    expect(problemsOf("loosepin")).toEqual([
      expect.stringMatching(/^known_hosts: .* writable by group or others/),
    ]);
  });

  it("refuses a pin path rsync's -e would split", () => {
    write("spaced", { ...valid(), known_hosts: "/etc/relay shell/known_hosts" });
    expect(problemsOf("spaced")).toEqual([
      expect.stringMatching(/^known_hosts: must not contain whitespace/),
    ]);
  });

  it("requires at least one allowed principal", () => {
    write("nobody", { ...valid(), allowed_principals: { uids: [], gids: [] } });
    expect(problemsOf("nobody")).toEqual(["allowed_principals: must name at least one uid or gid"]);
  });

  it("reports bad JSON, a bad file name and an oversized file", () => {
    write("broken", "{ not json");
    expect(problemsOf("broken")).toEqual([expect.stringMatching(/broken\.json is not valid JSON/)]);
    write("Bad.Name", valid());
    expect(problemsOf("Bad.Name")).toEqual([expect.stringMatching(/is not <id>\.json/)]);
    write("huge", JSON.stringify({ ...valid(), pad: "x".repeat(MAX_PROFILE_BYTES) }));
    expect(problemsOf("huge")).toEqual([expect.stringMatching(/more than the 65536 accepted/)]);
  });

  it("lists every problem of one file together", () => {
    write("many", { ...valid(), colour: "red", remote_root: "../x" }, 0o646);
    const problems = problemsOf("many");
    expect(problems).toHaveLength(3);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/writable by group or others/),
        'unknown key "colour"',
        "remote_root: must not contain a '..' component",
      ]),
    );
  });

  it("reports profiles past the bound as broken instead of dropping them", () => {
    for (let i = 0; i <= MAX_PROFILES; i++) write(`p${String(i).padStart(4, "0")}`, valid());
    const set = loadProfiles(dir, { daemonUid: DAEMON_UID });
    expect(set.profiles.size).toBe(MAX_PROFILES);
    expect([...set.broken.values()]).toEqual([
      expect.objectContaining({
        id: `p${String(MAX_PROFILES).padStart(4, "0")}`,
        problems: [expect.stringMatching(/more than 256/)],
      }),
    ]);
  });

  it("throws, naming the directory, when it cannot be listed", () => {
    expect(() => loadProfiles(join(root, "no-such-dir"), { daemonUid: DAEMON_UID })).toThrow(
      /profile directory .*no-such-dir cannot be read \(ENOENT\)/,
    );
  });
});
