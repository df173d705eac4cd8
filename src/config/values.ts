import { isAbsolute, join, resolve } from "node:path";
import { z } from "zod";
import { fail, ok, type Result } from "../core/index.js";
import { compilePolicyRegex } from "./regex.js";

/** Where relative and `~` paths point, and where the embedded defaults live (docs/wire-contract.md §14.16). */
export interface PathContext {
  cwd: string;
  home: string;
  /** `$XDG_STATE_HOME/relay-shell` or `~/.local/state/relay-shell`. */
  stateDir: string;
}

/** A setting's raw text as found in the environment; undefined when unset. */
export type RawValue = string | undefined;

export type SettingSchema<T> = z.ZodType<T, RawValue>;

/** Why a value is refused: what was expected, and what is wrong with it when that says more. */
interface Refused {
  expected: string;
  detail?: string;
}

type Parsed<T> = Result<T, Refused>;

const MAX_SHOWN = 200;

/** The offending value as a one-line quoted string, shortened so a huge value cannot flood the log. */
function quoteValue(raw: string): string {
  const shown = raw.length > MAX_SHOWN ? `${raw.slice(0, MAX_SHOWN)}... (${raw.length} characters)` : raw;
  return JSON.stringify(shown);
}

/** One problem line: `RELAY_SHELL_X: expected integer 1..3600, got "5m"`. */
function problemLine(env: string, expected: string, raw: string, detail?: string): string {
  const tail = detail === undefined ? "" : `: ${detail}`;
  return `${env}: expected ${expected}, got ${quoteValue(raw)}${tail}`;
}

function setting<T>(env: string, fallback: () => T, parse: (raw: string) => Parsed<T>): SettingSchema<T> {
  return z
    .string()
    .optional()
    .transform((raw, ctx): T => {
      if (raw === undefined) return fallback();
      const parsed = parse(raw);
      if (parsed.ok) return parsed.value;
      ctx.addIssue({
        code: "custom",
        message: problemLine(env, parsed.error.expected, raw, parsed.error.detail),
      });
      return z.NEVER;
    });
}

// Decimal only: a unit suffix, an exponent or a hex prefix is refused, not guessed at.
const DECIMAL = /^[+-]?[0-9]+$/;

export function integerSetting(
  env: string,
  fallback: number,
  min: number,
  max: number,
): SettingSchema<number> {
  const expected = `integer ${min}..${max}`;
  return setting(
    env,
    () => fallback,
    (raw) => {
      const text = raw.trim();
      if (!DECIMAL.test(text)) return fail({ expected });
      const value = Number(text);
      if (!Number.isSafeInteger(value) || value < min || value > max) return fail({ expected });
      return ok(value === 0 ? 0 : value); // "-0" becomes 0
    },
  );
}

const TRUE_WORDS = new Set(["true", "1", "yes", "on"]);
const FALSE_WORDS = new Set(["false", "0", "no", "off"]);

export function booleanSetting(env: string, fallback: boolean): SettingSchema<boolean> {
  return setting(
    env,
    () => fallback,
    (raw) => {
      const word = raw.trim().toLowerCase();
      if (TRUE_WORDS.has(word)) return ok(true);
      if (FALSE_WORDS.has(word)) return ok(false);
      return fail({ expected: "boolean (true/false, 1/0, yes/no, on/off)" });
    },
  );
}

export function enumSetting<const T extends string>(
  env: string,
  values: readonly T[],
  fallback: T,
): SettingSchema<T> {
  const expected = `one of ${values.join(", ")}`;
  return setting(
    env,
    () => fallback,
    (raw) => {
      const word = raw.trim().toLowerCase();
      const found = values.find((v) => v === word);
      return found === undefined ? fail({ expected }) : ok(found);
    },
  );
}

/** A lenient enumeration: its words, and the one an unknown value falls back to. */
export interface LenientEnum<T extends string> {
  env: string;
  values: readonly T[];
  fallback: T;
}

