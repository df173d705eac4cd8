/**
 * Text an SSH server chose (SFTP status messages, directory entry names) is
 * shown to the caller only after it is made inert and short: a server could
 * otherwise send escape sequences that drive the operator's terminal, or a
 * quarter-megabyte message that blows every output budget (ADR 0015).
 */

/** Characters of a server's error message kept in an error text. */
export const MAX_SERVER_MESSAGE_CHARS = 300;

/** Characters of a server-supplied name kept where a path is shown. */
const MAX_SHOWN_NAME_CHARS = 160;

// ESC-introduced sequences (CSI with its parameters, OSC/DCS/APC/PM/SOS strings up to BEL or ST,
// two-character escapes) and their 8-bit C1 forms.
const ESCAPE_SEQUENCE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  /\u001b\[[0-?]*[ -/]*[@-~]?|\u009b[0-?]*[ -/]*[@-~]?|[\u001b][\]P_^X][^\u0007\u001b\u009c]*(?:\u0007|\u001b\\|\u009c)?|[\u0090\u009d-\u009f][^\u0007\u001b\u009c]*(?:\u0007|\u001b\\|\u009c)?|\u001b[ -~]?/g;
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
// Bidirectional overrides and isolates can reorder what a reader sees.
const BIDI = /[\u202a-\u202e\u2066-\u2069]/g;

/** The first `max` characters (a surrogate pair is never split), and how long the whole was. */
function shorten(text: string, max: number, total: number): string {
  let end = Math.min(text.length, max);
  const last = text.charCodeAt(end - 1);
  if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}… (${total} characters)`;
}

/**
 * A server's free-text message for an error text: escape sequences and
 * control characters removed (runs of them become one space), at most
 * MAX_SERVER_MESSAGE_CHARS characters.
 */
export function cleanServerMessage(text: string): string {
  // Bound before the regexes run, so a huge message costs no more than a short one.
  const head =
    text.length > MAX_SERVER_MESSAGE_CHARS * 4 ? text.slice(0, MAX_SERVER_MESSAGE_CHARS * 4) : text;
  const clean = head
    .replace(ESCAPE_SEQUENCE, " ")
    .replace(CONTROL, " ")
    .replace(BIDI, "")
    .replace(/ {2,}/g, " ")
    .trim();
  if (clean.length <= MAX_SERVER_MESSAGE_CHARS && head.length === text.length) return clean || "(no message)";
  return shorten(clean, MAX_SERVER_MESSAGE_CHARS, text.length);
}

/**
 * A path or name that may hold server-chosen characters, for a message or
 * the `skipped` list: every control and bidi character shown as `\xNN` /
 * `\u{NNNN}` (so a NUL or an escape stays visible, never acted on), at most
 * `max` characters.
 */
export function printablePath(text: string, max = MAX_SHOWN_NAME_CHARS * 2): string {
  const head = text.length > max * 2 ? text.slice(0, max * 2) : text;
  const shown = head
    .replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`)
    .replace(BIDI, (c) => `\\u{${c.charCodeAt(0).toString(16)}}`);
  if (shown.length <= max && head.length === text.length) return shown;
  return shorten(shown, max, text.length);
}
