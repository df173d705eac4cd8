import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { Progress } from "@modelcontextprotocol/sdk/types.js";
import { ensureSystemUser, type SystemUser } from "../fixtures/infra.js";
import { baseEnv, SERVER_ENTRY } from "./server.js";

const RUNUSER = "/usr/sbin/runuser";
const SSH_KEYGEN = "/usr/bin/ssh-keygen";

/** The relay's own account in the consent suites: it must not be able to write what it trusts. */
const RELAY_USER = "relayconsent";

/** Why the consent suites cannot run here, or null when they can. */
export const CONSENT_SKIP_REASON: string | null =
  process.geteuid?.() !== 0
    ? "the consent suites run the server as an account of its own: run as root"
    : !existsSync(RUNUSER)
      ? `${RUNUSER} is not installed (util-linux)`
      : !existsSync(SSH_KEYGEN)
        ? `${SSH_KEYGEN} is not installed (apt-get install openssh-client)`
        : null;

export interface ConsentRelay {
  client: Client;
  call(
    name: string,
    args?: Record<string, unknown>,
    options?: { onprogress?: (p: Progress) => void },
  ): Promise<{ text: string; structured: Record<string, unknown> }>;
  stderr(): string;
  close(): Promise<void>;
}

export interface ConsentWorld {
  root: string;
  /** The relay's account. */
  user: SystemUser;
  /** The relay's home and working directory (its own). */
  home: string;
  /** A directory the relay's commands may write: canaries live here. */
  work: string;
  /** The operator's allowed-signers file: root-owned 0644 in a root-owned 0755 directory. */
  allowedSigners: string;
  /** The consent ledger beside it: the relay's, 0600, append-only (`chattr +a`). */
  ledger: string;
  /** The operator's signing key (root-only 0600): the relay cannot read it. */
  operatorKey: string;
  /** A key that is not in allowed-signers. */
  strangerKey: string;
  db: string;
  audit: string;
  /** The consent settings every relay of this world shares. */
  settings(extra?: Record<string, string>): Record<string, string>;
  startRelay(extra?: Record<string, string>): Promise<ConsentRelay>;
  /** Run `relay-shell consent ...` as the operator (root), with this world's settings. */
  cli(args: string[], extra?: Record<string, string>): { status: number; stdout: string; stderr: string };
  /** As an operator scripts it: `consent show ID`, then `approve ID --yes --digest` with the digest shown. */
  approve(id: string, key?: string): { status: number; stdout: string; stderr: string };
  /** Audit records written so far. */
  records(): Array<Record<string, unknown>>;
  cleanup(): void;
}

