/**
 * Secrets that are only secrets for one program: `-p` is a password to
 * `sshpass` and `docker login` but a port to `ssh` and a parent flag to
 * `mkdir`, `-a` is a password to `redis-cli` only. These rules are keyed by
 * the program name, found as a word anywhere in the text (after a path, a
 * quote, `sudo`, inside `bash -c "…"` or a JSON string), and apply to the
 * words after it up to the next command boundary.
 *
 * One pass over the text: each character is looked at a bounded number of
 * times whatever the input, so the cost stays linear.
 */
import { isSpace, type Span, scanBare, scanQuotedAt } from "./redact-scan.js";

interface ProgramRule {
  /** Flags whose value is a secret: the whole value, quotes included, is hidden. */
  secret?: readonly string[];
  /** Flags whose value is a secret only when attached (`mysql -pSECRET`; `mysql -p db` prompts). */
  attachedSecret?: readonly string[];
  /** Flags whose value is `user<sep>password`: only what follows the separator is hidden. */
  userPass?: { flags: readonly string[]; sep: string };
  /** Flags whose value is an OpenSSL pass phrase argument: only a `pass:<secret>` value is hidden. */
  passArg?: readonly string[];
  /** The flags count only after this word (`docker login -p`, not `docker run -p`). */
  verb?: string;
  /** Flags that take a value that is not secret (so the value is not a positional word). */
  valued?: readonly string[];
  /** The first positional word is the command it runs (sshpass): the rule ends there. */
  wrapper?: boolean;
  /** htpasswd: with a `b` flag the password is a positional word. */
  batchPassword?: boolean;
  /**
   * Short options parsed getopt-style: a value may be attached (`-pSECRET`) and
   * options clustered (`-su user:pw`). Off for programs with their own parsers,
   * where `-key` is one option and not `-k` with `ey` attached.
   */
  getopt?: boolean;
}

const LOGIN: ProgramRule = { verb: "login", secret: ["-p", "--password"], getopt: true };
const LDAP: ProgramRule = { secret: ["-w"], getopt: true };
const SAMBA: ProgramRule = { userPass: { flags: ["-U", "--user"], sep: "%" }, getopt: true };
const HTTPIE: ProgramRule = { userPass: { flags: ["-a", "--auth"], sep: ":" }, getopt: true };
const MONGO: ProgramRule = { secret: ["-p", "--password"] };
const MYSQL: ProgramRule = { attachedSecret: ["-p"], getopt: true };
const KEYTOOL: ProgramRule = {
  secret: ["-storepass", "-keypass", "-srcstorepass", "-deststorepass", "-srckeypass", "-destkeypass"],
};

const RULES: ReadonlyMap<string, ProgramRule> = new Map<string, ProgramRule>([
  ["sshpass", { secret: ["-p"], valued: ["-f", "-d", "-P"], wrapper: true, getopt: true }],
  ["docker", LOGIN],
  ["podman", LOGIN],
  ["nerdctl", LOGIN],
  ["buildah", LOGIN],
  ["skopeo", LOGIN],
  ["helm", LOGIN],
  ["oras", LOGIN],
  ["oc", LOGIN],
  ["az", LOGIN],
  ["cf", LOGIN],
  [
    "curl",
    {
      userPass: { flags: ["-u", "--user", "-U", "--proxy-user"], sep: ":" },
      secret: ["--pass"],
      getopt: true,
    },
  ],
  ["http", HTTPIE],
  ["https", HTTPIE],
  ["xh", HTTPIE],
  ["lftp", { userPass: { flags: ["-u", "--user"], sep: "," }, getopt: true }],
  ["ldapsearch", LDAP],
  ["ldapmodify", LDAP],
  ["ldapadd", LDAP],
  ["ldapdelete", LDAP],
  ["ldapmodrdn", LDAP],
  ["ldapcompare", LDAP],
  ["ldapwhoami", LDAP],
  ["ldapexop", LDAP],
  ["ldappasswd", { secret: ["-w", "-a", "-s"], getopt: true }],
  ["redis-cli", { secret: ["-a", "--pass"] }],
  ["smbclient", SAMBA],
  ["rpcclient", SAMBA],
  ["smbcacls", SAMBA],
  ["smbget", SAMBA],
  ["smbtree", SAMBA],
  ["net", SAMBA],
  ["htpasswd", { batchPassword: true, valued: ["-C", "-r"], getopt: true }],
  ["openssl", { passArg: ["-passin", "-passout", "-pass", "-password"], secret: ["-k"] }],
  ["mongo", MONGO],
  ["mongosh", MONGO],
  ["mongodump", MONGO],
  ["mongorestore", MONGO],
  ["mongoexport", MONGO],
  ["mongoimport", MONGO],
  ["sqlcmd", { secret: ["-P"], getopt: true }],
  ["bcp", { secret: ["-P"], getopt: true }],
  ["ipmitool", { secret: ["-P"], getopt: true }],
  ["keytool", KEYTOOL],
  ...["mysql", "mariadb", "mysqldump", "mysqladmin", "mysqlimport", "mysqlshow", "mysqlcheck", "mysqlpump"]
    .concat(["mysqlsh", "mycli", "mariadb-dump", "mariadb-admin"])
    .map((name): [string, ProgramRule] => [name, MYSQL]),
  ["jarsigner", KEYTOOL],
]);

