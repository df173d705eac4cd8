import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  announceSkip,
  createSshFixture,
  SSHD_MISSING,
  type Sshd,
  type SshFixture,
} from "../fixtures/sshd.js";
import { startServer, type TestServer } from "../helpers/server.js";

announceSkip("SSH notices suite");

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const MAX_OUTPUT = 8192;

interface Fanout {
  host_count: number;
  results: Array<{ host: string; exit_code: number | null; output: string }>;
  notices?: string[];
}

/** Host-key notices and fan-out notices through the built server against real OpenSSH servers. */
describe.skipIf(SSHD_MISSING)("SSH notices", () => {
  let fx: SshFixture;
  let fleet: Sshd;
  let s: TestServer;
  let canaries: string;
  const port = (i: number) => fleet.ports[i] ?? 0;

  beforeAll(async () => {
    fx = createSshFixture();
    fleet = await fx.start({ ports: 4 });
    const host = (p: number, extra: Record<string, unknown> = {}) => ({
      hostname: "127.0.0.1",
      port: p,
      user: fx.user,
      ...extra,
    });
    const inventory = join(fx.dir, "inventory.json");
    writeFileSync(
      inventory,
      JSON.stringify({
        fresh: host(port(0)),
        lab: host(port(1), { known_hosts: "ignore" }),
        lab2: host(port(2), { known_hosts: "ignore" }),
        pinned: host(port(3)),
      }),
    );
    canaries = join(fx.dir, "canaries");
    mkdirSync(canaries);
    chmodSync(canaries, 0o777);
    s = await startServer({
      HOME: fx.home,
      USER: fx.user,
      RELAY_SHELL_INVENTORY: inventory,
      RELAY_SHELL_SSH_CONFIG: join(fx.dir, "no-ssh-config"),
      RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(fx.dir, "known_hosts"),
      RELAY_SHELL_MAX_OUTPUT: String(MAX_OUTPUT),
    });
  });
  afterAll(async () => {
    await s?.close();
    fx?.close();
  });

  it("a key learned on first contact is said once; later verified calls say nothing", async () => {
    const first = await s.call("ssh_exec", { host: "fresh", command: "echo hi" });
    expect(first.text).toBe(
      `[exit 0]\nhi\n\n[NOTICE ssh first contact with 127.0.0.1:${port(0)}: key learned and pinned ` +
        "(known_hosts=accept-new); later connections must present the same key]",
    );
    expect(first.structured.notices).toHaveLength(1);
    expect(s.records().at(-1)?.output_sha256).toBe(sha256("[exit 0]\nhi\n"));
    const again = await s.call("ssh_exec", { host: "fresh", command: "echo hi" });
    expect(again.text).toBe("[exit 0]\nhi\n");
    expect(again.structured.notices).toEqual([]);
  });

  it("a host dialled with checking off carries a notice on every call, even Tier 0 and 1", async () => {
    for (let i = 0; i < 2; i++) {
      const r = await s.call("ssh_exec", { host: "lab", command: "echo hi" });
      expect(r.structured.notices).toEqual([
        `[NOTICE ssh host-key verification was off for 127.0.0.1:${port(1)} (known_hosts=ignore); the remote identity was not checked]`,
      ]);
      expect(r.text.endsWith(`\n${(r.structured.notices as string[])[0]}`)).toBe(true);
    }
    const check = await s.call("ssh_check", { hosts: "lab, lab2" });
    expect(check.structured.tier).toBe(0);
    expect(check.text.split("\n").slice(0, 2)).toEqual(["lab: ok", "lab2: ok"]);
    expect(check.structured.notices).toEqual([
      "[NOTICE ssh host-key verification was off for lab, lab2 (known_hosts=ignore); the remote identity was not checked]",
    ]);
  });

  it("a tier notice and a host-key notice together: at most two lines, tier first", async () => {
    const victim = join(canaries, "two.log");
    writeFileSync(victim, "data\n");
    chmodSync(victim, 0o666);
    const r = await s.call("ssh_exec", { host: "lab", command: `truncate -s 0 ${victim}` });
    const notices = r.structured.notices as string[];
    expect(notices).toHaveLength(2);
    expect(notices[0]).toMatch(
      /^\[NOTICE tier 2 \(STATEFUL\), .*Classification is a heuristic, not a boundary\]$/,
    );
    expect(notices[1]).toMatch(/^\[NOTICE ssh host-key verification was off/);
    expect(r.text).toBe(`[exit 0]\n\n${notices.join("\n")}`);
    expect(readFileSync(victim, "utf8")).toBe("");
  });

  it("ssh_fanout keeps its JSON, carries the notices inside it, and its record hashes the JSON without them", async () => {
    const victims = ["pinned", "lab2"].map((h) => {
      const path = join(canaries, `${h}.log`);
      writeFileSync(path, "data\n");
      chmodSync(path, 0o666);
      return path;
    });
    // Each host empties its own canary and prints far more than the budget.
    const command = `truncate -s 0 ${canaries}/$(test "$(echo $SSH_CONNECTION | cut -d' ' -f4)" = ${port(3)} && echo pinned || echo lab2).log; head -c 60000 /dev/zero | tr '\\0' x`;
    const r = await s.call("ssh_fanout", { hosts: "pinned,lab2", command });
    const parsed = JSON.parse(r.text) as Fanout;
    expect(parsed.host_count).toBe(2);
    expect(parsed.results.map((x) => x.exit_code)).toEqual([0, 0]);
    expect(parsed.results[0]?.output).toMatch(/\[TRUNCATED - 60000 bytes total, \d+ shown\]$/);
    for (const path of victims) expect(readFileSync(path, "utf8")).toBe("");
    expect(parsed.notices).toEqual(r.structured.notices);
    expect(parsed.notices).toHaveLength(2);
    expect(parsed.notices?.[0]).toMatch(/^\[NOTICE tier 2 \(STATEFUL\)/);
    expect(parsed.notices?.[1]).toContain("first contact with pinned");
    expect(parsed.notices?.[1]).toContain("verification was off for lab2");
    // The object, notices included, stays inside the output budget, and nothing follows it.
    expect(Buffer.byteLength(r.text)).toBeLessThanOrEqual(MAX_OUTPUT);
    expect(r.text.endsWith("]}")).toBe(true);
    const withoutNotices = r.text.replace(`,"notices":${JSON.stringify(parsed.notices)}}`, "}");
    expect(withoutNotices).not.toBe(r.text);
    expect(s.records().at(-1)).toMatchObject({
      tool: "ssh_fanout",
      tier: 2,
      output_sha256: sha256(withoutNotices),
      output_len: Buffer.byteLength(withoutNotices),
    });
  });

  it("a Tier-1 fan-out to verified hosts has no notices array at all", async () => {
    const r = await s.call("ssh_fanout", { hosts: "pinned,fresh", command: "echo ok" });
    const parsed = JSON.parse(r.text) as Fanout;
    expect(parsed).not.toHaveProperty("notices");
    expect(r.structured.notices).toEqual([]);
  });
});
