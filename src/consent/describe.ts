import { canonicalJson, tierName } from "../core/index.js";
import { decodedViews } from "./decode.js";
import type { ConsentAct } from "./types.js";

/** One pending act as a human reads it before approving it. */
export interface DescribeInput {
  /** The request id the operator types. */
  id: string;
  act: ConsentAct;
  /** Why the act has its tier (the classifier's basis). */
  basis: string;
  expiresInSeconds: number;
  /** The consent session (MCP session) that asked. */
  session: string;
  /** The MCP client that asked; "" when it has no id. */
  clientId: string;
}

/** Keys whose values are program text: the decoded views are taken from these. */
const PROGRAM_KEYS = ["command", "script", "text"];

/** The order bound arguments are listed in; keys not named here follow, sorted. */
const ORDER = [
  "operation",
  "profile",
  "run_id",
  "idempotency_key",
  "host",
  "hosts",
  "key_paths",
  "host_key_mode",
  "jump",
  "session_id",
  "owner",
  "kind",
  "program",
  "forward_id",
  "spec",
  "bind_address",
  "listen_port",
  "destination",
  "interpreter",
  "strict",
  "use_shell",
  "command",
  "command_sha256",
  "argv",
  "script",
  "script_sha256",
  "text",
  "text_sha256",
  "enter",
  "stdin_sha256",
  "env_names",
  "env_sha256",
  "cwd",
  "local_path",
  "remote_path",
  "recursive",
  "content",
];

/** Characters that would act on a terminal or hide text: C0, DEL, C1, bidi and zero-width controls. */
const UNSAFE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff]/g;
const SHORT: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/**
 * Text safe to print on a terminal, on one line: control characters as
 * `\n`, `\t`, `\xNN`, invisible and direction-changing characters as
 * `\u{NNNN}`, so nothing in an act can move the cursor, recolour the prompt
 * or reorder what the human reads. Backslashes are left as typed: the
 * digest, not this text, is what identifies the act.
 */
