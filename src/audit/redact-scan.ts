/**
 * Scanning primitives shared by the redaction rules. Every rule finds a short,
 * linear anchor with a regular expression and then measures the secret by hand
 * with the helpers below, so no regular expression ever has to backtrack over a
 * value whose end is unknown (an unterminated quote, a megabyte-long token).
 */

import { isNonAsciiSeparator } from "../core/index.js";

/** What every secret span becomes. */
export const PLACEHOLDER = "[REDACTED]";

/** A half-open range of UTF-16 indexes to replace with the placeholder. */
export interface Span {
  start: number;
  end: number;
}

/**
 * Chooses the span to hide for one anchor match, or null to leave it alone.
 * `floor` is where this search began: backward looks stop there so that no
 * character is examined twice.
 */
export type SpanOf = (match: RegExpExecArray, text: string, floor: number) => Span | null;

// Longest non-blank text an anchor can match (a PEM header is the longest).
const ANCHOR_REACH = 96;

/**
 * Collect, left to right, the span chosen for each match of `anchor`. The
 * search resumes near the end of the span, so a value is scanned a bounded
 * number of times and the rule stays linear. It resumes a little before the
 * end, because the tail of a value can itself be a key whose value follows
 * (`--api-key -Credential x`, `password: api_key: x`).
 */
export function collectSpans(text: string, anchor: RegExp, spanOf: SpanOf, into: Span[]): void {
  // A private global copy: the shared pattern objects are never used statefully.
  const re = new RegExp(anchor.source, anchor.flags.includes("g") ? anchor.flags : `${anchor.flags}g`);
  let floor = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    const span = spanOf(m, text, floor);
    let resume = m.index + Math.max(1, m[0].length);
    if (span !== null && span.end > span.start) {
      into.push(span);
      resume = Math.max(resume, span.end - ANCHOR_REACH);
    }
    floor = resume;
    re.lastIndex = resume;
  }
}

/**
 * Replace the union of `spans` with placeholders, one per run of overlapping
 * or touching spans. Every rule reads the same text, so a rule that takes
 * another rule's key for its own value (`Bearer -Credential x`) cannot hide
 * that rule's value from it.
 */
export function applySpans(text: string, spans: Span[]): string {
  if (spans.length === 0) return text;
  spans.sort((a, b) => a.start - b.start);
  const parts: string[] = [];
  let copied = 0;
  let current: Span | null = null;
  for (const span of spans) {
    if (current !== null && span.start <= current.end) {
      current.end = Math.max(current.end, span.end);
      continue;
    }
    if (current !== null) {
      parts.push(text.slice(copied, current.start), PLACEHOLDER);
      copied = current.end;
    }
    current = { start: span.start, end: span.end };
  }
  if (current !== null) parts.push(text.slice(copied, current.start), PLACEHOLDER);
  parts.push(text.slice(current?.end ?? copied));
  return parts.join("");
}

const BACKSLASH = 0x5c;
const DOUBLE_QUOTE = 0x22;
const SINGLE_QUOTE = 0x27;
const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const TAB = 0x09;
const DASH = 0x2d;

export function isQuote(code: number): boolean {
  return code === DOUBLE_QUOTE || code === SINGLE_QUOTE;
}

export function isDash(code: number): boolean {
  return code === DASH;
}

export function isBlank(code: number): boolean {
  return code === SPACE || code === TAB;
}

/** Same set as `\s` in a JavaScript regular expression. */
export function isSpace(code: number): boolean {
  if (code <= 0x20) return code === SPACE || (code >= TAB && code <= CR);
  return code === 0xfeff || isNonAsciiSeparator(code);
}

function isLineBreak(code: number): boolean {
  return code === LF || code === CR;
}

/** First index at or after `from` whose character fails `accept`. */
export function scanWhile(text: string, from: number, accept: (code: number) => boolean): number {
  let i = from;
  while (i < text.length && accept(text.charCodeAt(i))) i++;
  return i;
}

/** A quoted value: the content between the quotes, and where the whole token ends. */
export interface Quoted {
  contentStart: number;
  contentEnd: number;
  end: number;
}

/**
 * The quoted token starting at `at` (`"…"`, `'…'`, or the `\"…\"` form met in
 * JSON-encoded text), or null when none starts there. A backslash escapes the
 * next character. With no closing quote the token runs to the end of the text:
 * the closing quote may lie beyond the scan window, and a shell would read the
 * rest as quoted anyway.
 */
export function scanQuotedAt(text: string, at: number): Quoted | null {
  const code = text.charCodeAt(at);
  if (isQuote(code)) {
    for (let i = at + 1; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === BACKSLASH) i++;
      else if (c === code) return { contentStart: at + 1, contentEnd: i, end: i + 1 };
    }
    return { contentStart: at + 1, contentEnd: text.length, end: text.length };
  }
  if (code === BACKSLASH && isQuote(text.charCodeAt(at + 1))) {
    const close = text.indexOf(text.slice(at, at + 2), at + 2);
    if (close === -1) return { contentStart: at + 2, contentEnd: text.length, end: text.length };
    return { contentStart: at + 2, contentEnd: close, end: close + 2 };
  }
  return null;
}

/**
 * End of an unquoted value starting at `from`: non-space characters, where a
 * backslash carries the next character (so `top\ secret` is one value); a
 * backslash before a line break is a continuation, not part of the value.
 */
export function scanBare(text: string, from: number, stopAtQuote: boolean): number {
  let i = from;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === BACKSLASH) {
      if (i + 1 >= text.length || isLineBreak(text.charCodeAt(i + 1))) break;
      i += 2;
      continue;
    }
    if (isSpace(c) || (stopAtQuote && isQuote(c))) break;
    i++;
  }
  return i;
}

/** `&&`, `||` or `|` standing alone (followed by a blank, a line break or the end). */
function isControlOperatorAt(text: string, at: number): boolean {
  const c = text.charCodeAt(at);
  let len = 0;
  if (c === 0x26 && text.charCodeAt(at + 1) === 0x26) len = 2;
  else if (c === 0x7c) len = text.charCodeAt(at + 1) === 0x7c ? 2 : 1;
  if (len === 0) return false;
  return at + len >= text.length || isSpace(text.charCodeAt(at + len));
}

/**
 * End of a header value written without quotes: the rest of the line, stopping
 * before a blank-separated shell control operator. Commas do not end it, so a
 * SigV4 or Digest value is hidden whole. Trailing blanks are left outside.
 */
export function scanHeaderValue(text: string, from: number): number {
  let i = from;
  let end = from;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (isLineBreak(c)) break;
    if (isBlank(c)) {
      const next = scanWhile(text, i, isBlank);
      if (isControlOperatorAt(text, next)) break;
      i = next;
      continue;
    }
    i++;
    end = i;
  }
  return end;
}
