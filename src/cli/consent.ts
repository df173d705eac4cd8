import { chownSync, existsSync, lstatSync, statSync } from "node:fs";
import { userInfo } from "node:os";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import {
  type ConsentStore,
  ledgerPath,
  openLedger,
  openPgStore,
  openSqliteStore,
  type StoreResult,
  withLedger,
} from "../consent/index.js";
import { cryptoIds, silentLogger, systemClock } from "../core/index.js";
import type { PgState } from "../state/index.js";
import {
  approveRequest,
  editedWarning,
  MIN_DIGEST_PREFIX,
  payloadMatches,
  Refused,
} from "./consent-approve.js";
import { leaseLines, listLines, showRequest, visible } from "./consent-text.js";
import { openSharedState } from "./state.js";

const CONSENT_USAGE = `usage: relay-shell consent list [--db PATH]
       relay-shell consent show ID [--payload] [--db PATH]
       relay-shell consent approve ID --key PATH [--yes --digest HEX] [--db PATH]
       relay-shell consent deny ID [--reason TEXT] [--db PATH]
       relay-shell consent leases [--db PATH]
       relay-shell consent revoke (ID | --all) [--db PATH]

Decide, on the operator's terminal, the acts the relay asked consent for.

  list      the live requests (pending or approved) by consent session, with
            each session's counts; repeats of one act are one line
  show      one request: the act, its bound arguments, its digest and the
            exact bytes a signature covers (--payload: only those bytes)
  approve   show the act, ask "Approve this act? [y/N]" on the terminal (or
            not, with --yes, which needs --digest: the act's digest as
            \`show\` printed it, at least ${MIN_DIGEST_PREFIX} hex digits), sign the
            payload of the act shown with
            \`ssh-keygen -Y sign -n relay-shell-consent -f PATH\`, check the
            signature against the allowed-signers file and store it; PATH is a
            private key, or the public key of one held by ssh-agent or a
            security key (a key with a passphrase must be in ssh-agent)
  deny      refuse a request, or withdraw an approval not used yet
  leases    the consent sessions and their read leases
  revoke    revoke one lease, or every lease of a consent session (ending
            it), or every lease (--all)

Denials and revocations are written first to the consent ledger beside the
allowed-signers file, which the relay's account cannot rewrite.

options:
  --db PATH   the consent database (RELAY_SHELL_CONSENT_DB)
  --help      show this help and exit

Exit status 0 when done, 1 when the store refused (unknown, expired or used
request, lock not granted, database unavailable) or the operator said no, 2 for
a wrong argument or a database that cannot be opened.
`;

const BUSY_TIMEOUT_MS = 5000;
const REQUEST_ID = /^[0-9a-f]{10}$/;
const MAX_ARGUMENT = 512;

const OPTIONS = {
  help: { type: "boolean", short: "h" },
  db: { type: "string" },
  key: { type: "string" },
  yes: { type: "boolean" },
  reason: { type: "string" },
  all: { type: "boolean" },
  payload: { type: "boolean" },
  digest: { type: "string" },
} as const;
type Option = keyof typeof OPTIONS;

/** What each command accepts besides --db and --help, and how many positional arguments. */
const COMMANDS: Record<string, { options: readonly Option[]; ids: number }> = {
  list: { options: [], ids: 0 },
  show: { options: ["payload"], ids: 1 },
  approve: { options: ["key", "yes", "digest"], ids: 1 },
  deny: { options: ["reason"], ids: 1 },
  leases: { options: [], ids: 0 },
  revoke: { options: ["all"], ids: 1 },
};

interface ConsentArgs {
  command: string;
  id: string | null;
  values: Partial<Record<Option, string | true>>;
}

/** A wrong argument: message on stderr, exit 2. */
class Usage extends Error {}