function safeText(text: string): string {
  return text.replace(UNSAFE, (ch) => {
    const code = ch.charCodeAt(0);
    const short = SHORT[ch];
    if (short !== undefined) return short;
    if (code < 0xa0) return `\\x${code.toString(16).padStart(2, "0")}`;
    return `\\u{${code.toString(16).padStart(4, "0")}}`;
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function scalar(value: unknown): string {
  if (value === null || value === undefined) return "(none)";
  if (typeof value === "string") return value === "" ? '""' : safeText(value);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return safeText(canonicalJson(value));
}

function keysText(value: unknown): string {
  if (!Array.isArray(value) || value.length === 0) return "(agent and default keys)";
  return value.map(scalar).join(", ");
}

/** `host (port 22, user deploy; alias web1)`, then key, host-key mode and jump when the entry has them. */
function endpointText(t: Record<string, unknown>, full: boolean): string {
  const details = [`port ${scalar(t.port)}`, `user ${scalar(t.user)}`];
  const alias = typeof t.alias === "string" && t.alias !== t.host ? `; alias ${scalar(t.alias)}` : "";
  let text = `${scalar(t.host)} (${details.join(", ")}${alias})`;
  if (full) {
    text += `; key ${keysText(t.key_paths)}; host-key mode ${scalar(t.host_key_mode)}`;
    if (Array.isArray(t.jump) && t.jump.length > 0) {
      text += `; via ${t.jump.map((hop) => (isRecord(hop) ? endpointText(hop, false) : scalar(hop))).join(" -> ")}`;
    }
  }
  return text;
}

function isEndpoint(value: unknown): value is Record<string, unknown> {
  return isRecord(value) && typeof value.host === "string" && "port" in value && "user" in value;
}

function contentText(c: Record<string, unknown>): string {
  const link = typeof c.link === "string" ? `; the path is a symlink to ${scalar(c.link)}` : "";
  if (c.type === "file") {
    return `file, ${scalar(c.size)} bytes, mode ${scalar(c.mode)}, sha256 ${scalar(c.sha256)}${link}`;
  }
  if (c.type === "directory") {
    return (
      `directory (mode ${scalar(c.mode)}), ${scalar(c.entries)} entries, ${scalar(c.files)} files, ` +
      `${scalar(c.bytes)} bytes, sha256 ${scalar(c.sha256)} over every entry${link}`
    );
  }
  return scalar(c);
}

/** The lines of one bound argument, indented by two spaces. */
function argumentLines(key: string, value: unknown, bound: Record<string, unknown>): string[] {
  const label = key.replaceAll("_", " ");
  if (key === "host" && isEndpoint(bound)) return [`  host: ${endpointText(bound, false)}`];
  if (key === "key_paths") return [`  key: ${keysText(value)}`];
  if (key === "jump" && Array.isArray(value)) {
    if (value.length === 0) return ["  jump: (none)"];
    return [
      "  jump:",
      ...value.map((hop, i) => `    ${i + 1}. ${isEndpoint(hop) ? endpointText(hop, true) : scalar(hop)}`),
    ];
  }
  if (key === "hosts" && Array.isArray(value)) {
    return [
      `  hosts (${value.length}):`,
      ...value.map((h) => `    - ${isEndpoint(h) ? endpointText(h, true) : scalar(h)}`),
    ];
  }
  if (key === "content" && isRecord(value)) return [`  content: ${contentText(value)}`];
  if (typeof value === "string" && value.includes("\n")) {
    const lines = value.split("\n");
    if (lines.at(-1) === "") lines.pop();
    return [`  ${label} (${lines.length} lines):`, ...lines.map((line) => `    | ${safeText(line)}`)];
  }
  // Other lists (argv, env names) as JSON: `["rm -rf", "/"]` and `["rm", "-rf", "/"]` must not read alike.
  if (Array.isArray(value) && value.length === 0) return [`  ${label}: (none)`];
  return [`  ${label}: ${scalar(value)}`];
}

/** Whole seconds left, never negative (an expired request reads 0s). */
function seconds(value: number): number {
  return Number.isFinite(value) ? Math.max(0, Math.floor(value)) : 0;
}

/** Keys the host line already shows. */
const FOLDED_INTO_HOST = new Set(["port", "user", "alias"]);

function orderedKeys(bound: Record<string, unknown>): string[] {
  const keys = Object.keys(bound);
  const named = ORDER.filter((k) => keys.includes(k));
  const rest = keys.filter((k) => !ORDER.includes(k)).sort();
  const folded = isEndpoint(bound) ? FOLDED_INTO_HOST : new Set<string>();
  return [...named, ...rest].filter((k) => !folded.has(k));
}

/**
 * The readable text of an act: what `[CONSENT REQUIRED id=… expires_in=…s]`
 * is followed by and what `relay-shell consent show` prints. The request,
 * the tool, the tier (number and name) and its basis, who asked, each bound
 * argument on its own line in a fixed order, then the decoded views of the
 * encodings found in the program text. Every value is escaped for a
 * terminal. Its length is linear in the act's: a bound value is shown whole,
 * since an approval for text the human could not see would be blank, and
 * the decoded views add a bounded amount.
 */
export function describeAct(input: DescribeInput): string {
  const { act } = input;
  const lines = [
    `request: ${safeText(input.id)} (expires in ${seconds(input.expiresInSeconds)}s)`,
    `tool: ${safeText(act.tool)}`,
    `tier: ${act.tier} (${tierName(act.tier)})`,
    `basis: ${input.basis === "" ? "(none)" : safeText(input.basis)}`,
    `asked by: session ${safeText(input.session)}, client ${input.clientId === "" ? "(none)" : safeText(input.clientId)}`,
    "bound arguments:",
  ];
  for (const key of orderedKeys(act.bound)) lines.push(...argumentLines(key, act.bound[key], act.bound));
  for (const key of PROGRAM_KEYS) {
    const value = act.bound[key];
    if (typeof value !== "string") continue;
    for (const view of decodedViews(value)) {
      const more = view.omittedBytes > 0 ? ` … (${view.omittedBytes} more bytes)` : "";
      lines.push(`decoded (${view.encoding}): ${safeText(view.text)}${more}`);
    }
  }
  return lines.join("\n");
}

export { type DecodedView, decodedViews, MAX_VIEW_BYTES, MAX_VIEWS } from "./decode.js";

/** The bound keys that say most about an act in one line, in the order tried. */
const SUMMARY_KEYS = [
  "operation",
  "profile",
  "run_id",
  "command",
  "script",
  "text",
  "spec",
  "local_path",
  "remote_path",
];

/**
 * One line for a list of requests (`relay-shell consent list`): the target
 * (host as dialled, session or forward id) and the first line of the program
 * text or the other key arguments, escaped for a terminal and cut to
 * `max` characters with `…`. Not for approving: only describeAct shows the
 * whole act.
 */
export function actSummary(act: ConsentAct, max = 60): string {
  const b = act.bound;
  const parts: string[] = [];
  const hosts = b.hosts;
  if (isEndpoint(b)) parts.push(`${scalar(b.user)}@${scalar(b.host)}:${scalar(b.port)}`);
  else if (Array.isArray(hosts)) parts.push(`${hosts.length} hosts`);
  for (const key of ["session_id", "forward_id"]) if (typeof b[key] === "string") parts.push(scalar(b[key]));
  for (const key of SUMMARY_KEYS) {
    const value = b[key];
    if (typeof value !== "string" || value === "") continue;
    const [first = "", ...more] = value.split("\n");
    parts.push(more.some((l) => l !== "") ? `${safeText(first)} …` : safeText(first));
  }
  const text = parts.join(" ");
  const chars = Array.from(text);
  return chars.length <= max ? text : `${chars.slice(0, Math.max(0, max - 1)).join("")}…`;
}
