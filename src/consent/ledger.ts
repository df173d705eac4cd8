import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  lstatSync,
  openSync,
  readSync,
  writeSync,
} from "node:fs";
import { dirname, join, resolve } from "node:path";
import { StringDecoder } from "node:string_decoder";
import { type Clock, fail, ok, type Result } from "../core/index.js";
import { isAppendOnly } from "../proc/index.js";

/**
 * The consent ledger (docs/adr/0037-consent-withdrawals-in-an-append-only-ledger.md): a file
 * with the append-only inode flag, in a directory the relay cannot write, beside the
 * allowed-signers file. Denials, revocations and spent nonces are appended to it, one JSON
 * object a line. The relay's account may append (a fake withdrawal only makes it stricter) but
 * can neither truncate, rewrite, rename nor remove it: only root can clear the flag. So a
 * withdrawal, once written, holds whatever the account does to the consent database.
 */
export interface ConsentLedger {
  readonly path: string;
  /** Read what was appended since the last look. A failure refuses whatever asked. */
  refresh(): LedgerResult<void>;
  /** The first denial of a request, if any. */
  denial(request: string): LedgerDenial | null;
  /** Whether a lease (by its id or its consent session's) opened at `createdAt` was revoked. */
  leaseRevoked(lease: string, session: string, createdAt: number): boolean;
  /** Whether a nonce was spent (claimed by anyone). */
  spent(nonce: string): boolean;
  /**
   * Claim a nonce for one use: appended, then read back. True only when this claim is the first
   * for the nonce in the ledger, so of two processes racing, one wins, without a lock.
   */
  spend(nonce: string, request: string): LedgerResult<boolean>;
  deny(request: string, by: string, reason: string): LedgerResult<void>;
  /** Revoke a lease, or every lease of a consent session (the id names either). */
  revoke(id: string): LedgerResult<void>;
  /** Revoke every lease opened until now. */
  revokeAll(): LedgerResult<void>;
  /** Grows whenever something was appended and read: a change means withdrawals may have changed. */
  version(): number;
  close(): void;
}

interface LedgerDenial {
  by: string;
  reason: string;
  at: number;
}

/** What the ledger answered, or why it cannot be used now (a sentence naming the file). */
export type LedgerResult<T> = Result<T, string>;

/** Where the ledger lives: beside the operator's allowed-signers file, in the same protected directory. */
export function ledgerPath(allowedSigners: string): string {
  return join(dirname(resolve(allowedSigners)), LEDGER_NAME);
}

const LEDGER_NAME = "consent.ledger";

/** Past this size the ledger is refused (fail closed): the operator rotates it (docs/consent.md). */
const MAX_LEDGER_BYTES = 256 * 1024 * 1024;
const READ_CHUNK = 1 << 20;
/** Longest line kept as a record; longer ones are no record of ours. */
const MAX_LINE = 8192;

interface Index {
  denials: Map<string, LedgerDenial>;
  revoked: Set<string>;
  revokedAllAt: number;
  spentBy: Map<string, string>;
}

function text(value: unknown, max: number): string | null {
  return typeof value === "string" && value.length > 0 && value.length <= max ? value : null;
}

/** Fold one line into the index; a line that is not one of our records is ignored. */
function fold(index: Index, line: string): void {
  if (line.length === 0 || line.length > MAX_LINE) return;
  let record: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(line);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return;
    record = parsed as Record<string, unknown>;
  } catch {
    return;
  }
  const at = typeof record.at === "number" && Number.isSafeInteger(record.at) ? record.at : null;
  if (record.v !== 1 || at === null) return;
  switch (record.kind) {
    case "deny": {
      const request = text(record.request, 64);
      if (request && !index.denials.has(request)) {
        index.denials.set(request, {
          by: text(record.by, 256) ?? "the operator",
          reason: text(record.reason, 1024) ?? "",
          at,
        });
      }
      return;
    }
    case "revoke": {
      const id = text(record.id, 256);
      if (id) index.revoked.add(id);
      return;
    }
    case "revoke_all":
      index.revokedAllAt = Math.max(index.revokedAllAt, at);
      return;
    case "spend": {
      const nonce = text(record.nonce, 64);
      const claim = text(record.claim, 64);
      if (nonce && claim && !index.spentBy.has(nonce)) index.spentBy.set(nonce, claim);
      return;
    }
  }
}

/**
 * Open the ledger at `path` for reading and appending, refusing a file that is not one:
 * a link, not a regular file, without the append-only flag, or larger than the bound.
 * Everything already in it is read.
 */
