/**
 * The environment overlay of shell_exec/shell_spawn/shell_script arrives as a
 * last line of JSON (docs/wire-contract.md §5.4). Its values are classified as command
 * text (a variable may hold the payload, docs/wire-contract.md §5.7 row 81) and the line itself is kept
 * away from the shell parser, which would only see a malformed word.
 */
export function splitEnvOverlay(text: string): {
  body: string;
  values: string[];
  env: Record<string, unknown>;
} {
  const nl = text.lastIndexOf("\n");
  if (nl < 0) return { body: text, values: [], env: {} };
  const { values, env } = parseEnvOverlay(text.slice(nl + 1));
  return env === null ? { body: text, values: [], env: {} } : { body: text.slice(0, nl), values, env };
}

/** An env_json overlay: its values as text, or env null when the text is not a JSON object. */
export function parseEnvOverlay(text: string): { values: string[]; env: Record<string, unknown> | null } {
  const last = text.trim();
  if (!last.startsWith("{") || !last.endsWith("}")) return { values: [], env: null };
  let parsed: unknown;
  try {
    parsed = JSON.parse(last);
  } catch {
    // Not JSON after all: it is shell text like the rest.
    return { values: [], env: null };
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
    return { values: [], env: null };
  const values = Object.values(parsed as Record<string, unknown>).map((v) =>
    typeof v === "string" ? v : JSON.stringify(v),
  );
  return { values, env: parsed as Record<string, unknown> };
}
