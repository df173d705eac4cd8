/**
 * Prefix-preserving redaction rules: each keeps the name that says "a secret
 * follows" (a header, a keyword, a flag) and hides only the value, so the
 * audit line still tells what kind of credential was passed.
 */
import {
  collectSpans,
  isBlank,
  isDash,
  isQuote,
  isSpace,
  type Span,
  scanBare,
  scanHeaderValue,
  scanQuotedAt,
  scanWhile,
} from "./redact-scan.js";

/**
 * End of a JSON object or array that opens at `at`: the matching bracket
 * outside strings, or the end of the text when it never closes (the rest may
 * lie beyond the scan window).
 */
function structureEnd(text: string, at: number): number {
  let depth = 0;
  for (let i = at; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const quoted = scanQuotedAt(text, i);
      i = (quoted?.end ?? text.length) - 1;
    } else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return text.length;
}

/**
 * The value after a key: the inside of a quoted value (quotes kept), a whole
 * JSON object or array (`"credentials": {…}`), or a bare run.
 */
function keyedValueSpan(text: string, at: number): Span | null {
  const open = text.charCodeAt(at);
  if (open === 0x7b || open === 0x5b) return { start: at, end: structureEnd(text, at) };
  const quoted = scanQuotedAt(text, at);
  if (quoted !== null) {
    return quoted.contentEnd > quoted.contentStart
      ? { start: quoted.contentStart, end: quoted.contentEnd }
      : null;
  }
  const end = scanBare(text, at, true);
  return end > at ? { start: at, end } : null;
}

// `[^/\s:]+` may hold an `@` (an e-mail address as user name); the password
// runs to the last `@` before the path or a space.
const URL_USERINFO = /:\/\/[^/\s:]+:[^/\s]*/;

/**
 * `scheme://user:pass@` → `scheme://[REDACTED]@`. `windowCut` says the text is
 * a prefix of a longer string: a user:password run that reaches its end may
 * still be closed by an `@` beyond the window, so it is hidden too.
 */
export function urlCredentials(text: string, windowCut: boolean, into: Span[]): void {
  if (!text.includes("://")) return;
  collectSpans(
    text,
    URL_USERINFO,
    (m) => {
      const start = m.index + 3;
      const colon = text.indexOf(":", start);
      const at = m[0].lastIndexOf("@");
      const end = m.index + m[0].length;
      if (at !== -1 && m.index + at > colon + 1) return { start, end: m.index + at };
      return windowCut && end === text.length ? { start, end } : null;
    },
    into,
  );
}

