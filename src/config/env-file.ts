import { join } from "node:path";
import { fail, ok, type Result } from "../core/index.js";
import { FILE_TOO_LARGE, readBoundedFile } from "../files/index.js";

/**
 * The optional `.env` file in the working directory. Only `RELAY_SHELL_*`
 * entries are taken; everything else in the file is left alone (the file may
 * belong to another program started from the same directory), and nothing
 * from it ever reaches a child process's environment.
 */
export interface EnvFile {
  /** Absolute path of the file that was read; null when there is none. */
  path: string | null;
  /** `RELAY_SHELL_*` entries, names upper-cased; a later line wins. */
  values: Map<string, { name: string; value: string }>;
  problems: string[];
}

const MAX_ENV_FILE_BYTES = 1024 * 1024;
const PREFIX = "RELAY_SHELL_";
const KEY = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

/** A setting line read as its name and value, or why it cannot be; null for a blank line or a comment. */
type LineResult = Result<{ key: string; value: string }, string> | null;

// Only the usual escapes are decoded; any other backslash stays, so a quoted
// regex such as "rm\s+-rf" keeps its meaning.
const DOUBLE_QUOTE_ESCAPES: Readonly<Record<string, string>> = {
  n: "\n",
  t: "\t",
  r: "\r",
  '"': '"',
  "\\": "\\",
};

function unescapeDouble(body: string): string {
  return body.replace(/\\(.)/gs, (whole, ch: string) => DOUBLE_QUOTE_ESCAPES[ch] ?? whole);
}

function parseValue(text: string): Result<string, string> {
  const quote = text[0];
  if (quote === '"' || quote === "'") {
    let end = 1;
    while (end < text.length && text[end] !== quote) end += quote === '"' && text[end] === "\\" ? 2 : 1;
    if (end >= text.length) return fail(`unterminated ${quote} quote`);
    const rest = text.slice(end + 1).trim();
    if (rest !== "" && !rest.startsWith("#")) return fail("text after the closing quote");
    const body = text.slice(1, end);
    return ok(quote === '"' ? unescapeDouble(body) : body);
  }
  // An unquoted value ends at a " #" comment, as in shell.
  const comment = text.search(/\s#/);
  return ok((comment === -1 ? text : text.slice(0, comment)).trim());
}

function parseLine(line: string): LineResult {
  let text = line.trim();
  if (text === "" || text.startsWith("#")) return null;
  if (/^export\s/.test(text)) text = text.slice(6).trimStart();
  const eq = text.indexOf("=");
  if (eq === -1) return fail("expected KEY=VALUE");
  const key = text.slice(0, eq).trim();
  if (!KEY.test(key)) return fail("expected KEY=VALUE");
  const parsed = parseValue(text.slice(eq + 1).trimStart());
  return parsed.ok ? ok({ key, value: parsed.value }) : parsed;
}

function looksLikeOurs(line: string): boolean {
  return line
    .trim()
    .replace(/^export\s+/, "")
    .toUpperCase()
    .startsWith(PREFIX);
}

/** Parse `.env` text; only lines that are (or look like) `RELAY_SHELL_*` settings can cause problems. */
export function parseEnvFile(text: string, label: string): Omit<EnvFile, "path"> {
  const values = new Map<string, { name: string; value: string }>();
  const problems: string[] = [];
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  lines.forEach((line, index) => {
    const result = parseLine(line);
    if (result === null) return;
    if (!result.ok) {
      if (looksLikeOurs(line)) problems.push(`${label}:${index + 1}: cannot parse setting: ${result.error}`);
      return;
    }
    const { key, value } = result.value;
    const upper = key.toUpperCase();
    if (upper.startsWith(PREFIX)) values.set(upper, { name: key, value });
  });
  return { values, problems };
}

function errnoOf(err: unknown): string | undefined {
  return err instanceof Error ? (err as NodeJS.ErrnoException).code : undefined;
}

/** Read `<cwd>/.env` if present. A missing file is normal; an unreadable one is a problem. */
export function readEnvFile(cwd: string): EnvFile {
  const path = join(cwd, ".env");
  let buffer: Buffer | null;
  try {
    // Refused by its size before a byte is read: the bound holds for any file put there.
    buffer = readBoundedFile(path, { maxBytes: MAX_ENV_FILE_BYTES, what: "settings file" });
  } catch (err) {
    const code = errnoOf(err);
    if (code === "ENOTDIR") return { path: null, values: new Map(), problems: [] };
    const reason = err instanceof Error ? err.message : String(err);
    const problem = code === FILE_TOO_LARGE ? reason : `${path}: cannot read the settings file: ${reason}`;
    return { path, values: new Map(), problems: [problem] };
  }
  if (buffer === null) return { path: null, values: new Map(), problems: [] };
  return { path, ...parseEnvFile(buffer.toString("utf8"), path) };
}
