/** PATH given to children when the server itself runs without one. */
export const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/**
 * The complete environment of a child (CONTRACT §2.3.4).
 *
 * Start from `base` (undefined entries dropped), default PATH and LANG when
 * unset, force DEBIAN_FRONTEND=noninteractive and GIT_TERMINAL_PROMPT=0 so
 * package managers and git never wait for a prompt nobody can answer, then
 * apply `envJson` when it is a JSON object:
 * - a string value is used as is; numbers, booleans, arrays and objects
 *   become their JSON text (`true`, `8080`, `{"a":1}`), not Python's `True`;
 * - `null` removes the variable, the forced ones included;
 * - malformed JSON, or JSON that is not an object, applies no overlay and is
 *   not an error (the contract wants it ignored silently).
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

  const overlay = parseOverlay(envJson);
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

function parseOverlay(envJson: string): Record<string, unknown> | undefined {
  if (envJson.trim() === "") return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(envJson);
  } catch {
    // Malformed overlay: the contract says to run with the base environment, without an error.
    return undefined;
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return undefined;
  return parsed as Record<string, unknown>;
}

function toEnvText(value: unknown): string {
  if (typeof value === "string") return value;
  // String() equals the JSON text for finite numbers and booleans, and avoids JSON's "null" for 1e400.
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value);
}

function isUsableName(name: string): boolean {
  return name !== "" && !name.includes("=") && !name.includes("\0");
}
