/**
 * Canonical JSON for the audit hash chain and the confirmation op-key.
 *
 * The target is byte equality with Python's
 * `json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`
 * for every value this project writes, so that a log written by either
 * implementation verifies under the other. The rules, and the places where
 * JavaScript cannot follow Python, are written down in docs/audit.md.
 */

/**
 * A JSON number kept as the text it had in the source document. A verifier
 * that parses a foreign record wraps numbers in this so that `2.0` or a 64-bit
 * integer is re-serialised the way the writer hashed it, not as the nearest
 * IEEE double.
 */
export class JsonNumberText {
  readonly text: string;

  constructor(text: string) {
    this.text = text;
  }
}

const INTEGER_TEXT = /^-?(?:0|[1-9][0-9]*)$/;
const NUMBER_TEXT = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

/** Sorted keys, `,`/`:` separators, non-ASCII kept: the hashing form. */
export function canonicalJson(value: unknown): string {
  return serialize(value, true, [], COMPACT);
}

/**
 * Same scalar rendering as {@link canonicalJson} but object members keep their
 * insertion order. The audit writer uses it for the line it stores, so that a
 * reader parsing that line and canonicalising it gets exactly the hashed text.
 */
export function compactJson(value: unknown): string {
  return serialize(value, false, [], COMPACT);
}

/**
 * The audit line as the Python relay-shell writes it: `json.dumps(record, ensure_ascii=False)`,
 * members in insertion order with Python's default `", "` and `": "` separators, the same scalar
 * forms. Operators' greps and log shippers' patterns (`"tool": "shell_exec"`) match both. Parsing
 * the line and canonicalising it gives exactly the hashed text, as with compactJson.
 */
export function pythonJson(value: unknown): string {
  return serialize(value, false, [], SPACED);
}

interface Separators {
  item: string;
  key: string;
}
const COMPACT: Separators = { item: ",", key: ":" };
const SPACED: Separators = { item: ", ", key: ": " };

/**
 * Python's `repr(float)`: the shortest digits that round-trip (the same digits
 * JavaScript picks), laid out fixed when the decimal exponent is in
 * [-4, 16), otherwise as `d.ddde±XX`; a fixed value always has a fraction.
 */
export function pythonFloatRepr(x: number): string {
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x > 0 ? "Infinity" : "-Infinity";
  const negative = x < 0 || Object.is(x, -0);
  const [mantissa = "0", exponent = "0"] = Math.abs(x).toExponential().split("e");
  const digits = mantissa.replace(".", "");
  const exp = Number(exponent);
  const point = exp + 1; // digits are 0.d1d2... × 10^point
  let body: string;
  if (point <= -4 || point > 16) {
    const head = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    body = `${head}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
  } else if (point <= 0) {
    body = `0.${"0".repeat(-point)}${digits}`;
  } else if (point >= digits.length) {
    body = `${digits}${"0".repeat(point - digits.length)}.0`;
  } else {
    body = `${digits.slice(0, point)}.${digits.slice(point)}`;
  }
  return negative ? `-${body}` : body;
}

/**
 * How a JS number is written. A safe integer (|x| < 2^53, `-0` included) is
 * written as integer digits; anything else is written as Python's float repr,
 * because an integral double beyond 2^53 (`1e21`, `1.5e300`) is in practice a
 * float that lost its fraction, not an exact integer (exact big integers are
 * `bigint`). Non-finite numbers are not JSON; they are written as strings.
 */
function renderNumber(x: number): string {
  if (!Number.isFinite(x)) return quoteString(String(x));
  if (Number.isSafeInteger(x)) return Object.is(x, -0) ? "0" : String(x);
  return pythonFloatRepr(x);
}

/**
 * How Python re-serialises a number it parsed from `text`: an integer token
 * stays an exact integer, anything with a fraction or exponent becomes a float
 * and is written with repr (so `2.0` stays `2.0` and `1E2` becomes `100.0`).
 */
export function renderNumberText(text: string): string {
  if (INTEGER_TEXT.test(text)) return BigInt(text).toString();
  if (NUMBER_TEXT.test(text)) return pythonFloatRepr(Number(text));
  if (text === "NaN" || text === "Infinity" || text === "-Infinity") return text;
  return quoteString(text);
}

/** Order two strings by Unicode code point (JS `<` compares UTF-16 units). */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x !== y) {
      // Surrogates (D800-DFFF) encode code points above FFFF, so they must
      // sort after E000-FFFF; shifting both ranges restores code-point order.
      if (x >= 0xd800 && y >= 0xd800) {
        x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
        y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
      }
      return x - y;
    }
  }
  return a.length - b.length;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const NEEDS_ESCAPE = /[\u0000-\u001f"\\\ud800-\udfff]/;

/**
 * A JSON string literal with Python's escapes: `\"`, `\\`, the short forms
 * `\b \f \n \r \t`, other C0 controls as lowercase `\u00xx`, everything
 * else (DEL, U+2028, non-ASCII) as is. Since ES2019 JSON.stringify escapes a
 * string exactly so, and also writes lone surrogates as `\udxxx`, which keeps
 * them intact where UTF-8 has no encoding for them. The test pins this over
 * every UTF-16 unit. Most strings need no escape, and a regex test plus a
 * template is about twice as fast as the native call, hence the fast path.
 */
export function quoteString(s: string): string {
  return NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : `"${s}"`;
}

// Any UTF-16 unit from D800 up: only then do unit order and code-point order differ.
const HIGH_UNIT = /[\ud800-\uffff]/;

function sortByCodePoint(keys: string[]): void {
  for (const key of keys) {
    if (HIGH_UNIT.test(key)) {
      keys.sort(compareCodePoints);
      return;
    }
  }
  keys.sort(); // the built-in unit order is code-point order for these keys, and faster
}

function serialize(value: unknown, sortKeys: boolean, ancestors: object[], sep: Separators): string {
  switch (typeof value) {
    case "string":
      return quoteString(value);
    case "number":
      return renderNumber(value);
    case "boolean":
      return value ? "true" : "false";
    case "bigint":
      return value.toString();
    case "undefined":
      return "null";
    case "symbol":
      return quoteString(value.toString());
    case "function":
      return quoteString(`[function ${value.name || "anonymous"}]`);
    case "object":
      return serializeObject(value, sortKeys, ancestors, sep);
  }
}

function serializeObject(
  value: object | null,
  sortKeys: boolean,
  ancestors: object[],
  sep: Separators,
): string {
  if (value === null) return "null";
  if (value instanceof JsonNumberText) return renderNumberText(value.text);
  // Only the current path is tracked, so shared (non-cyclic) subtrees are fine.
  if (ancestors.includes(value)) return quoteString("[circular]");
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") {
    ancestors.push(value);
    const out = serialize(toJSON.call(value), sortKeys, ancestors, sep);
    ancestors.pop();
    return out;
  }
  ancestors.push(value);
  let out: string;
  if (Array.isArray(value)) {
    out = "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += sep.item;
      out += serialize(value[i] as unknown, sortKeys, ancestors, sep);
    }
    out += "]";
  } else {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record);
    if (sortKeys && keys.length > 1) sortByCodePoint(keys);
    out = "{";
    for (const key of keys) {
      const member = record[key];
      if (member === undefined) continue;
      if (out.length > 1) out += sep.item;
      out += `${quoteString(key)}${sep.key}${serialize(member, sortKeys, ancestors, sep)}`;
    }
    out += "}";
  }
  ancestors.pop();
  return out;
}
