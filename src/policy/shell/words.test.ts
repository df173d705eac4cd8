import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { plainScript } from "./fast-path.js";
import { type BashSyntax, loadBashSyntax } from "./syntax.js";
import { walkScript } from "./walker.js";
import { baseName, decodeAnsiC, hasGlobChars, unescapeBare, unescapeDouble } from "./words.js";

describe("quote and escape removal", () => {
  it("decodes ANSI-C strings", () => {
    expect(decodeAnsiC("\\x72\\x6d")).toBe("rm");
    expect(decodeAnsiC("\\162\\155")).toBe("rm");
    expect(decodeAnsiC("\\u0072m\\n\\t\\'")).toBe("rm\n\t'");
    expect(decodeAnsiC("\\cA")).toBe("\x01");
    expect(decodeAnsiC("\\q\\x")).toBe("\\q\\x");
  });

  it("removes backslashes the way bash does outside and inside double quotes", () => {
    expect(unescapeBare("r\\m")).toBe("rm");
    expect(unescapeBare("a\\\nb")).toBe("ab");
    expect(unescapeDouble('a\\"b\\$c\\d')).toBe('a"b$c\\d');
  });

  it("finds glob and brace characters but not the test brackets", () => {
    expect(hasGlobChars("r?")).toBe(true);
    expect(hasGlobChars("/bin/r[m]")).toBe(true);
    expect(hasGlobChars("{rm,-rf}")).toBe(true);
    expect(hasGlobChars("[")).toBe(false);
    expect(hasGlobChars("rm")).toBe(false);
  });

  it("takes the base name of a command path", () => {
    expect(baseName("/usr/bin/rm")).toBe("rm");
    expect(baseName("rm")).toBe("rm");
  });
});

describe("parser front-end", () => {
  let syntax: BashSyntax;
  beforeAll(async () => {
    syntax = await loadBashSyntax();
  });

  const argvs = (text: string) => {
    const tree = syntax.parse(text);
    if (tree === null) throw new Error("no tree");
    return walkScript(tree).units.map((u) => u.words.map((w) => (w.dynamic ? "<dyn>" : w.value)));
  };

  it("resolves quoting before the rules see a name", () => {
    expect(argvs("r''m -rf /")).toEqual([["rm", "-rf", "/"]]);
    expect(argvs("\"r\"'m' $'\\x2drf' /")).toEqual([["rm", "-rf", "/"]]);
    expect(argvs('echo $"x"')).toEqual([["echo", "x"]]);
  });

  it("finds commands inside substitutions, functions and here-doc pipelines", () => {
    expect(argvs("echo $(reboot) `id`")).toEqual([["echo", "<dyn>", "<dyn>"], ["reboot"], ["id"]]);
    expect(argvs("f() { rm -rf /x; }")).toEqual([["rm", "-rf", "/x"]]);
    expect(argvs("cat <<EOF | sh\nls\nEOF")).toEqual([["cat"], ["sh"]]);
  });

  it("gives the same argv on the plain-words fast path as the parser", () => {
    // No `=`: the grammar misreads some assignment-like words (`9=a`, `_=a`, `a =~ b`) where bash
    // and the fast path agree; assignments are pinned by the case below.
    const word = fc.string({ unit: fc.constantFrom(..."abcrmz019-_./,:@%+~"), minLength: 1, maxLength: 8 });
    fc.assert(
      fc.property(fc.array(word, { minLength: 1, maxLength: 6 }), (words) => {
        const text = words.join(" ");
        const fast = plainScript(text);
        if (fast === null) return;
        const tree = syntax.parse(text);
        if (tree === null || tree.hasError) return;
        const slow = walkScript(tree);
        expect(fast.units.map((u) => u.words.map((w) => w.value))).toEqual(
          slow.units.map((u) => u.words.map((w) => w.value)),
        );
        expect(fast.units.map((u) => u.assigns.map((a) => a.name))).toEqual(
          slow.units.map((u) => u.assigns.map((a) => a.name)),
        );
      }),
      { numRuns: 300 },
    );
  });

  it("gives the same commands for lines of plain words as the parser", () => {
    // An SSH tool's policy text is the command, a line feed and the host: such texts skip the parser.
    const word = fc.string({ unit: fc.constantFrom(..."abcrmz019-_./,:@%+~"), minLength: 1, maxLength: 8 });
    const line = fc.tuple(
      fc.constantFrom("", " ", "\t"),
      fc.array(word, { maxLength: 4 }),
      fc.constantFrom("", " "),
    );
    fc.assert(
      fc.property(fc.array(line, { minLength: 2, maxLength: 5 }), (lines) => {
        const text = lines.map(([lead, words, trail]) => lead + words.join(" ") + trail).join("\n");
        const fast = plainScript(text);
        if (fast === null) return;
        const tree = syntax.parse(text);
        if (tree === null || tree.hasError) return;
        const slow = walkScript(tree);
        const shape = (units: typeof fast.units) =>
          units.map((u) => ({ words: u.words.map((w) => w.value), text: u.text, pipe: u.pipe, fn: u.fn }));
        expect(shape(fast.units)).toEqual(shape(slow.units));
      }),
      { numRuns: 300 },
    );
    expect(plainScript("true\nbench 127.0.0.1")?.units.map((u) => u.text)).toEqual([
      "true",
      "bench 127.0.0.1",
    ]);
  });

  it("refuses the fast path for shell syntax and reserved words", () => {
    for (const text of ["echo $x", "a; b", "'q'", "if true", "ls *", "x # y", "a\\\nb", "a\r\nb"])
      expect(plainScript(text)).toBeNull();
    // A reserved word on any line, and an assignment when there are several lines (it holds for the
    // lines after it), leave the text to the parser.
    for (const text of ["ls\nif true", "ls\nfor x in a\ndo ls\ndone", "PATH=/tmp/x\nls", "ls\nX=1 ls"])
      expect(plainScript(text)).toBeNull();
    expect(plainScript("FOO=1 A+=2 rm -rf /")?.units[0]?.words.map((w) => w.value)).toEqual([
      "rm",
      "-rf",
      "/",
    ]);
    expect(plainScript("FOO=1 A+=2 rm -rf /")?.units[0]?.assigns.map((a) => a.name)).toEqual(["FOO", "A"]);
    expect(plainScript("dd if=/dev/zero of=/tmp/img")?.units[0]?.words.map((w) => w.value)).toEqual([
      "dd",
      "if=/dev/zero",
      "of=/tmp/img",
    ]);
    expect(plainScript("X=1")?.units).toEqual([]);
  });
});
