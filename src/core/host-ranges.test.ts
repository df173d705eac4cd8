import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { foldHosts } from "./host-ranges.js";

/** The reader's side of the notation, written independently of the folding. */
function expand(text: string): string[] {
  if (text === "") return [];
  const out: string[] = [];
  // Split on commas outside brackets.
  const items: string[] = [];
  let depth = 0;
  let current = "";
  for (const ch of text) {
    if (ch === "[") depth++;
    if (ch === "]") depth--;
    if (ch === "," && depth === 0) {
      items.push(current);
      current = "";
    } else current += ch;
  }
  items.push(current);
  for (const item of items) {
    const m = /^([^[]*)\[([^\]]+)\](.*)$/s.exec(item);
    if (!m) {
      out.push(item);
      continue;
    }
    for (const span of (m[2] ?? "").split(",")) {
      const [a = "", b = a] = span.split("-");
      const width = a.length;
      for (let n = Number(a); n <= Number(b); n++) {
        const digits = a.startsWith("0") && width > 1 ? String(n).padStart(width, "0") : String(n);
        out.push(`${m[1]}${digits}${m[3]}`);
      }
    }
  }
  return out;
}

describe("foldHosts", () => {
  it("folds a numbered run with its padding and leaves gaps visible", () => {
    const names = Array.from({ length: 40 }, (_, i) => `web${String(i + 1).padStart(3, "0")}`);
    expect(foldHosts([...names, "web042"])).toBe("web[001-040,042]");
  });

  it("keeps buckets in the order of their first name and writes a lone name as it is", () => {
    expect(foldHosts(["db1", "web01", "web02", "cache", "db3", "db2"])).toBe("db[1-3],web[01-02],cache");
    expect(foldHosts(["db7"])).toBe("db7");
  });

  it("folds addresses and suffixes around the last run of digits", () => {
    expect(foldHosts(["10.0.0.1", "10.0.0.2", "10.0.0.9"])).toBe("10.0.0.[1-2,9]");
    expect(foldHosts(["n1.dc", "n2.dc", "n3.eu"])).toBe("n[1-2].dc,n3.eu");
  });

  it("joins an unpadded number to padded ones of the same width, and keeps other widths apart", () => {
    expect(foldHosts(["n08", "n09", "n10", "n11"])).toBe("n[08-11]");
    expect(foldHosts(["n9", "n10", "n007"])).toBe("n[9-10],n007");
  });

  it("never folds a name holding the notation's own characters, and collapses duplicates", () => {
    expect(foldHosts(["a[1]", "a[2]", "x1", "x1"])).toBe("a[1],a[2],x1");
    expect(foldHosts([])).toBe("");
  });

  it("gives back exactly the names it was given, as a set (property)", () => {
    const label = fc.stringMatching(/^[a-z][a-z0-9.-]{0,6}$/);
    const name = fc
      .tuple(
        label,
        fc.integer({ min: 0, max: 300 }),
        fc.integer({ min: 0, max: 4 }),
        fc.constantFrom("", ".x", "-b"),
      )
      .map(([p, n, pad, s]) => `${p}${String(n).padStart(pad, "0")}${s}`);
    fc.assert(
      fc.property(fc.array(fc.oneof(name, label), { maxLength: 60 }), (names) => {
        const back = expand(foldHosts(names));
        expect(new Set(back)).toEqual(new Set(names));
        expect(back.length).toBe(new Set(names).size);
      }),
      { numRuns: 500 },
    );
  });
});
