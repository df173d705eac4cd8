/**
 * Redaction of audit arguments (docs/wire-contract.md §6.4): secrets in any string of the
 * args mapping are replaced before a record is written, and every string is
 * cut to a bounded length.
 */
import { decodeUtf8 } from "../core/index.js";
import { programSecrets } from "./redact-programs.js";
import {
  authorizationHeaders,
  azureKeys,
  bearerTokens,
  cliFlags,
  keywordAssignments,
  secureStringLiterals,
  urlCredentials,
} from "./redact-rules.js";
import { applySpans, PLACEHOLDER, type Span } from "./redact-scan.js";
import { privateKeyBlocks, providerTokens } from "./redact-tokens.js";

/** Code points kept from each string. */
const REDACT_KEEP = 500;
/** Code points scanned past the kept prefix, so secrets that start inside it are still found. */
const REDACT_LOOKAHEAD = 16384;
const SCAN_WINDOW = REDACT_KEEP + REDACT_LOOKAHEAD;
// Rules all read the same text and their spans are merged, but a collapsed
// value can still complete another rule's match (a quoted value with a space
// inside stopped the URL rule), so passes repeat until nothing changes; the
// second pass almost always just confirms the first.
const MAX_PASSES = 4;
const MAX_DEPTH = 32;

function scrubOnce(text: string, windowCut: boolean): string {
  // Each rule reports spans of the same input and the union is replaced, so
  // the order below does not change the result.
  const spans: Span[] = [];
  urlCredentials(text, windowCut, spans);
  authorizationHeaders(text, spans);
  bearerTokens(text, spans);
  keywordAssignments(text, spans);
  azureKeys(text, spans);
  cliFlags(text, spans);
  secureStringLiterals(text, spans);
  privateKeyBlocks(text, spans);
  providerTokens(text, spans);
  programSecrets(text, spans);
  return applySpans(text, spans);
}

/**
 * Every redaction rule applied to the whole of `text`, without any length
 * bound. `windowCut` says `text` is the scan window of a longer string.
 */
export function scrubSecrets(text: string, windowCut = false): string {
  let current = text;
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    const next = scrubOnce(current, windowCut);
    if (next === current) break;
    current = next;
  }
  return current;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/** UTF-16 index just after the first `count` code points (a lone surrogate counts as one). */
function codePointOffset(text: string, count: number): number {
  if (text.length <= count) return text.length;
  let i = 0;
  for (let n = 0; n < count && i < text.length; n++) {
    i += isHighSurrogate(text.charCodeAt(i)) && isLowSurrogate(text.charCodeAt(i + 1)) ? 2 : 1;
  }
  return i;
}

const HIGH_SURROGATE = /[\uD800-\uDBFF]/;

function countCodePoints(text: string, from: number): number {
  // The regex scan is several times faster than the loop on a long tail.
  if (!HIGH_SURROGATE.test(from === 0 ? text : text.slice(from))) return text.length - from;
  let n = 0;
  for (let i = from; i < text.length; i++, n++) {
    if (isHighSurrogate(text.charCodeAt(i)) && isLowSurrogate(text.charCodeAt(i + 1))) i++;
  }
  return n;
}

/**
 * Redact one string: scan only its first 500 + 16384 code points, then keep
 * 500 and append `...(+N)` with N the code points cut (from the redacted
 * window and the unscanned tail).
 */
export function redactString(text: string): string {
  try {
    const windowEnd = codePointOffset(text, SCAN_WINDOW);
    const cut = windowEnd < text.length;
    const redacted = scrubSecrets(cut ? text.slice(0, windowEnd) : text, cut);
    const keepEnd = codePointOffset(redacted, REDACT_KEEP);
    if (!cut && keepEnd === redacted.length) return redacted;
    const dropped = countCodePoints(redacted, keepEnd) + (cut ? countCodePoints(text, windowEnd) : 0);
    return `${redacted.slice(0, keepEnd)}...(+${dropped})`;
  } catch {
    // Fail closed: a string the rules could not process is not written at all.
    return PLACEHOLDER;
  }
}

function safeString(value: unknown): string {
  try {
    return String(value);
  } catch {
    // An object whose toString throws still deserves a line in the log.
    return "[unprintable]";
  }
}

function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  // defineProperty, so a key such as `__proto__` stays an ordinary key.
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** A redacted key that does not overwrite a sibling which redacted to the same text. */
function freeKey(target: Record<string, unknown>, key: string): string {
  if (!Object.hasOwn(target, key)) return key;
  let n = 2;
  while (Object.hasOwn(target, `${key} #${n}`)) n++;
  return `${key} #${n}`;
}

function scrubObject(value: object, depth: number, seen: Set<object>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    let item: unknown;
    try {
      item = scrubValue((value as Record<string, unknown>)[key], depth + 1, seen);
    } catch {
      // A throwing getter: record that the field existed without its value.
      item = "[unreadable]";
    }
    setOwn(out, freeKey(out, redactString(key)), item);
  }
  return out;
}

function scrubValue(value: unknown, depth: number, seen: Set<object>): unknown {
  switch (typeof value) {
    case "string":
      return redactString(value);
    case "number":
    case "boolean":
    case "undefined":
      return value;
    case "bigint":
      // JSON has no big integers; the decimal text keeps the exact value.
      return value.toString();
    case "symbol":
    case "function":
      return redactString(safeString(value));
  }
  if (value === null) return null;
  const obj = value as object;
  if (obj instanceof Uint8Array) return redactString(decodeUtf8(obj));
  if (ArrayBuffer.isView(obj))
    return redactString(decodeUtf8(new Uint8Array(obj.buffer, obj.byteOffset, obj.byteLength)));
  if (obj instanceof ArrayBuffer) return redactString(decodeUtf8(new Uint8Array(obj)));
  if (seen.has(obj)) return "[circular]";
  if (depth > MAX_DEPTH) return "[too deep]";
  seen.add(obj);
  try {
    if (Array.isArray(obj)) return obj.map((item) => scrubValue(item, depth + 1, seen));
    if (obj instanceof Map) {
      const out: Record<string, unknown> = {};
      for (const [k, v] of obj)
        setOwn(out, freeKey(out, redactString(safeString(k))), scrubValue(v, depth + 1, seen));
      return out;
    }
    if (obj instanceof Set) return [...obj].map((item) => scrubValue(item, depth + 1, seen));
    if (obj instanceof Error) return redactString(safeString(obj));
    const toJSON = (obj as { toJSON?: unknown }).toJSON;
    // What JSON.stringify would write (a URL's href, a Date's ISO text) is what may hold a secret.
    if (typeof toJSON === "function") return scrubValue(toJSON.call(obj), depth + 1, seen);
    return scrubObject(obj, depth, seen);
  } finally {
    seen.delete(obj);
  }
}

/**
 * Redact an audit-args mapping: every string, recursively through objects
 * (keys and values) and arrays; byte arrays are decoded leniently as UTF-8
 * first. The top-level keys are kept as they are (they name the tool's
 * parameters). Never throws.
 */
export function redactArgs(args: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (args === null || typeof args !== "object") return out;
  let keys: string[];
  try {
    keys = Object.keys(args);
  } catch {
    // A hostile proxy; there is nothing safe to record.
    return out;
  }
  const seen = new Set<object>([args]);
  for (const key of keys) {
    let value: unknown;
    try {
      value = scrubValue(args[key], 1, seen);
    } catch {
      // A throwing getter or an exotic value; keep the key, drop what it held.
      value = "[unreadable]";
    }
    setOwn(out, key, value);
  }
  return out;
}
