import { spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import {
  chmodSync,
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join, relative } from "node:path";
import { createSshFixture, SSHD_MISSING, SSHD_SKIP_REASON, type SshFixture } from "../test/fixtures/sshd.js";
import { type BenchServer, startBenchServer } from "./harness.js";
import { type Bench, type BenchFigure, median } from "./types.js";

/**
 * ssh_upload and ssh_download through the built server, beside the OpenSSH
 * tools a person would use for the same copy, all against one sshd on
 * 127.0.0.1 with one key: a large file against `scp -q`, a tree of small
 * files against `rsync -a` over ssh. Each round runs every case once for the
 * relay and once for the peer, the order flipped every round, and every copy
 * is compared byte for byte with its source before its time counts.
 */

export interface TransferBenchSize {
  /** Size of the one large file, MiB. */
  mib: number;
  /** Files in the tree (in directories of FILES_PER_DIR). */
  files: number;
  /** Paired rounds; the figures are medians over them. */
  rounds: number;
}

const MIB = 1024 * 1024;
/** Tree files hold 0 to 16 KiB: per-file round trips, not bytes, decide how long a tree takes. */
const MAX_TREE_FILE = 16 * 1024;
const FILES_PER_DIR = 100;
/** Our time over the peer's: a large file against scp, a tree against rsync. */
const FILE_TARGET = 1.0;
const TREE_TARGET = 1.1;
/** Connections the peers' own set-up is sampled over. */
const HANDSHAKES = 5;

function envInt(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? "");
  return Number.isInteger(value) && value > 0 ? value : fallback;
}

interface Source {
  file: string;
  fileHash: string;
  tree: string;
  /** Path inside the tree → sha256 of the file's bytes. */
  treeHashes: Map<string, string>;
}

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

function writeSource(root: string, size: TransferBenchSize): Source {
  const file = join(root, "large.bin");
  const hash = createHash("sha256");
  const fd = openSync(file, "w", 0o644);
  try {
    for (let left = size.mib * MIB; left > 0; left -= 4 * MIB) {
      const chunk = randomBytes(Math.min(4 * MIB, left));
      hash.update(chunk);
      writeSync(fd, chunk);
    }
  } finally {
    closeSync(fd);
  }
  const tree = join(root, "tree");
  mkdirSync(tree);
  const treeHashes = new Map<string, string>();
  for (let i = 0; i < size.files; i++) {
    const dir = join(tree, `d${String(Math.floor(i / FILES_PER_DIR)).padStart(3, "0")}`);
    if (i % FILES_PER_DIR === 0) mkdirSync(dir);
    const content = randomBytes((i * 7919) % (MAX_TREE_FILE + 1));
    const path = join(dir, `f${String(i).padStart(5, "0")}.dat`);
    writeFileSync(path, content, { mode: 0o644 });
    treeHashes.set(relative(tree, path), sha256(content));
  }
  return { file, fileHash: hash.digest("hex"), tree, treeHashes };
}

function hashFile(path: string): string {
  const hash = createHash("sha256");
  const buffer = Buffer.allocUnsafe(4 * MIB);
  const fd = openSync(path, "r");
  try {
    for (let n = readSync(fd, buffer); n > 0; n = readSync(fd, buffer)) hash.update(buffer.subarray(0, n));
  } finally {
    closeSync(fd);
  }
  return hash.digest("hex");
}

function verifyFile(copy: string, source: Source): void {
  if (hashFile(copy) !== source.fileHash) throw new Error(`${copy} differs from its source`);
}

/** Every file of the copy against the source's: same paths, same bytes, nothing more or less. */
function verifyTree(copy: string, source: Source): void {
  const seen = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        walk(path);
        continue;
      }
      const key = relative(copy, path);
      if (source.treeHashes.get(key) !== sha256(readFileSync(path)))
        throw new Error(`${path} differs from its source`);
      seen.add(key);
    }
  };
  walk(copy);
  if (seen.size !== source.treeHashes.size) {
    throw new Error(`${copy} holds ${seen.size} of the ${source.treeHashes.size} files of its source`);
  }
}

/** Run a program to its end; its wall time in ms, or a throw with what it said on stderr. */
function timeProcess(argv: readonly string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const [cmd = "", ...args] = argv;
    const start = performance.now();
    const child = spawn(cmd, args, { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    child.on("error", reject);
    child.on("close", (code) => {
      const ms = performance.now() - start;
      if (code === 0) resolve(ms);
      else reject(new Error(`${cmd} exited with ${code}: ${stderr.slice(0, 500)}`));
    });
  });
}

async function timeCall(server: BenchServer, tool: string, args: Record<string, unknown>): Promise<number> {
  const start = performance.now();
  const text = await server.call(tool, { host: "bench", ...args });
  const ms = performance.now() - start;
  if (!/^(up|down)loaded /.test(text)) throw new Error(`${tool} failed: ${text.slice(0, 500)}`);
  return ms;
}

