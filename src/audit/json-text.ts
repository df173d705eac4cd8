import { canonicalJson, JsonNumberText } from "../core/index.js";

/**
 * A strict JSON parser for audit lines read back by the verifier. It differs
 * from JSON.parse in one way that matters for the hash chain: a number whose
 * text would not come back unchanged from a JS double (`2.0`, a 64-bit
 * integer, `1E2`) is returned as a {@link JsonNumberText}, so canonicalJson
 * reproduces the bytes the writer hashed. Numbers that survive a double are
 * plain numbers. Python's `NaN` / `Infinity` literals are accepted, as
 * Python's json module writes them. Throws SyntaxError on invalid input.
 */
export function parseJsonLossless(text: string): unknown {
  const parser = new Parser(text);
  parser.skipSpace();
  const value = parser.value();
  parser.skipSpace();
  if (parser.pos !== text.length) parser.fail("unexpected trailing text");
  return value;
}

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
// biome-ignore lint/suspicious/noControlCharactersInRegex: a raw control character ends the fast path
const PLAIN_STRING_END = /["\\\u0000-\u001f]/g;

class Parser {
  pos = 0;
  private readonly text: string;

  constructor(text: string) {
    this.text = text;
  }

  fail(what: string): never {
    throw new SyntaxError(`${what} at offset ${this.pos}`);
  }

  skipSpace(): void {
    const t = this.text;
    let c = t.charCodeAt(this.pos);
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = t.charCodeAt(++this.pos);
  }

  value(): unknown {
    const c = this.text[this.pos];
    switch (c) {
      case "{":
        return this.object();
      case "[":
        return this.array();
      case '"':
        return this.string();
      case "t":
        return this.literal("true", true);
      case "f":
        return this.literal("false", false);
      case "n":
        return this.literal("null", null);
      case "N":
        return this.literal("NaN", new JsonNumberText("NaN"));
      case "I":
        return this.literal("Infinity", new JsonNumberText("Infinity"));
      default:
        if (this.text.startsWith("-Infinity", this.pos)) {
          return this.literal("-Infinity", new JsonNumberText("-Infinity"));
        }
        return this.number();
    }
  }

  private literal(word: string, result: unknown): unknown {
    if (!this.text.startsWith(word, this.pos)) this.fail("invalid literal");
    this.pos += word.length;
    return result;
  }

  private number(): number | JsonNumberText {
    NUMBER.lastIndex = this.pos;
    const m = NUMBER.exec(this.text);
    if (m === null) this.fail("unexpected character");
    const text = m[0];
    this.pos += text.length;
    const n = Number(text);
    const kept = new JsonNumberText(text);
    return canonicalJson(n) === canonicalJson(kept) ? n : kept;
  }

  private string(): string {
    const start = this.pos; // at the opening quote
    PLAIN_STRING_END.lastIndex = start + 1;
    const m = PLAIN_STRING_END.exec(this.text);
    if (m === null) this.fail("unterminated string");
    if (m[0] === '"') {
      this.pos = m.index + 1;
      return this.text.slice(start + 1, m.index);
    }
    // Escapes or control characters: find the closing quote, let JSON.parse
    // decode and validate the literal.
    let i = m.index;
    while (i < this.text.length) {
      const c = this.text.charCodeAt(i);
      if (c === 0x5c) i += 2;
      else if (c === 0x22) break;
      else i++;
    }
    if (i >= this.text.length) this.fail("unterminated string");
    this.pos = i + 1;
    return JSON.parse(this.text.slice(start, i + 1)) as string;
  }

  private array(): unknown[] {
    this.pos++;
    const out: unknown[] = [];
    this.skipSpace();
    if (this.text[this.pos] === "]") {
      this.pos++;
      return out;
    }
    for (;;) {
      this.skipSpace();
      out.push(this.value());
      this.skipSpace();
      const c = this.text[this.pos++];
      if (c === "]") return out;
      if (c !== ",") this.fail("expected , or ]");
    }
  }

  private object(): Record<string, unknown> {
    this.pos++;
    const out: Record<string, unknown> = {};
    this.skipSpace();
    if (this.text[this.pos] === "}") {
      this.pos++;
      return out;
    }
    for (;;) {
      this.skipSpace();
      if (this.text[this.pos] !== '"') this.fail("expected a member name");
      const key = this.string();
      this.skipSpace();
      if (this.text[this.pos++] !== ":") this.fail("expected :");
      this.skipSpace();
      // defineProperty keeps a "__proto__" member as data, as JSON.parse does.
      Object.defineProperty(out, key, {
        value: this.value(),
        enumerable: true,
        writable: true,
        configurable: true,
      });
      this.skipSpace();
      const c = this.text[this.pos++];
      if (c === "}") return out;
      if (c !== ",") this.fail("expected , or }");
    }
  }
}
