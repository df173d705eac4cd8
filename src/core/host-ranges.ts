/**
 * Host names folded into compact ranges, the notation fleet operators read
 * (`web[001-040,042],db1`): names that differ only in their last run of
 * digits share one bracket. Folding never changes what a name means: every
 * name comes back exactly when the text is expanded, padding included
 * (docs/tools.md, `ssh_fanout`).
 */

/** A number past this many digits is not exact as a double; such names stay whole. */
const MAX_DIGITS = 15;

interface Numbered {
  prefix: string;
  digits: string;
  suffix: string;
}

/** The name split around its last run of digits, or null when it has none worth folding. */
function numbered(name: string): Numbered | null {
  // Brackets and commas are the notation's own characters: a name holding one is never folded.
  if (/[[\],]/.test(name)) return null;
  const m = /^(.*?)(\d+)(\D*)$/s.exec(name);
  if (!m || (m[2] ?? "").length > MAX_DIGITS) return null;
  return { prefix: m[1] ?? "", digits: m[2] ?? "", suffix: m[3] ?? "" };
}

/** Zero-padded width of a digit run; 0 when it is written without padding. */
function padOf(digits: string): number {
  return digits.length > 1 && digits.startsWith("0") ? digits.length : 0;
}

interface Bucket {
  prefix: string;
  suffix: string;
  /** Width every number is padded to, or 0 for numbers written as they are. */
  pad: number;
  numbers: Set<number>;
}

function render(n: number, pad: number): string {
  return String(n).padStart(pad, "0");
}

/** `1-3,5,7-8` for a bucket's numbers. */
function spans(numbers: Set<number>, pad: number): string {
  const sorted = [...numbers].sort((a, b) => a - b);
  const parts: string[] = [];
  let start = sorted[0] ?? 0;
  let end = start;
  const close = () =>
    parts.push(start === end ? render(start, pad) : `${render(start, pad)}-${render(end, pad)}`);
  for (const n of sorted.slice(1)) {
    if (n === end + 1) {
      end = n;
      continue;
    }
    close();
    start = n;
    end = n;
  }
  close();
  return parts.join(",");
}

/**
 * Fold `names` into one comma-separated text, buckets in the order their
 * first name appears. Duplicates collapse. A name that is alone in its bucket
 * is written as it is.
 */
export function foldHosts(names: readonly string[]): string {
  const entries: Array<Bucket | string> = [];
  const buckets = new Map<string, Bucket>();
  const seen = new Set<string>();
  // Widths written with padding under each prefix/suffix: an unpadded number of the same width joins them.
  const padded = new Map<string, Set<number>>();
  for (const name of names) {
    const n = numbered(name);
    if (n === null) continue;
    const pad = padOf(n.digits);
    if (pad === 0) continue;
    const key = `${n.prefix}\u0000${n.suffix}`;
    const widths = padded.get(key) ?? new Set<number>();
    widths.add(pad);
    padded.set(key, widths);
  }
  for (const name of names) {
    if (seen.has(name)) continue;
    seen.add(name);
    const n = numbered(name);
    if (n === null) {
      entries.push(name);
      continue;
    }
    const base = `${n.prefix}\u0000${n.suffix}`;
    let pad = padOf(n.digits);
    if (pad === 0 && padded.get(base)?.has(n.digits.length)) pad = n.digits.length;
    const key = `${base}\u0000${pad}`;
    let bucket = buckets.get(key);
    if (!bucket) {
      bucket = { prefix: n.prefix, suffix: n.suffix, pad, numbers: new Set() };
      buckets.set(key, bucket);
      entries.push(bucket);
    }
    bucket.numbers.add(Number(n.digits));
  }
  return entries
    .map((entry) => {
      if (typeof entry === "string") return entry;
      if (entry.numbers.size === 1) return `${entry.prefix}${spans(entry.numbers, entry.pad)}${entry.suffix}`;
      return `${entry.prefix}[${spans(entry.numbers, entry.pad)}]${entry.suffix}`;
    })
    .join(",");
}