/** One way of copying, run by the relay and by its peer. */
interface Case {
  label: string;
  peer: string;
  target: number;
  /** Each copies the source to `dest` (which does not exist yet) and returns its wall time. */
  relay(dest: string): Promise<number>;
  other(dest: string): Promise<number>;
  /** Where a copy goes: a new path for each. */
  dest(who: Who, round: number): string;
  verify(dest: string): void;
  /**
   * Removed once verified (the large files, for the disk's sake); a tree stays until the end of the run:
   * deleting thousands of files just before creating as many makes ext4 without a journal search past
   * every inode it freed in the last minutes, a cost of the cleanup and not of the copy.
   */
  discard: boolean;
}

type Who = "relay" | "other";

interface Timed {
  relay: number[];
  other: number[];
}

/** Paired rounds of every case, who goes first flipped each round (A B, B A, …); every copy verified. */
async function measure(cases: readonly Case[], rounds: number): Promise<Map<Case, Timed>> {
  const times = new Map(cases.map((c) => [c, { relay: [] as number[], other: [] as number[] }]));
  for (let round = 0; round < rounds; round++) {
    for (const c of cases) {
      const order: Who[] = round % 2 === 0 ? ["relay", "other"] : ["other", "relay"];
      for (const who of order) {
        const dest = c.dest(who, round);
        const ms = await c[who](dest);
        c.verify(dest);
        if (c.discard) rmSync(dest, { recursive: true, force: true });
        times.get(c)?.[who].push(ms);
      }
    }
  }
  return times;
}

/** What Debian's scp speaks by default: since OpenSSH 9.0 it is SFTP (`scp -O` is the old protocol). */
function scpProtocol(): string {
  const version = spawnSync("ssh", ["-V"], { encoding: "utf8" }).stderr?.split(",")[0]?.trim() ?? "";
  const major = Number(/OpenSSH_(\d+)/.exec(version)?.[1] ?? 0);
  return `${version || "OpenSSH"}: ${major >= 9 ? "SFTP protocol" : "legacy scp protocol"}`;
}

function reported(name: string, value: number, unit: string, target = "reported"): BenchFigure {
  return { name, value, unit, target, met: null };
}

/** Per case: both medians, the target on the paired ratios, and the ratio with the peer's connection set-up taken off. */
function pairedFigures(c: Case, t: Timed, setupMs: number): BenchFigure[] {
  const ratio = median(t.relay.map((ms, i) => ms / (t.other[i] ?? Number.NaN)));
  return [
    reported(`${c.label}: relay (median)`, median(t.relay), "ms"),
    reported(`${c.label}: ${c.peer} (median)`, median(t.other), "ms"),
    {
      name: `${c.label}: relay / ${c.peer} (median of the paired ratios)`,
      value: ratio,
      unit: "x",
      target: `<= ${c.target.toFixed(1)}x`,
      met: ratio <= c.target,
    },
    reported(
      `${c.label}: relay / (${c.peer} less its connection set-up), medians`,
      median(t.relay) / (median(t.other) - setupMs),
      "x",
    ),
  ];
}

function peakRssMiB(pid: number): number {
  const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return kb ? Number(kb) / 1024 : Number.NaN;
}

interface Places {
  /** Written by the SSH login user: the remote side of every copy. */
  remote: string;
  local: string;
  source: Source;
  size: TransferBenchSize;
}

/** The four copies, each by the relay and by the OpenSSH tool that does the same. */
function cases(server: BenchServer, places: Places, tools: ReturnType<typeof openssh>): Case[] {
  const { remote, local, source, size } = places;
  const { scp, rsync, at } = tools;
  const upload = (args: Record<string, unknown>) => timeCall(server, "ssh_upload", args);
  const download = (args: Record<string, unknown>) => timeCall(server, "ssh_download", args);
  const file = {
    peer: `scp -q (${scpProtocol()})`,
    target: FILE_TARGET,
    verify: (dest: string) => verifyFile(dest, source),
    discard: true,
  };
  const tree = {
    peer: "rsync -a",
    target: TREE_TARGET,
    verify: (dest: string) => verifyTree(dest, source),
    discard: false,
  };
  return [
    {
      ...file,
      label: `${size.mib} MiB file, upload`,
      relay: (dest) => upload({ local_path: source.file, remote_path: dest }),
      other: (dest) => timeProcess([...scp, source.file, `${at}:${dest}`]),
      dest: (who, round) => join(remote, `${who}-${round}.bin`),
    },
    {
      ...file,
      label: `${size.mib} MiB file, download`,
      relay: (dest) => download({ remote_path: source.file, local_path: dest }),
      other: (dest) => timeProcess([...scp, `${at}:${source.file}`, dest]),
      dest: (who, round) => join(local, `${who}-${round}.bin`),
    },
    {
      ...tree,
      label: `${size.files}-file tree, upload`,
      relay: (dest) => upload({ local_path: source.tree, remote_path: dest, recursive: true }),
      other: (dest) => timeProcess([...rsync, `${source.tree}/`, `${at}:${dest}/`]),
      dest: (who, round) => join(remote, `${who}-tree-${round}`),
    },
    {
      ...tree,
      label: `${size.files}-file tree, download`,
      relay: (dest) => download({ remote_path: source.tree, local_path: dest, recursive: true }),
      other: (dest) => timeProcess([...rsync, `${at}:${source.tree}/`, `${dest}/`]),
      dest: (who, round) => join(local, `${who}-tree-${round}`),
    },
  ];
}