/** The word `raw` names, trimmed and in any case like every enumerated setting; undefined for any other text. */
function lenientWord<T extends string>(raw: string, values: readonly T[]): T | undefined {
  const word = raw.trim().toLowerCase();
  return values.find((v) => v === word);
}

/**
 * An enumeration whose unknown values fall back to `fallback` instead of
 * failing start-up: for a setting where the fallback is the strictest choice,
 * so a typo can only make the server stricter than meant, never looser.
 * Start-up still says so (lenientWarning), or the operator would not know.
 */
export function lenientEnumSetting<const T extends string>(spec: LenientEnum<T>): SettingSchema<T> {
  return setting(
    spec.env,
    () => spec.fallback,
    (raw) => ok(lenientWord(raw, spec.values) ?? spec.fallback),
  );
}

/** The warning for a value of a lenient enumeration that names none of its words; null when it names one or is blank. */
export function lenientWarning<T extends string>(
  spec: LenientEnum<T>,
  raw: string | undefined,
): string | null {
  if (raw === undefined || raw.trim() === "" || lenientWord(raw, spec.values) !== undefined) return null;
  return `${spec.env}=${quoteValue(raw)} is none of ${spec.values.join(", ")}: ${spec.fallback} is used`;
}

/**
 * Expand `~` and resolve against the working directory. `~user` is refused
 * rather than looked up: the loader does no account lookups.
 */
function expandPath(value: string, ctx: PathContext): Parsed<string> {
  if (value === "~") return ok(ctx.home);
  if (value.startsWith("~/")) return ok(join(ctx.home, value.slice(2)));
  if (value.startsWith("~")) {
    return fail({ expected: "a file path", detail: "the ~user form is not supported, write the path out" });
  }
  if (value.includes("\0")) return fail({ expected: "a file path", detail: "NUL byte in path" });
  return ok(isAbsolute(value) ? resolve(value) : resolve(ctx.cwd, value));
}

/**
 * A path setting. Surrounding blanks are dropped and an empty value means
 * "unset" (the default applies; for optional paths the default is "").
 */
export function pathSetting(env: string, ctx: PathContext, fallback: () => string): SettingSchema<string> {
  const fallbackPath = () => {
    const value = fallback();
    if (value === "") return "";
    const expanded = expandPath(value, ctx);
    return expanded.ok ? expanded.value : value;
  };
  return setting(env, fallbackPath, (raw) => {
    const text = raw.trim();
    return text === "" ? ok(fallbackPath()) : expandPath(text, ctx);
  });
}

const HOST = /^(?:\[[0-9A-Za-z:.%_-]+\]|[0-9A-Za-z:.%_-]+)$/;

export function hostSetting(env: string, fallback: string): SettingSchema<string> {
  return setting(
    env,
    () => fallback,
    (raw) => {
      const text = raw.trim();
      if (!HOST.test(text)) return fail({ expected: "a host name or IP address to bind" });
      return ok(text);
    },
  );
}