/** Only texts naming one of the programs are walked at all. */
const ANY_PROGRAM =
  /sshpass|docker|podman|nerdctl|buildah|skopeo|helm|oras|oc|az|cf|curl|http|xh|lftp|ldap|redis-cli|smb|rpcclient|net|htpasswd|openssl|mongo|sqlcmd|bcp|ipmitool|keytool|jarsigner|mysql|mariadb|mycli/i;

/** Longest word taken for a program name or a flag; longer words are neither. */
const MAX_NAME = 64;

function isBoundary(code: number): boolean {
  // ; & | ( ) ` and line breaks end a command; `$(` and `<(` open one.
  return (
    code === 0x3b ||
    code === 0x26 ||
    code === 0x7c ||
    code === 0x28 ||
    code === 0x29 ||
    code === 0x60 ||
    code === 0x0a ||
    code === 0x0d
  );
}

function isNameChar(code: number): boolean {
  return (
    (code >= 0x30 && code <= 0x39) ||
    (code >= 0x41 && code <= 0x5a) ||
    (code >= 0x61 && code <= 0x7a) ||
    code === 0x2d ||
    code === 0x5f ||
    code === 0x2e ||
    code === 0x2b
  );
}

function isWrapping(code: number): boolean {
  // Quotes and backslashes around a word, as in `"curl` or `\"sshpass\"` inside JSON.
  return code === 0x22 || code === 0x27 || code === 0x5c;
}

/** The bounds of the word without the quotes and backslashes around it. */
function unwrap(text: string, start: number, end: number): { start: number; end: number } {
  let s = start;
  let e = end;
  while (s < e && isWrapping(text.charCodeAt(s))) s++;
  while (e > s && isWrapping(text.charCodeAt(e - 1))) e--;
  return { start: s, end: e };
}

/**
 * The program a word names: its last path component, or the name after a
 * quote, `=`, `:` or `{` (`{"CMD":"sshpass`, `X=sshpass`), lower-cased; "" when
 * the word ends in something that cannot be a name.
 */
function programName(text: string, start: number, end: number): string {
  if (end - start > MAX_NAME * 4) return "";
  let e = end;
  while (e > start && isWrapping(text.charCodeAt(e - 1))) e--;
  let s = e;
  while (s > start && isNameChar(text.charCodeAt(s - 1))) s--;
  if (s === e || e - s > MAX_NAME) return "";
  if (s > start && !"/\"'=:{\\".includes(text.charAt(s - 1))) return "";
  return text.slice(s, e).toLowerCase();
}

type Expect = "secret" | "userPass" | "passArg" | "valued";

interface State {
  rule: ProgramRule;
  verbSeen: boolean;
  /** What the next word is, when the previous one was a flag taking a value. */
  expect: Expect | null;
  positional: number;
  batch: boolean;
  display: boolean;
}

function classifyFlag(rule: ProgramRule, flag: string, attached = false): Expect | null {
  if (attached && rule.attachedSecret?.includes(flag)) return "secret";
  if (rule.secret?.includes(flag)) return "secret";
  if (rule.userPass?.flags.includes(flag)) return "userPass";
  if (rule.passArg?.includes(flag)) return "passArg";
  if (rule.valued?.includes(flag)) return "valued";
  return null;
}

/** The span to hide in a value by its kind, or null when nothing in it is secret. */
function valueSpan(text: string, v: Extent, kind: Expect, rule: ProgramRule): Span | null {
  const { start, end } = v;
  if (end <= start || kind === "valued") return null;
  if (kind === "secret") return { start: v.tokenStart, end: v.next };
  const value = text.slice(start, end);
  if (kind === "passArg") {
    const at = value.search(/(?<![A-Za-z])pass:/i);
    return at === -1 || at + 5 >= value.length ? null : { start: start + at + 5, end };
  }
  const sep = value.indexOf(rule.userPass?.sep ?? ":");
  return sep === -1 || sep + 1 >= value.length ? null : { start: start + sep + 1, end };
}

interface Extent {
  /** The content, inside any quotes. */
  start: number;
  end: number;
  /** Where the token starts (its opening quote) and where it ends, quotes included. */
  tokenStart: number;
  next: number;
}

/**
 * Where a value that starts at `at` ends: a quoted token whole (spaces and
 * command boundaries inside it included), else a bare run that stops at a
 * quote (the end of a JSON string) or a command boundary.
 */
function valueExtent(text: string, at: number): Extent {
  const quoted = scanQuotedAt(text, at);
  if (quoted !== null) {
    return { start: quoted.contentStart, end: quoted.contentEnd, tokenStart: at, next: quoted.end };
  }
  let end = scanBare(text, at, true);
  for (let i = at; i < end; i++) {
    if (isBoundary(text.charCodeAt(i))) {
      end = i;
      break;
    }
  }
  return { start: at, end, tokenStart: at, next: end };
}