export function openLedger(path: string, deps: { clock: Clock }): LedgerResult<ConsentLedger> {
  const problem = (why: string): LedgerResult<ConsentLedger> => fail(`${path} ${why}`);
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (st === undefined) return problem(ledgerSetupHint("does not exist"));
  if (st.isSymbolicLink()) return problem("is a symbolic link; the ledger must be the file itself");
  if (!st.isFile()) return problem("is not a regular file");
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDWR | constants.O_APPEND | constants.O_NOFOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    return problem(`cannot be opened for reading and appending by the relay's account (${code})`);
  }
  const refuse = (why: string): LedgerResult<ConsentLedger> => {
    closeSync(fd);
    return problem(why);
  };
  const opened = fstatSync(fd);
  if (opened.ino !== st.ino || opened.dev !== st.dev) return refuse("changed while it was opened");
  const flag = isAppendOnly(fd);
  if (flag === null) return refuse("cannot be checked for the append-only flag here (no libc binding)");
  if (!flag.ok) return refuse(`is on a file system without the append-only flag (errno ${flag.error})`);
  if (!flag.value) return refuse(ledgerSetupHint("is not append-only"));

  const index: Index = { denials: new Map(), revoked: new Set(), revokedAllAt: 0, spentBy: new Map() };
  let offset = 0;
  let partial = "";
  let closed = false;
  const decoder = new StringDecoder("utf8");

  function refresh(): LedgerResult<void> {
    if (closed) return fail(`${path} is closed`);
    let size: number;
    try {
      size = fstatSync(fd).size;
    } catch (err) {
      return fail(`${path} cannot be examined: ${String(err)}`);
    }
    if (size < offset) return fail(`${path} shrank: it is no longer append-only`);
    if (size > MAX_LEDGER_BYTES) {
      return fail(`${path} is larger than ${MAX_LEDGER_BYTES} bytes; rotate it (docs/consent.md)`);
    }
    const buffer = Buffer.alloc(Math.min(READ_CHUNK, Math.max(0, size - offset)));
    while (offset < size) {
      const n = readSync(fd, buffer, 0, Math.min(buffer.length, size - offset), offset);
      if (n <= 0) break;
      offset += n;
      const lines = (partial + decoder.write(buffer.subarray(0, n))).split("\n");
      partial = lines.pop() ?? "";
      if (partial.length > MAX_LINE) partial = partial.slice(-MAX_LINE - 1);
      for (const line of lines) fold(index, line);
    }
    return ok(undefined);
  }

  function append(record: Record<string, unknown>): LedgerResult<void> {
    if (closed) return fail(`${path} is closed`);
    // The leading newline ends any unfinished line someone else left, so this record is a line
    // of its own whatever was written before it.
    const bytes = Buffer.from(`\n${JSON.stringify({ v: 1, ...record, at: deps.clock.now() })}\n`, "utf8");
    try {
      const written = writeSync(fd, bytes);
      if (written !== bytes.length) return fail(`${path}: a short write (${written} bytes)`);
      fsyncSync(fd);
    } catch (err) {
      return fail(`${path} cannot be appended to: ${String(err)}`);
    }
    return refresh();
  }

  const first = refresh();
  if (!first.ok) {
    closeSync(fd);
    return first;
  }

  return ok({
    path,
    refresh,
    denial: (request) => index.denials.get(request) ?? null,
    leaseRevoked: (lease, session, createdAt) =>
      index.revoked.has(lease) || index.revoked.has(session) || createdAt <= index.revokedAllAt,
    spent: (nonce) => index.spentBy.has(nonce),
    spend(nonce, request) {
      const fresh = refresh();
      if (!fresh.ok) return fresh;
      if (index.spentBy.has(nonce)) return ok(false);
      const claim = randomBytes(12).toString("hex");
      const done = append({ kind: "spend", nonce, request, claim, pid: process.pid });
      if (!done.ok) return done;
      return ok(index.spentBy.get(nonce) === claim);
    },
    deny: (request, by, reason) => append({ kind: "deny", request, by, reason }),
    revoke: (id) => append({ kind: "revoke", id }),
    revokeAll: () => append({ kind: "revoke_all" }),
    version: () => offset,
    close() {
      if (closed) return;
      closed = true;
      closeSync(fd);
    },
  });
}

/** What to run to create the ledger, for the sentence that refuses a missing or plain file. */
function ledgerSetupHint(what: string): string {
  return `${what}; as root: install -o <relay account> -m 0600 /dev/null FILE && chattr +a FILE (docs/consent.md, "The ledger")`;
}