function parseConsentArgs(argv: readonly string[]): ConsentArgs | "help" {
  const [command, ...rest] = argv;
  if (command === undefined || command === "--help" || command === "-h") return "help";
  const spec = COMMANDS[command];
  if (spec === undefined) throw new Usage(`unknown consent command: ${visible(command)}`);
  const { tokens } = parseArgs({
    args: rest,
    options: OPTIONS,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const values: ConsentArgs["values"] = {};
  const ids: string[] = [];
  for (const token of tokens) {
    const typed = visible(rest[token.index] ?? "");
    if (token.kind === "positional") {
      ids.push(token.value);
      continue;
    }
    if (token.kind !== "option" || !Object.hasOwn(OPTIONS, token.name))
      throw new Usage(`unknown argument: ${typed}`);
    const name = token.name as Option;
    if (name !== "help" && name !== "db" && !spec.options.includes(name)) {
      throw new Usage(`${command} does not take --${name}`);
    }
    if (values[name] !== undefined) throw new Usage(`--${name} is given more than once`);
    if (OPTIONS[name].type === "boolean") {
      if (token.value !== undefined) throw new Usage(`unknown argument: ${typed}`);
      values[name] = true;
    } else {
      // `--key --yes` is a forgotten value, not a key named --yes (write ./--yes or --key=--yes for that).
      const forgotten = token.inlineValue !== true && token.value?.startsWith("-") === true;
      if (token.value === undefined || token.value === "" || forgotten)
        throw new Usage(`--${name} needs a value`);
      if (token.value.length > MAX_ARGUMENT)
        throw new Usage(`--${name} is longer than ${MAX_ARGUMENT} characters`);
      values[name] = token.value;
    }
  }
  if (values.help === true) return "help";
  const wanted = command === "revoke" && values.all === true ? 0 : spec.ids;
  if (command === "revoke" && values.all === true && ids.length > 0)
    throw new Usage("revoke takes an ID or --all, not both");
  if (ids.length !== wanted) {
    throw new Usage(wanted === 0 ? `${command} takes no ID` : `${command} needs exactly one ID`);
  }
  const id = ids[0] ?? null;
  if (id !== null) {
    if (id.length === 0 || id.length > MAX_ARGUMENT || visible(id) !== id || /\s/.test(id)) {
      throw new Usage(`not an id: ${JSON.stringify(visible(id))}`);
    }
    if (command !== "revoke" && !REQUEST_ID.test(id)) {
      throw new Usage(
        `not a request id: ${visible(id)} (ten lowercase hex digits, as \`consent list\` shows)`,
      );
    }
  }
  return { command, id, values };
}

/**
 * Run as root, the command works on the relay account's database as that
 * account would: the file must belong to it (not to root), and the journal
 * files SQLite creates beside it are handed to it, or the relay could no
 * longer open its own store.
 */
function ownerOf(path: string): { uid: number; gid: number } | null {
  if (process.geteuid?.() !== 0) return null;
  const st = statSync(path);
  return st.uid === 0 ? null : { uid: st.uid, gid: st.gid };
}

function handSidecars(path: string, owner: { uid: number; gid: number } | null): void {
  if (!owner) return;
  for (const suffix of ["-wal", "-shm"]) {
    const sidecar = `${path}${suffix}`;
    const st = lstatSync(sidecar, { throwIfNoEntry: false });
    if (st?.isFile() && st.uid !== owner.uid) chownSync(sidecar, owner.uid, owner.gid);
  }
}

function openStore(
  path: string,
  owner: { uid: number; gid: number } | null,
  allowedSigners: string,
): ConsentStore {
  // The relay creates the database; a mistyped path must not show an empty one.
  if (!existsSync(path))
    throw new Usage(`no consent database at ${visible(path)} (the relay creates it when consent is on)`);
  const opened = openSqliteStore(path, {
    clock: systemClock,
    ids: cryptoIds,
    busyTimeoutMs: BUSY_TIMEOUT_MS,
    ...(owner ? { euid: owner.uid } : {}),
  });
  if (!opened.ok) throw new Usage(`cannot open the consent database: ${visible(opened.error.detail)}`);
  if (allowedSigners === "") {
    void opened.value.close();
    throw new Usage(
      "RELAY_SHELL_CONSENT_ALLOWED_SIGNERS is not set: the consent ledger lives beside the allowed-signers file",
    );
  }
  const ledger = openLedger(ledgerPath(allowedSigners), { clock: systemClock });
  if (!ledger.ok) {
    void opened.value.close();
    throw new Usage(`cannot use the consent ledger: ${visible(ledger.error)}`);
  }
  return withLedger(opened.value, ledger.value);
}

/** The store several relays share, corrected by the operator's ledger like the SQLite one. */
async function openSharedStore(shared: PgState | null, allowedSigners: string): Promise<ConsentStore> {
  if (shared === null) throw new Usage("RELAY_SHELL_STATE_URL is not set");
  const opened = await openPgStore(shared, { clock: systemClock, ids: cryptoIds });
  if (!opened.ok) throw new Usage(`cannot open the shared consent store: ${visible(opened.error.detail)}`);
  if (allowedSigners === "") {
    await opened.value.close();
    throw new Usage(
      "RELAY_SHELL_CONSENT_ALLOWED_SIGNERS is not set: the consent ledger lives beside the allowed-signers file",
    );
  }
  const ledger = openLedger(ledgerPath(allowedSigners), { clock: systemClock });
  if (!ledger.ok) {
    await opened.value.close();
    throw new Usage(`cannot use the consent ledger: ${visible(ledger.error)}`);
  }
  return withLedger(opened.value, ledger.value);
}

function must<T>(result: StoreResult<T>): T {
  if (!result.ok) throw new Refused(`${result.error.failure}: ${visible(result.error.detail)}`);
  return result.value;
}

/** Ask on the terminal; anything but y/yes is no. */
async function confirm(question: string): Promise<boolean> {
  const terminal = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await new Promise<string>((resolve) => {
      terminal.question(question, resolve);
      terminal.once("close", () => resolve(""));
    });
    return /^(y|yes)$/i.test(answer.trim());
  } finally {
    terminal.close();
  }
}

function operatorName(): string {
  try {
    return userInfo().username;
  } catch {
    return `uid ${process.geteuid?.() ?? "?"}`;
  }
}

async function run(store: ConsentStore, args: ConsentArgs, allowedSigners: string): Promise<string> {
  const now = systemClock.now();
  const id = args.id ?? "";
  switch (args.command) {
    case "list": {
      const requests = must(await store.listRequests());
      if (requests.length === 0) return "no live consent requests";
      return listLines(requests, now).join("\n");
    }
    case "show": {
      const request = must(await store.getRequest(id));
      if (args.values.payload === true) {
        process.stdout.write(request.payload);
        return "";
      }
      const shown = visible(request.payload);
      const note = shown === request.payload ? "" : " (characters a terminal would act on are escaped here)";
      const warning = payloadMatches(store, request) ? "" : `\n${editedWarning()}`;
      return `${showRequest(request, now)}\npayload, the exact bytes signed${note}:\n${shown}${warning}`;
    }
    case "approve":
      return approveRequest(store, must(await store.getRequest(id)), {
        key: args.values.key as string,
        yes: args.values.yes === true,
        digest: typeof args.values.digest === "string" ? args.values.digest : null,
        allowedSigners,
        confirm,
      });
    case "deny": {
      const reason = typeof args.values.reason === "string" ? args.values.reason : "denied by the operator";
      const denied = must(await store.deny(id, operatorName(), reason));
      return `denied ${denied.id} (recorded in the consent ledger)`;
    }
    case "leases":
      return leaseLines(must(await store.listSessions()), must(await store.listLeases()), now).join("\n");
    case "revoke": {
      if (args.values.all === true) return `revoked ${must(await store.revokeAll())} lease(s)`;
      const isLease = must(await store.listLeases()).some((l) => l.id === id);
      const count = must(await store.revoke(id));
      return isLease
        ? `revoked lease ${id}${count === 0 ? " (it was already revoked)" : ""}`
        : `revoked ${count} lease(s) of consent session ${visible(id)} and ended it`;
    }
    default:
      throw new Usage(`unknown consent command: ${visible(args.command)}`);
  }
}

/**
 * `relay-shell consent …`: the operator's side of the consent gate. `dbPath`
 * is the configured database; `--db` overrides it. Resolves with the exit
 * status, having written the result on stdout and any refusal on stderr.
 */
export async function runConsentCli(
  argv: readonly string[],
  configured: { db: string | null; allowedSigners: string; stateUrl?: string; instance?: string },
): Promise<number> {
  let store: ConsentStore | null = null;
  let shared: PgState | null = null;
  let path: string | null = null;
  let owner: { uid: number; gid: number } | null = null;
  try {
    const args = parseConsentArgs(argv);
    if (args === "help") {
      process.stdout.write(CONSENT_USAGE);
      return 0;
    }
    path = typeof args.values.db === "string" ? args.values.db : configured.db;
    if (path === null) throw new Usage("no consent database: give --db PATH or set RELAY_SHELL_CONSENT_DB");
    if (args.command === "approve") {
      const key = args.values.key;
      if (typeof key !== "string")
        throw new Usage("approve needs --key PATH: the key that signs the approval");
      if (!statSync(key, { throwIfNoEntry: false })?.isFile())
        throw new Usage(`--key ${visible(key)}: no such file`);
      const digest = args.values.digest;
      if (args.values.yes === true && typeof digest !== "string") {
        throw new Usage(
          `approve --yes needs --digest HEX: the digest \`consent show ID\` printed, at least ${MIN_DIGEST_PREFIX} hex digits, so what is signed is the act you read`,
        );
      }
      if (typeof digest === "string" && !new RegExp(`^[0-9a-fA-F]{${MIN_DIGEST_PREFIX},64}$`).test(digest))
        throw new Usage(
          `--digest ${visible(digest)}: ${MIN_DIGEST_PREFIX} to 64 hex digits of the act's digest`,
        );
      if (args.values.yes !== true && !process.stdin.isTTY) {
        throw new Usage(
          "approve asks on the terminal, and stdin is not one; give --yes to approve without asking",
        );
      }
    }
    // Relays that share a PostgreSQL state are decided there, unless --db names a SQLite file.
    if (typeof args.values.db !== "string" && (configured.stateUrl ?? "") !== "") {
      path = null;
      shared = await openSharedState(
        { stateUrl: configured.stateUrl ?? "", instance: configured.instance ?? "" },
        { logger: silentLogger, role: "cli" },
      );
      store = await openSharedStore(shared, configured.allowedSigners);
    } else {
      owner = existsSync(path) ? ownerOf(path) : null;
      store = openStore(path, owner, configured.allowedSigners);
      handSidecars(path, owner);
    }
    const out = await run(store, args, configured.allowedSigners);
    if (path !== null) handSidecars(path, owner);
    if (out !== "") process.stdout.write(`${out}\n`);
    return 0;
  } catch (err) {
    const usage = err instanceof Usage;
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(
      `relay_shell consent: ${message}\n${usage && /unknown/.test(message) ? CONSENT_USAGE : ""}`,
    );
    return usage ? 2 : 1;
  } finally {
    await store?.close();
    await shared?.close();
    if (path !== null) handSidecars(path, owner);
  }
}
