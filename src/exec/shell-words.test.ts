import { spawnSync } from "node:child_process";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RelayError } from "../core/index.js";
import { splitShellWords } from "./shell-words.js";

/**
 * The inverse the round-trip properties need: a word bare when it is made of
 * characters the shell never treats specially, otherwise in single quotes with
 * each `'` written as `'"'"'`; the empty word becomes `''`.
 */
function quoteShellWord(word: string): string {
  if (word === "") return "''";
  if (/^[A-Za-z0-9@%+=:,./_-]+$/.test(word)) return word;
  return `'${word.replaceAll("'", `'"'"'`)}'`;
}

describe("splitShellWords", () => {
  it.each<[string, string[]]>([
    ["", []],
    ["  \t\n ", []],
    ["ls -la /tmp", ["ls", "-la", "/tmp"]],
    ["a  b\tc\nd\re", ["a", "b", "c", "d", "e"]],
    ["echo 'a b'  \"c d\"", ["echo", "a b", "c d"]],
    ["'it''s'", ["its"]],
    ["a''b \"\" ''", ["ab", "", ""]],
    ["'$HOME \\n \"'", ['$HOME \\n "']],
    ['"a\\"b\\\\c\\$d\\`e"', ['a"b\\c$d`e']],
    ['"\\a\\\'"', ["\\a\\'"]],
    ['"line\\\ncont"', ["linecont"]],
    ["a\\ b c\\'d", ["a b", "c'd"]],
    ["a \\\n b", ["a", "b"]],
    ["a\\\nb", ["ab"]],
    ["echo $HOME *.txt ~ `x` a;b a|b", ["echo", "$HOME", "*.txt", "~", "`x`", "a;b", "a|b"]],
    ["echo hi # comment 'unclosed", ["echo", "hi"]],
    ["a #c1\nb #c2", ["a", "b"]],
    ["a#b '#c' \\#d \"#e\"", ["a#b", "#c", "#d", "#e"]],
    ["#only a comment", []],
    ["日本 'é ü'", ["日本", "é ü"]],
  ])("%j", (text, words) => {
    expect(splitShellWords(text)).toEqual(words);
  });

  it.each<[string, string]>([
    ["echo 'abc", "No closing quotation"],
    ['echo "abc', "No closing quotation"],
    ['echo "abc\\"', "No closing quotation"],
    ["echo abc\\", "No escaped character"],
  ])("%j throws %s", (text, message) => {
    let caught: unknown;
    try {
      splitShellWords(text);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(RelayError);
    expect((caught as RelayError).type).toBe("ValueError");
    expect((caught as RelayError).message).toBe(message);
  });

  it("round-trips any list of words through quoteShellWord", () => {
    const tricky = fc.string({
      unit: fc.constantFrom("'", '"', "\\", " ", "\t", "\n", "#", "$", "`", "a", "é"),
    });
    const word = fc.oneof(fc.string({ unit: "binary" }), tricky);
    fc.assert(
      fc.property(fc.array(word, { maxLength: 8 }), (words) => {
        expect(splitShellWords(words.map(quoteShellWord).join(" "))).toEqual(words);
      }),
      { numRuns: 2000 },
    );
  });

  it("only ever throws the typed ValueError", () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom("'", '"', "\\", " ", "\n", "#", "a") }), (text) => {
        try {
          splitShellWords(text);
        } catch (err) {
          expect(err).toBeInstanceOf(RelayError);
        }
      }),
    );
  });

  it("agrees with /bin/sh on quoting, escapes and comments", () => {
    // Characters that the shell neither expands nor treats as operators, so its word list is comparable.
    const text = fc.string({
      unit: fc.constantFrom("a", "b", " ", "\t", "'", '"', "\\", "#"),
      maxLength: 14,
    });
    fc.assert(
      fc.property(text, (input) => {
        let ours: string[] | undefined;
        try {
          ours = splitShellWords(input);
        } catch {
          ours = undefined; // compared below: the shell must reject it too
        }
        // The input comes last so a comment or a trailing backslash cannot swallow the script.
        const script = `f() { printf '%s\\0' "$#" "$@"; }; f ${input}`;
        const result = spawnSync("/bin/sh", ["-c", script], { encoding: "utf8" });
        if (ours === undefined) {
          // A trailing backslash is literal to the shell at end of input; only unclosed quotes fail there.
          if (!/(^|[^\\])(\\\\)*\\$/.test(input)) expect(result.status).not.toBe(0);
          return;
        }
        expect(result.status).toBe(0);
        const [count, ...words] = result.stdout.split("\0").slice(0, -1);
        expect(Number(count)).toBe(words.length);
        expect(ours).toEqual(words);
      }),
      { numRuns: 300 },
    );
  });
});

describe("quoteShellWord", () => {
  it.each([
    ["", "''"],
    ["abc-1.2/x_y@z%+=:,", "abc-1.2/x_y@z%+=:,"],
    ["a b", "'a b'"],
    ["it's", `'it'"'"'s'`],
    ["#x", "'#x'"],
    ["$HOME", "'$HOME'"],
  ])("%j -> %s", (word, quoted) => {
    expect(quoteShellWord(word)).toBe(quoted);
  });

  it("is understood the same way by /bin/sh", () => {
    const words = ["", "a b", "it's", "#x", "$HOME", "`id`", "*", "new\nline", "back\\slash", 'dq"'];
    const script = `printf '%s\\0' ${words.map(quoteShellWord).join(" ")}`;
    const result = spawnSync("/bin/sh", ["-c", script], { encoding: "utf8" });
    expect(result.stdout.split("\0").slice(0, -1)).toEqual(words);
  });
});