const URL_PATH = /^\/[^\s?#]*$/;

export function urlPathSetting(env: string, fallback: string): SettingSchema<string> {
  return setting(
    env,
    () => fallback,
    (raw) => {
      const text = raw.trim();
      if (!URL_PATH.test(text)) {
        return fail({ expected: 'a URL path starting with "/" (no blanks, "?" or "#")' });
      }
      return ok(text);
    },
  );
}

/** A PostgreSQL URL with its password, if any, replaced for display. */
export function maskedStateUrl(text: string): string {
  if (!URL.canParse(text)) return text.replace(/:[^:@/]*@/, ":***@");
  const url = new URL(text);
  if (url.password !== "") url.password = "***";
  return url.toString();
}

/** `postgres://` or `postgresql://` with a host; `""` is none (the embedded SQLite state). */
export function stateUrlSetting(env: string): SettingSchema<string> {
  const expected = "a postgres:// or postgresql:// URL with a host (or empty for the embedded state)";
  return z
    .string()
    .optional()
    .transform((raw, ctx): string => {
      const text = raw?.trim() ?? "";
      if (text === "") return "";
      const url = URL.canParse(text) ? new URL(text) : null;
      if (url && (url.protocol === "postgres:" || url.protocol === "postgresql:") && url.hostname !== "") {
        return text;
      }
      // The password is a secret: the problem line shows the URL without it.
      const shown = JSON.stringify(maskedStateUrl(text).slice(0, MAX_SHOWN));
      ctx.addIssue({ code: "custom", message: `${env}: expected ${expected}, got ${shown}` });
      return z.NEVER;
    });
}

const INSTANCE = /^[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?$/;

/** A relay's name among several: lowercase letters, digits and inner hyphens, at most 32. */
export function instanceSetting(env: string): SettingSchema<string> {
  return setting(
    env,
    () => "",
    (raw) => {
      const text = raw.trim();
      if (text === "" || INSTANCE.test(text)) return ok(text);
      return fail({ expected: "1-32 lowercase letters, digits and inner hyphens" });
    },
  );
}

export function urlSetting(env: string, fallback: string): SettingSchema<string> {
  const expected = "an http:// or https:// URL without query or fragment";
  return setting(
    env,
    () => fallback,
    (raw) => {
      const text = raw.trim();
      if (!URL.canParse(text)) return fail({ expected });
      const url = new URL(text);
      const valid =
        (url.protocol === "https:" || url.protocol === "http:") && url.search === "" && url.hash === "";
      return valid ? ok(text) : fail({ expected });
    },
  );
}

/** A web origin (scheme, host, port; no path, credentials, query or fragment), as the browser spells it; `""` keeps the fallback. */
export function originSetting(env: string, fallback: string): SettingSchema<string> {
  const expected = "an http:// or https:// origin (scheme, host and port only)";
  return setting(
    env,
    () => fallback,
    (raw) => {
      const text = raw.trim();
      if (text === "") return ok(fallback);
      if (!URL.canParse(text)) return fail({ expected });
      const url = new URL(text);
      const valid =
        (url.protocol === "https:" || url.protocol === "http:") &&
        url.username === "" &&
        url.password === "" &&
        url.pathname === "/" &&
        url.search === "" &&
        url.hash === "" &&
        !text.endsWith("?") &&
        !text.endsWith("#");
      return valid ? ok(url.origin) : fail({ expected });
    },
  );
}

/** `""` means no list; anything else must compile (docs/wire-contract.md §4.4, §14.9). */
export function regexSetting(env: string): SettingSchema<RegExp | null> {
  return setting<RegExp | null>(
    env,
    () => null,
    (raw) => {
      if (raw === "") return ok(null);
      const compiled = compilePolicyRegex(raw);
      if (compiled.ok) return ok(compiled.value);
      return fail({ expected: 'a JavaScript regular expression (flags "iu")', detail: compiled.error });
    },
  );
}

/** The longest path a Unix-domain socket address holds on Linux: `sun_path` is 108 bytes with its NUL. */
const MAX_SOCKET_PATH_BYTES = 107;

/**
 * The path of a Unix-domain socket to connect to; `""` (the default) means
 * none. A longer path is refused here: the kernel would not take it, and a
 * path cut to fit could name another socket.
 */
export function socketPathSetting(env: string, ctx: PathContext): SettingSchema<string> {
  return setting(
    env,
    () => "",
    (raw) => {
      const text = raw.trim();
      if (text === "") return ok("");
      const expanded = expandPath(text, ctx);
      if (!expanded.ok) return expanded;
      const bytes = Buffer.byteLength(expanded.value, "utf8");
      if (bytes > MAX_SOCKET_PATH_BYTES) {
        return fail({
          expected: `a Unix socket path of at most ${MAX_SOCKET_PATH_BYTES} bytes`,
          detail: `it resolves to ${bytes} bytes`,
        });
      }
      return ok(expanded.value);
    },
  );
}
