/**
 * Whole-match redaction of credentials that are recognisable by shape alone:
 * private-key blocks and provider tokens.
 */
import { collectSpans, isSpace, type Span, scanWhile } from "./redact-scan.js";

const KEY_HEADER = /-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----/;
const KEY_FOOTER = /-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----/;
const MAX_KEY_BODY = 8 * 1024;

/** Characters of a PEM body and its headers, raw or JSON-escaped (`\n`). */
function isKeyBodyChar(code: number): boolean {
  return (
    (code >= 0x30 && code <= 0x39) ||
    (code >= 0x41 && code <= 0x5a) ||
    (code >= 0x61 && code <= 0x7a) ||
    isSpace(code) ||
    "+/=\\:,._-".includes(String.fromCharCode(code))
  );
}

/**
 * PEM / OpenSSH private-key blocks. A header whose footer is missing (or more
 * than 8 KiB away) still hides the key material that follows it, up to the
 * first character that cannot belong to a key: the footer may lie beyond the
 * scan window, and the body must not reach the kept prefix.
 */
export function privateKeyBlocks(text: string, into: Span[]): void {
  if (!text.includes("PRIVATE KEY")) return;
  const footer = new RegExp(KEY_FOOTER.source, "g");
  // The next footer at or after the last query; queries only move forward, so
  // the text is searched for footers once in total.
  let cached: { index: number; end: number } | null = null;
  let exhausted = false;
  const nextFooter = (from: number): { index: number; end: number } | null => {
    if (cached !== null && cached.index >= from) return cached;
    if (exhausted) return null;
    footer.lastIndex = from;
    const m = footer.exec(text);
    if (m === null) {
      exhausted = true;
      return null;
    }
    cached = { index: m.index, end: m.index + m[0].length };
    return cached;
  };
  const blockEnd = (m: RegExpExecArray): Span => {
    const bodyStart = m.index + m[0].length;
    const end = nextFooter(bodyStart);
    if (end !== null && end.index - bodyStart <= MAX_KEY_BODY) return { start: m.index, end: end.end };
    return { start: m.index, end: scanWhile(text, bodyStart, isKeyBodyChar) };
  };
  collectSpans(text, KEY_HEADER, blockEnd, into);
}

interface TokenShape {
  /** Literal substrings, one of which every match contains: cheap pre-checks. */
  anchors: readonly string[];
  pattern: RegExp;
}

// Classes that include `-` use an explicit look-behind instead of `\b`, so a
// long run is only tried from its first character (linear even when it fails).
const TOKEN_SHAPES: readonly TokenShape[] = [
  { anchors: ["_pat_"], pattern: /\bgith(?:ub)?_pat_[A-Za-z0-9_]+/ },
  { anchors: ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"], pattern: /\bgh[pousr]_[A-Za-z0-9]{20,}/ },
  { anchors: ["sk-ant-"], pattern: /(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}/ },
  { anchors: ["sk-"], pattern: /(?<![A-Za-z0-9_-])sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{16,}/ },
  { anchors: ["sk-"], pattern: /\bsk-[A-Za-z0-9]{16,}/ },
  { anchors: ["hf_"], pattern: /\bhf_[A-Za-z0-9]{34,}/ },
  { anchors: ["AKIA", "ASIA"], pattern: /\bA(?:KI|SI)A[0-9A-Z]{16}\b/ },
  { anchors: ["xox"], pattern: /(?<![A-Za-z0-9_-])xox[baprs]-[A-Za-z0-9-]{10,}/ },
  {
    anchors: ["hooks.slack.com"],
    pattern: /https?:\/\/hooks\.slack\.com\/(?:services|workflows|triggers)\/[A-Za-z0-9_/+-]+/,
  },
  { anchors: ["AIza"], pattern: /\bAIza[0-9A-Za-z_-]{35,}/ },
  { anchors: ["ya29."], pattern: /(?<![A-Za-z0-9_.-])ya29\.[0-9A-Za-z._-]{20,}/ },
  { anchors: ["sk_", "rk_"], pattern: /\b[sr]k_(?:test|live|prod)_[0-9A-Za-z]{10,}/ },
  { anchors: ["glpat-"], pattern: /(?<![A-Za-z0-9_-])glpat-[0-9A-Za-z_-]{20,}/ },
  { anchors: ["npm_"], pattern: /\bnpm_[A-Za-z0-9]{36,}/ },
  // HashiCorp Vault service, batch and recovery tokens (`vault login hvs.…` passes one positionally).
  { anchors: ["hvs.", "hvb.", "hvr."], pattern: /(?<![A-Za-z0-9_.-])hv[sbr]\.[A-Za-z0-9_-]{24,}/ },
  { anchors: ["pypi-AgEIcHlwaS5vcmc"], pattern: /(?<![A-Za-z0-9_-])pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]*/ },
  {
    anchors: [".ey"],
    pattern: /(?<![A-Za-z0-9_-])ey[A-Za-z0-9_-]{17,}\.ey[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]+)?/,
  },
];

/** Provider tokens, each tried only when one of its anchors occurs. */
export function providerTokens(text: string, into: Span[]): void {
  const whole = (m: RegExpExecArray): Span => ({ start: m.index, end: m.index + m[0].length });
  for (const shape of TOKEN_SHAPES) {
    if (shape.anchors.some((anchor) => text.includes(anchor))) collectSpans(text, shape.pattern, whole, into);
  }
}