const AUTHORIZATION = /(?<![A-Za-z0-9_])(?:proxy-)?authorization((?:\\?["'])?)[ \t]*[:=][ \t]*/i;

/**
 * `Authorization` / `Proxy-Authorization` values. JSON (`"Authorization": "…"`)
 * and quoted values keep their quotes; a header inside a quoted argument
 * (`-H "Authorization: Bearer x"`) runs to that argument's closing quote; a
 * bare header runs to the end of the line or a shell control operator.
 */
export function authorizationHeaders(text: string, into: Span[]): void {
  collectSpans(
    text,
    AUTHORIZATION,
    (m) => {
      const at = m.index + m[0].length;
      if (scanQuotedAt(text, at) !== null) return keyedValueSpan(text, at);
      const keyQuoteClosed = (m[1] ?? "") !== "";
      const before = text.charCodeAt(m.index - 1);
      if (!keyQuoteClosed && isQuote(before)) {
        // Re-read the argument from its opening quote to find where it closes.
        const opening = text.charCodeAt(m.index - 2) === 0x5c ? m.index - 2 : m.index - 1;
        const quoted = scanQuotedAt(text, opening);
        if (quoted !== null) return quoted.contentEnd > at ? { start: at, end: quoted.contentEnd } : null;
      }
      const end = scanHeaderValue(text, at);
      return end > at ? { start: at, end } : null;
    },
    into,
  );
}

const BEARER = /(?<![A-Za-z0-9_])bearer[ \t]+/i;

function isBearerChar(code: number): boolean {
  return (
    (code >= 0x30 && code <= 0x39) ||
    (code >= 0x41 && code <= 0x5a) ||
    (code >= 0x61 && code <= 0x7a) ||
    code === 0x2d || // -
    code === 0x2e || // .
    code === 0x5f || // _
    code === 0x7e || // ~
    code === 0x2b || // +
    code === 0x2f || // /
    code === 0x3d // =
  );
}

/** `Bearer <token>` wherever it appears (a header split over arguments, prose, JSON). */
export function bearerTokens(text: string, into: Span[]): void {
  collectSpans(
    text,
    BEARER,
    (m) => {
      const at = m.index + m[0].length;
      const end = scanWhile(text, at, isBearerChar);
      return end > at ? { start: at, end } : null;
    },
    into,
  );
}

// No boundary before the keyword, so compound names (`DB_PASSWORD=`,
// `client_secret:`) match; the AWS spelling comes before plain `secret` so the
// `_PATH`-suffixed variable fails on both and is left alone.
const KEYWORD =
  /(?:api[_-]?key|secret[_-]?access[_-]?key|secret|token|password|passwd|pwd|credentials?)((?:\\?["'])?)[ \t]*[:=][ \t]*/i;
// Names that end in a secret word after a separator (`DB_PASS`, `SECRET_KEY`,
// `db.pass`, `--vault-token=`), and `pass` on its own (`pass:x` to OpenSSL).
// `_KEY` needs the underscore: `--ssh-key=` and `-newkey` name files and algorithms.
const SUFFIXED_NAME =
  /(?:(?<=[A-Za-z0-9])(?:[_.-](?:pass|passwd|pwd|token|secret|passphrase)|_key)|(?<![A-Za-z0-9_.-])pass)((?:\\?["'])?)[ \t]*[:=][ \t]*/i;

/** `password: x`, `token=x`, `"api_key": "x"`, `AWS_SECRET_ACCESS_KEY=x`, `DB_PASS=x`, `SECRET_KEY="x"` … */
export function keywordAssignments(text: string, into: Span[]): void {
  collectSpans(text, KEYWORD, (m) => keyedValueSpan(text, m.index + m[0].length), into);
  collectSpans(text, SUFFIXED_NAME, (m) => keyedValueSpan(text, m.index + m[0].length), into);
}

const AZURE_KEY = /(?<![A-Za-z0-9_])(?:AccountKey|SharedAccessKey)=/i;
const SAS_SIGNATURE = /[?&]sig=/i;

function isAzureKeyChar(code: number): boolean {
  return code !== 0x3b && !isSpace(code) && !isQuote(code);
}

function isUrlSafe(code: number): boolean {
  return (
    (code >= 0x30 && code <= 0x39) ||
    (code >= 0x41 && code <= 0x5a) ||
    (code >= 0x61 && code <= 0x7a) ||
    code === 0x25 || // %
    code === 0x2b || // +
    code === 0x2f || // /
    code === 0x3d || // =
    code === 0x5f || // _
    code === 0x2e || // .
    code === 0x7e || // ~
    code === 0x2d // -
  );
}

const SAS_MIN_LENGTH = 20;

/** Azure connection-string keys (value up to `;`) and SAS URL signatures. */
export function azureKeys(text: string, into: Span[]): void {
  const keyEnd = (m: RegExpExecArray): Span | null => {
    const at = m.index + m[0].length;
    const end = scanWhile(text, at, isAzureKeyChar);
    return end > at ? { start: at, end } : null;
  };
  const signatureEnd = (m: RegExpExecArray): Span | null => {
    const at = m.index + m[0].length;
    const end = scanWhile(text, at, isUrlSafe);
    return end - at >= SAS_MIN_LENGTH ? { start: at, end } : null;
  };
  collectSpans(text, AZURE_KEY, keyEnd, into);
  collectSpans(text, SAS_SIGNATURE, signatureEnd, into);
}

// The dash may not follow a letter or digit, so `Get-Credential -Message hi`
// is a cmdlet name and not a flag.
const CLI_FLAG =
  /(?<![A-Za-z0-9_])--?(?:password|passwd|pass|pwd|secret|token|api[-_]?key|credentials?)[= \t]+/i;
// `--db-password x`, `--http-password x`, `--vault-token x`: a long option whose
// last part is a secret word. Anchored at the start of the dash run, so each
// word is tried once.
const COMPOUND_FLAG =
  /(?<![A-Za-z0-9_-])--?[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*?[-_](?:password|passwd|pass|pwd|secret|token|api[-_]?key|credentials?)[= \t]+/i;

/**
 * `--password x`, `--token=x`, `-Credential x`: the whole value, quotes
 * included, becomes the placeholder. A value may start with one dash, but a
 * following `--long-option` means the flag had no inline value.
 */
export function cliFlags(text: string, into: Span[]): void {
  for (const flag of [CLI_FLAG, COMPOUND_FLAG]) flagValues(text, flag, into);
}

function flagValues(text: string, flag: RegExp, into: Span[]): void {
  collectSpans(
    text,
    flag,
    (m) => {
      const at = m.index + m[0].length;
      const quoted = scanQuotedAt(text, at);
      if (quoted !== null) return { start: at, end: quoted.end };
      let from = at;
      if (isDash(text.charCodeAt(at))) {
        if (isDash(text.charCodeAt(at + 1))) return null;
        from = at + 1;
      }
      const end = scanBare(text, from, false);
      return end > from ? { start: at, end } : null;
    },
    into,
  );
}

const SECURE_STRING = /(?<![A-Za-z0-9_-])ConvertTo-SecureString(?=[ \t])/i;
const PIPED_SECURE_STRING = /["'][ \t]*\|[ \t]*ConvertTo-SecureString(?![A-Za-z0-9_-])/i;
const MAX_SWITCHES = 8;

function isSwitchChar(code: number): boolean {
  return !isSpace(code);
}

function isLiteralStart(code: number): boolean {
  // `$var`, `(expr)`, `@(…)`, `[type]`, `{…}` and pipes are not literals.
  return !isSpace(code) && !"$(@[{|;&)-".includes(String.fromCharCode(code));
}

function isBareLiteralChar(code: number): boolean {
  return !isSpace(code) && code !== 0x7c && code !== 0x3b && code !== 0x26 && code !== 0x29;
}

/**
 * PowerShell plain-text secure strings: `ConvertTo-SecureString 'x'` after up
 * to eight switches, and the piped form `'x' | ConvertTo-SecureString`.
 * Variables and expressions are left alone: they hold no literal secret.
 */
export function secureStringLiterals(text: string, into: Span[]): void {
  if (!/ConvertTo-SecureString/i.test(text)) return;
  const literalAfter = (m: RegExpExecArray): Span | null => {
    let at = m.index + m[0].length;
    for (let switches = 0; ; switches++) {
      const next = scanWhile(text, at, isBlank);
      if (next === at) return null;
      at = next;
      const code = text.charCodeAt(at);
      const isSwitch = isDash(code) && /[A-Za-z]/.test(text.charAt(at + 1));
      if (!isSwitch) break;
      if (switches === MAX_SWITCHES) return null;
      at = scanWhile(text, at, isSwitchChar);
    }
    const quoted = scanQuotedAt(text, at);
    if (quoted !== null) return { start: at, end: quoted.end };
    if (!isLiteralStart(text.charCodeAt(at))) return null;
    return { start: at, end: scanWhile(text, at, isBareLiteralChar) };
  };
  const literalBefore = (m: RegExpExecArray, _text: string, floor: number): Span | null => {
    const quote = text.charCodeAt(m.index);
    // Walk back to the opening quote, never below where this search began.
    for (let i = m.index - 1; i >= floor; i--) {
      if (text.charCodeAt(i) === quote) return { start: i, end: m.index + 1 };
    }
    return null;
  };
  collectSpans(text, SECURE_STRING, literalAfter, into);
  collectSpans(text, PIPED_SECURE_STRING, literalBefore, into);
}