/**
 * A flag word against the rule: `--flag=value` carries its value inline, and
 * for getopt-style programs `-Xvalue` too, while `-abX` is a cluster whose last
 * letter takes the next word. Returns where the scan resumes.
 */
function flagWord(text: string, start: number, end: number, state: State, into: Span[]): number {
  const { rule } = state;
  const word = text.slice(start, end);
  const eq = word.indexOf("=");
  if (eq > 0) {
    const kind = classifyFlag(rule, word.slice(0, eq));
    if (kind !== null) {
      const v = valueExtent(text, start + eq + 1);
      const span = valueSpan(text, v, kind, rule);
      if (span !== null) into.push(span);
      return Math.max(v.next, end);
    }
  }
  const whole = classifyFlag(rule, word);
  if (whole !== null) {
    state.expect = whole;
    return end;
  }
  if (!rule.getopt || word.startsWith("--")) return end;
  const attached = classifyFlag(rule, word.slice(0, 2), true);
  if (attached !== null && word.length > 2) {
    const v = valueExtent(text, start + 2);
    const span = valueSpan(text, v, attached, rule);
    if (span !== null) into.push(span);
    return Math.max(v.next, end);
  }
  if (word.length <= 8 && /^-[A-Za-z]+$/.test(word)) {
    const last = classifyFlag(rule, `-${word.slice(-1)}`);
    if (last !== null) state.expect = last;
    if (rule.batchPassword) {
      if (word.includes("b")) state.batch = true;
      if (word.includes("n")) state.display = true;
    }
  }
  return end;
}

/** `sshpass -p x`, `curl -u user:x`, `docker login -p x`, … → the value hidden (see the rule table). */
export function programSecrets(text: string, into: Span[]): void {
  if (!ANY_PROGRAM.test(text)) return;
  let state: State | null = null;
  const n = text.length;
  let i = 0;
  while (i < n) {
    const code = text.charCodeAt(i);
    if (isBoundary(code)) {
      state = null;
      i++;
      continue;
    }
    if (isSpace(code)) {
      i++;
      continue;
    }
    if (state !== null && state.expect !== null) {
      const kind = state.expect;
      state.expect = null;
      const v = valueExtent(text, i);
      const span = valueSpan(text, v, kind, state.rule);
      if (span !== null) into.push(span);
      i = Math.max(v.next, i + 1);
      continue;
    }
    let end = i;
    while (end < n && !isSpace(text.charCodeAt(end)) && !isBoundary(text.charCodeAt(end))) end++;
    // Inside a command, a flag (`-pQa:xh`) and an argument the rule is counting (a password such as
    // `Qa=xh` or `p/curl`) are that, whatever they end in: not the start of another program's command.
    const name = state !== null && isArgument(state, text, i) ? "" : programName(text, i, end);
    const rule = name === "" ? undefined : RULES.get(name);
    if (rule !== undefined) {
      state = fresh(rule);
      i = end;
    } else if (state !== null) {
      const after = afterWord(text, i, end, state, into);
      state = after.state;
      i = Math.max(after.next, end);
    } else {
      i = end;
    }
  }
}

/** Whether the word at `at` is a flag, or one of the positional arguments the rule counts up to its password. */
function isArgument(state: State, text: string, at: number): boolean {
  if (text.charCodeAt(at) === 0x2d) return true;
  if (!state.rule.batchPassword || !state.batch) return false;
  return state.positional < (state.display ? 2 : 3);
}

function fresh(rule: ProgramRule): State {
  return { rule, verbSeen: false, expect: null, positional: 0, batch: false, display: false };
}

/**
 * One word after the program: the state that follows (null once the rule no
 * longer applies) and where the scan resumes.
 */
function afterWord(
  text: string,
  start: number,
  end: number,
  state: State,
  into: Span[],
): { state: State | null; next: number } {
  const { rule } = state;
  const bare = unwrap(text, start, end);
  const word = text.slice(bare.start, bare.end);
  if (rule.verb !== undefined && !state.verbSeen) {
    if (word.toLowerCase() === rule.verb) state.verbSeen = true;
    return { state, next: end };
  }
  if (word.startsWith("-") && word.length > 1) {
    return { state, next: flagWord(text, bare.start, bare.end, state, into) };
  }
  if (rule.wrapper) {
    // The command sshpass runs: its own flags (`ssh -p 22`) are not sshpass's.
    const next = RULES.get(programName(text, start, end));
    return { state: next === undefined ? null : fresh(next), next: end };
  }
  if (rule.batchPassword && state.batch) {
    // htpasswd -b FILE USER PASSWORD, or -nb USER PASSWORD.
    state.positional++;
    if (state.positional === (state.display ? 2 : 3)) {
      const v = valueExtent(text, start);
      if (v.end > v.start) into.push({ start: v.start, end: v.end });
      return { state, next: v.next };
    }
  }
  return { state, next: end };
}