/** How the OpenSSH tools reach the fixture: its key, no user configuration, the host key taken on first use. */
function openssh(port: number, fx: SshFixture) {
  const known = `UserKnownHostsFile=${join(fx.dir, "openssh_known_hosts")}`;
  const options = ["-F", "/dev/null", "-i", fx.clientKey, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes"];
  options.push("-o", "StrictHostKeyChecking=accept-new", "-o", known);
  return {
    at: `${fx.user}@127.0.0.1`,
    ssh: ["ssh", "-p", String(port), ...options],
    scp: ["scp", "-q", "-P", String(port), ...options],
    rsync: ["rsync", "-a", "-e", ["ssh", "-p", String(port), ...options].join(" ")],
  };
}

/** The tree to copy, its large file, and where copies go (the remote side is this machine as the SSH user). */
function places(fx: SshFixture, size: TransferBenchSize): Places {
  const root = join(fx.dir, "transfer");
  const remote = join(root, "remote");
  const local = join(root, "local");
  for (const dir of [join(root, "source"), local, remote]) mkdirSync(dir, { recursive: true });
  chmodSync(remote, 0o777);
  return { remote, local, source: writeSource(join(root, "source"), size), size };
}

async function runAll(server: BenchServer, fx: SshFixture, port: number, size: TransferBenchSize) {
  const where = places(fx, size);
  const tools = openssh(port, fx);
  const all = cases(server, where, tools);
  // Not counted: the relay dials its pooled connection, ssh learns the host key.
  const [first = ""] = where.source.treeHashes.keys();
  await timeCall(server, "ssh_upload", {
    local_path: join(where.source.tree, first),
    remote_path: where.remote,
  });
  const setup: number[] = [];
  for (let i = 0; i < HANDSHAKES + 1; i++) setup.push(await timeProcess([...tools.ssh, tools.at, "true"]));
  const setupMs = median(setup.slice(1));
  const times = await measure(all, size.rounds);
  return [
    ...all.flatMap((c) => pairedFigures(c, times.get(c) as Timed, setupMs)),
    ...all
      .slice(0, 2)
      .map((c) =>
        reported(
          `${c.label}: relay throughput (median)`,
          (size.mib * 1000) / median(times.get(c)?.relay ?? []),
          "MiB/s",
        ),
      ),
    reported(
      "OpenSSH connection set-up, `ssh … true` (median): part of every scp and rsync run; the relay's connection is pooled",
      setupMs,
      "ms",
    ),
    reported(
      "server peak resident memory over the run (VmHWM)",
      peakRssMiB(server.pid),
      "MiB",
      "reported (bounded: in-flight bytes do not grow with the file)",
    ),
  ];
}

/** The bench at a given size; `npm run bench -- transfer` runs transferBench, the suite a small one. */
export function createTransferBench(size: TransferBenchSize): Bench {
  return {
    name: "transfer",
    async run(): Promise<BenchFigure[]> {
      if (SSHD_MISSING) {
        console.warn(`transfer bench skipped: ${SSHD_SKIP_REASON}`);
        return [];
      }
      const fx = createSshFixture();
      try {
        const sshd = await fx.start();
        const inventory = join(fx.dir, "transfer-inventory.json");
        writeFileSync(
          inventory,
          JSON.stringify({ bench: { hostname: "127.0.0.1", port: sshd.port, user: fx.user } }),
        );
        const server = await startBenchServer({
          HOME: fx.home,
          USER: fx.user,
          RELAY_SHELL_INVENTORY: inventory,
          RELAY_SHELL_SSH_CONFIG: join(fx.dir, "none"),
          RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(fx.dir, "transfer_known_hosts"),
          RELAY_SHELL_UNSAFE_NOTICES: "false",
        });
        try {
          return await runAll(server, fx, sshd.port, size);
        } finally {
          await server.close();
        }
      } finally {
        // Every copy and the source with it.
        fx.close();
      }
    },
  };
}

export const transferBench = createTransferBench({
  mib: envInt("RELAY_SHELL_BENCH_TRANSFER_MB", 256),
  files: envInt("RELAY_SHELL_BENCH_TRANSFER_FILES", 2000),
  rounds: envInt("RELAY_SHELL_BENCH_TRANSFER_ROUNDS", 5),
});
