import { RelayError } from "../core/index.js";

/** PATH given to children when the server itself runs without one. */
export const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/**
 * The complete environment of a child (docs/wire-contract.md §2.3.4).
 *
 * Start from `base` (undefined entries dropped), default PATH and LANG when
 * unset, force DEBIAN_FRONTEND=noninteractive and GIT_TERMINAL_PROMPT=0 so
 * package managers and git never wait for a prompt nobody can answer, then
 * apply `envJson`, a flat JSON object (see parseEnvOverlay):
 * - a string value is used as is; numbers and booleans become their JSON
 *   text (`true`, `8080`), not Python's `True`;
 * - `null` removes the variable, the forced ones included.
 *
 * Names that are empty or contain `=` or NUL, and values containing NUL, are
 * skipped wherever they come from: the OS cannot carry them and Node's spawn
 * would throw on them. Integers beyond 2^53 lose precision in JSON.parse;
 * pass them as strings.
 */
export function buildEnv(
  base: Readonly<Record<string, string | undefined>>,
  envJson: string,
): Record<string, string> {
  // A null-prototype object so that a key such as "__proto__" is stored as a plain variable.
  const env: Record<string, string> = Object.create(null);
  for (const [name, value] of Object.entries(base)) {
    if (value !== undefined && isUsableName(name) && !value.includes("\0")) env[name] = value;
  }
  env.PATH ??= DEFAULT_PATH;
  env.LANG ??= "C.UTF-8";
  env.DEBIAN_FRONTEND = "noninteractive";
  env.GIT_TERMINAL_PROMPT = "0";

  const overlay = parseEnvOverlay(envJson);
  if (overlay === undefined) return env;
  for (const [name, value] of Object.entries(overlay)) {
    if (!isUsableName(name)) continue;
    if (value === null) {
      delete env[name];
      continue;
    }
    const text = toEnvText(value);
    if (!text.includes("\0")) env[name] = text;
  }
  return env;
}

/**
 * The changes `envJson` makes to a child's environment, exactly as
 * {@link buildEnv} applies them: a variable's text, or null when it is
 * removed. Names the OS cannot carry and values holding NUL are left out,
 * since buildEnv skips them too. Throws the same ValueError on an overlay
 * that is not a flat JSON object. What a consent approval binds (the
 * environment a command gets from its caller) is this, not the server's own
 * environment.
 */
export function envOverlay(envJson: string): Record<string, string | null> {
  const out: Record<string, string | null> = Object.create(null);
  const overlay = parseEnvOverlay(envJson);
  if (overlay === undefined) return out;
  for (const [name, value] of Object.entries(overlay)) {
    if (!isUsableName(name)) continue;
    if (value === null) {
      out[name] = null;
      continue;
    }
    const text = toEnvText(value);
    if (!text.includes("\0")) out[name] = text;
  }
  return out;
}

const SHAPE = 'a flat JSON object such as {"NAME":"value","OTHER":null}';

function valueError(message: string): RelayError {
  return new RelayError("ValueError", message);
}

/**
 * An overlay that is not what the caller meant is refused rather than
 * ignored: a command run without the environment it was given (a trailing
 * comma dropping `DRY_RUN=1`) is worse than no run. The text is scanned for
 * nesting before it is parsed, so no input, however deep, builds a deep
 * structure or reaches a recursive function.
 */
function parseEnvOverlay(envJson: string): Record<string, unknown> | undefined {
  if (envJson.trim() === "") return undefined;
  refuseNesting(envJson);
  let parsed: unknown;
  try {
    parsed = JSON.parse(envJson);
  } catch (err) {
    throw valueError(`env_json is not valid JSON (${(err as Error).message}); expected ${SHAPE}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw valueError(`env_json must be ${SHAPE}, got ${jsonKind(parsed)}`);
  }
  return parsed as Record<string, unknown>;
}

function jsonKind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "string" ? "a string" : `a ${typeof value}`;
}

/**
 * Refuse an array or object inside the overlay, naming the variable whose
 * value it is. One pass over the text, tracking strings and depth only.
 */
function refuseNesting(text: string): void {
  let depth = 0;
  let top = "";
  let lastString = -1;
  let lastStringEnd = -1;
  let key = "";
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      lastString = i;
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === "\\") i++;
      lastStringEnd = i;
    } else if (c === ":") {
      key = depth === 1 && lastString !== -1 ? text.slice(lastString, lastStringEnd + 1) : "";
    } else if (c === ",") {
      key = "";
    } else if (c === "{" || c === "[") {
      if (depth === 0) top = c;
      depth++;
      if (depth < 2) continue;
      const what = c === "{" ? "an object" : "an array";
      if (top !== "{" || key === "")
        throw valueError(`env_json must be ${SHAPE}, got nested arrays or objects`);
      const name = keyText(key);
      throw valueError(
        `env_json: the value of ${name} is ${what}; a variable's value must be a string, number, boolean or null`,
      );
    } else if (c === "}" || c === "]") {
      depth--;
    }
  }
}

/** The key as the caller wrote it, quoted and bounded for the message. */
function keyText(quoted: string): string {
  let name = quoted;
  try {
    name = JSON.stringify(JSON.parse(quoted));
  } catch {
    // A malformed key is shown as written; JSON.parse will report the syntax after this check.
  }
  return name.length > 100 ? `${name.slice(0, 100)}…"` : name;
}

function toEnvText(value: unknown): string {
  if (typeof value === "string") return value;
  // String() equals the JSON text for finite numbers and booleans, and avoids JSON's "null" for 1e400.
  return String(value);
}

function isUsableName(name: string): boolean {
  return name !== "" && !name.includes("=") && !name.includes("\0");
}