function keygen(path: string, comment: string): void {
  execFileSync(SSH_KEYGEN, ["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path]);
}

/** A world for the consent suites: accounts, directories, keys and an allowed-signers file. */
export function createConsentWorld(options: { signerNamespaces?: string } = {}): ConsentWorld {
  const user = ensureSystemUser(RELAY_USER);
  const root = mkdtempSync(join(tmpdir(), "consent-"));
  chmodSync(root, 0o755);
  const home = join(root, "home");
  const work = join(root, "work");
  const state = join(home, "state");
  for (const dir of [home, work, state]) {
    mkdirSync(dir, { recursive: true });
    chownSync(dir, user.uid, user.gid);
    chmodSync(dir, 0o700);
  }
  chmodSync(work, 0o755);
  const operator = join(root, "operator");
  mkdirSync(operator, { mode: 0o700 });
  const operatorKey = join(operator, "id_ed25519");
  const strangerKey = join(operator, "stranger");
  keygen(operatorKey, "operator@test");
  keygen(strangerKey, "stranger@test");
  const anchors = join(root, "anchors");
  mkdirSync(anchors, { mode: 0o755 });
  chmodSync(anchors, 0o755);
  const allowedSigners = join(anchors, "allowed_signers");
  const pub = readFileSync(`${operatorKey}.pub`, "utf8").trim().split(" ").slice(0, 2).join(" ");
  const namespaces = options.signerNamespaces ?? "relay-shell-consent";
  execFileSync("sh", [
    "-c",
    `printf '%s\\n' "$1" > "$2"`,
    "sh",
    `operator@test namespaces="${namespaces}" ${pub}`,
    allowedSigners,
  ]);
  chmodSync(allowedSigners, 0o644);
  const ledger = createLedger(join(anchors, "consent.ledger"), user);
  const db = join(state, "consent.db");
  const audit = join(home, "audit.jsonl");

  const settings = (extra: Record<string, string> = {}): Record<string, string> => ({
    RELAY_SHELL_CONSENT: "true",
    RELAY_SHELL_CONSENT_ALLOWED_SIGNERS: allowedSigners,
    RELAY_SHELL_CONSENT_DB: db,
    RELAY_SHELL_AUDIT_PATH: audit,
    RELAY_SHELL_AUDIT_CHAIN: "true",
    XDG_STATE_HOME: state,
    ...extra,
  });

  async function startRelay(extra: Record<string, string> = {}): Promise<ConsentRelay> {
    const transport = new StdioClientTransport({
      command: RUNUSER,
      args: ["-u", user.name, "--", process.execPath, SERVER_ENTRY],
      env: baseEnv({ HOME: home, USER: user.name, ...settings(extra) }),
      cwd: home,
      stderr: "pipe",
    });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    const client = new Client({ name: "relay-shell-tests", version: "1.0.0" });
    try {
      await client.connect(transport);
    } catch (err) {
      throw new Error(`the relay did not start: ${String(err)}\n${stderr}`);
    }
    return {
      client,
      async call(name, args = {}, opts = {}) {
        const result = await client.callTool(
          { name, arguments: args },
          undefined,
          opts.onprogress ? { onprogress: opts.onprogress, timeout: 120_000 } : { timeout: 120_000 },
        );
        const content = result.content as Array<{ type: string; text?: string }>;
        return {
          text: content.map((c) => c.text ?? "").join(""),
          structured: (result.structuredContent ?? {}) as Record<string, unknown>,
        };
      },
      stderr: () => stderr,
      close: () => client.close(),
    };
  }

  function cli(args: string[], extra: Record<string, string> = {}) {
    const r = spawnSync(process.execPath, [SERVER_ENTRY, "consent", ...args], {
      env: baseEnv({ ...settings(extra) }),
      cwd: root,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 60_000,
    });
    return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
  }

  return {
    root,
    user,
    home,
    work,
    allowedSigners,
    ledger,
    operatorKey,
    strangerKey,
    db,
    audit,
    settings,
    startRelay,
    cli,
    approve(id, key = operatorKey) {
      const shown = cli(["show", id]);
      const digest = /^digest: +([0-9a-f]{64})$/m.exec(shown.stdout)?.[1];
      if (shown.status !== 0 || digest === undefined) return shown;
      return cli(["approve", id, "--key", key, "--yes", "--digest", digest]);
    },
    records() {
      if (!existsSync(audit)) return [];
      return readFileSync(audit, "utf8")
        .split("\n")
        .filter((l) => l.trim() !== "")
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    },
    cleanup() {
      removeLedger(ledger);
      rmSync(root, { recursive: true, force: true });
    },
  };
}

const CHATTR = "/usr/bin/chattr";

/**
 * The consent ledger as docs/consent.md sets it up: owned by the relay's account, 0600, with
 * the append-only flag only root can clear.
 */
export function createLedger(path: string, owner: SystemUser): string {
  execFileSync("/usr/bin/install", [
    "-o",
    String(owner.uid),
    "-g",
    String(owner.gid),
    "-m",
    "0600",
    "/dev/null",
    path,
  ]);
  execFileSync(CHATTR, ["+a", path]);
  return path;
}

/** Clear the append-only flag (root only), so the ledger's directory can be removed. */
export function removeLedger(path: string): void {
  if (existsSync(path)) spawnSync(CHATTR, ["-a", path], { stdio: "ignore" });
  rmSync(path, { force: true });
}

/** The request id of a `[CONSENT REQUIRED id=... expires_in=...]` answer. */
export function consentId(text: string): string {
  const match = /^\[CONSENT REQUIRED id=([^ \]]+) expires_in=(\d+)s\]/.exec(text);
  if (!match?.[1]) throw new Error(`not a consent challenge: ${text.slice(0, 300)}`);
  return match[1];
}

/** How many lines a canary file has (0 when it does not exist): how often a command under test ran. */
export function canaryLines(path: string): number {
  return existsSync(path)
    ? readFileSync(path, "utf8")
        .split("\n")
        .filter((l) => l !== "").length
    : 0;
}
