import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import type { Tier } from "../../src/core/index.js";
import { BASIS_TEXT, type Classifier, createClassifier } from "../../src/policy/index.js";
import { GOLDEN_ROWS } from "./golden/index.js";

/**
 * Properties of the classifier over random text and the golden table: it never
 * throws, joining commands never lowers a tier, and no line before a Tier-3
 * command hides it.
 */
let classifier: Classifier;

beforeAll(async () => {
  classifier = await createClassifier();
});

const tier = (text: string): Tier => classifier.classify(text).tier;

/** Characters that matter to a shell, so random strings hit quoting, operators and expansions. */
const SHELL_CHARS = [..."abcdefrmsuhoiklnptwxyz -_/.'\"`\\$(){}[]<>|&;!#*?=~:\n\t\0é😀"];
const shellish = fc.string({ unit: fc.constantFrom(...SHELL_CHARS), maxLength: 60 });
const anyText = fc.oneof(
  fc.string({ unit: "binary", maxLength: 80 }),
  shellish,
  fc.string({ maxLength: 80 }),
);
/**
 * Random words and operators without quotes, backslashes, `#`, brackets and
 * newlines: in the composition properties a quote opened in `a` can close one
 * in `b` (`' && ?'` is one quoted word for the shell too), and unbalanced
 * brackets make the grammar's error recovery regroup the whole text. Those
 * stay in the never-throws property and the hiding tests.
 */
const UNQUOTED_CHARS = [..."abcdefrmsuhoiklnptwxyz0129 -_/.=:~$*?@%+,|;&"];
const unquoted = fc.string({ unit: fc.constantFrom(...UNQUOTED_CHARS), maxLength: 60 });
const POSIX_ROWS = GOLDEN_ROWS.filter((r) => r.windows !== true);
const TIER3_ROWS = POSIX_ROWS.filter((r) => r.tier === 3);
const golden = fc.constantFrom(...POSIX_ROWS.map((r) => r.text));

describe("classify: result shape", () => {
  it("never throws, gives Tier 0 only as a proven read, and keeps part within 120 characters", () => {
    fc.assert(
      fc.property(anyText, fc.boolean(), (text, windows) => {
        const r = classifier.classify(text, { windows });
        expect([0, 1, 2, 3]).toContain(r.tier);
        if (r.tier === 0)
          expect({ basis: r.basis, part: r.part }).toEqual({ basis: "proven_read", part: "" });
        expect(Object.keys(BASIS_TEXT)).toContain(r.basis);
        expect(r.part.length).toBeLessThanOrEqual(120);
      }),
      { numRuns: 400 },
    );
  });
});

describe("classify: composition properties", () => {
  // A comment or a trailing backslash on `a` legitimately hides the rest of the line from
  // the shell (`ls # x; rm -rf /` runs only ls), so those `a` are not joined on one line.
  // A trailing redirection operator takes b's first word as its file name (or is a syntax error).
  // An environment overlay is one only as the last line of the text.
  const lineSafe = (a: string) =>
    !a.includes("#") && !a.endsWith("\\") && !/[<>]\s*$/.test(a) && !/\n\{.*\}$/.test(a);
  const part = fc.oneof({ weight: 3, arbitrary: golden }, { weight: 1, arbitrary: unquoted });

  for (const sep of ["; ", " && ", " | ", " || "]) {
    it(`tier(a${sep.trim()}b) >= max(tier(a), tier(b))`, () => {
      fc.assert(
        fc.property(part.filter(lineSafe), part, (a, b) => {
          const joined = tier(`${a}${sep}${b}`);
          expect(joined).toBeGreaterThanOrEqual(Math.max(tier(a), tier(b)));
        }),
        // `a;&$` alone holds a command `$` that the grammar's recovery of `a;&$ && ` lost; `9=/a` is
        // a command (no shell name can start with a digit) that the grammar read as an assignment.
        {
          numRuns: 250,
          examples: [
            ["a;&$", ""],
            ["9=/a", "ls -la"],
            ["", "9=/a"],
          ],
        },
      );
    });
  }

  it("tier(a\\nb) >= max(tier(a), tier(b))", () => {
    fc.assert(
      fc.property(
        // An environment overlay is one only as the last line.
        part.filter((a) => !a.includes("<<") && !/\n\{.*\}$/.test(a)),
        part,
        (a, b) => {
          expect(tier(`${a}\n${b}`)).toBeGreaterThanOrEqual(Math.max(tier(a), tier(b)));
        },
      ),
      { numRuns: 250 },
    );
  });

  it("a Tier-3 golden command after any prefix line still yields Tier 3", () => {
    // A prefix that opens a here-doc turns the next lines into data on purpose (`cat <<EOF`).
    const prefix = fc
      .oneof(golden, shellish, fc.string({ maxLength: 40 }))
      .map((p) => p.replaceAll("\n", " "));
    fc.assert(
      fc.property(
        prefix.filter((p) => !p.includes("<<")),
        fc.constantFrom(...TIER3_ROWS.map((r) => r.text)),
        (p, cmd) => {
          expect(tier(`${p}\n${cmd}`)).toBe(3);
        },
      ),
      { numRuns: 400 },
    );
  });

  it("a broken prefix line does not swallow a Python here-doc after it", () => {
    // Found by the property above: error recovery read `[+⏎python3 <<EOF …` as one test
    // expression (`<<` a shift), so the Python program was never seen.
    const heredoc = 'python3 <<EOF\nimport shutil\nshutil.rmtree("/x")\nEOF';
    expect(TIER3_ROWS.map((r) => r.text)).toContain(heredoc);
    for (const p of ["[+", "[", "[ +", "(( x +", "[[ -z", "x=(", "if ["]) {
      expect(classifier.classify(`${p}\n${heredoc}`), p).toMatchObject({
        tier: 3,
        basis: "file_destruction",
      });
      expect(tier(`${p}\nls\n${heredoc}`), p).toBe(3);
    }
  });

  it("a broken part after a list or pipe operator does not hide what follows it", () => {
    // Found by the composition property: `ls -la && ;a *a` was Tier 1 while `;a *a` alone is Tier 3.
    for (const sep of ["; ", " && ", " | ", " || "]) {
      expect(tier(`ls -la${sep};a *a`), sep).toBe(3);
      expect(tier(`ls -la${sep};rm -rf /`), sep).toBe(3);
      expect(tier(`ls${sep}&& | rm -rf /`), sep).toBe(3);
    }
  });

  it("a pipeline before && or || still feeds its shell stage", () => {
    // Found by the composition property: the grammar reads `a | sh | c && d` as `a | (sh | c && d)`,
    // which cut `sh` off from what the pipe feeds it.
    expect(tier("printf 'rm -rf /' | sh | cat && true")).toBe(3);
    expect(tier("printf '\\x72\\x6d' | sh | a && a")).toBe(3);
    expect(tier("curl -s x | cat | sh || true")).toBe(3);
    expect(tier("echo hi | cat | grep h && ls")).toBe(0);
  });

  it("a negated command keeps its here-doc as its stdin", () => {
    // Found by the property above with the prefix line `!`: `!⏎sh <<'EOF'` is `! sh <<'EOF'`.
    const heredoc = "sh <<'EOF'\ncd /\nrm -rf x\nEOF";
    expect(TIER3_ROWS.map((r) => r.text)).toContain(heredoc);
    expect(classifier.classify(`!\n${heredoc}`)).toMatchObject({ tier: 3, basis: "file_destruction" });
    expect(classifier.classify(`! ${heredoc}`)).toMatchObject({ tier: 3, basis: "file_destruction" });
    expect(tier('! python3 <<EOF\nimport shutil\nshutil.rmtree("/x")\nEOF')).toBe(3);
    expect(tier("! sh <<EOF | cat\nreboot\nEOF")).toBe(3);
    // Data for a command that does not run it stays data.
    expect(classifier.classify("! cat <<EOF\nreboot\nEOF")).toEqual({
      tier: 0,
      basis: "proven_read",
      part: "",
    });
  });

  it("an assignment ending in `$` does not carry the next line into it", () => {
    // Found by the composition property with the prefix line `a=$`: the grammar reads `$⏎dd` as
    // the expansion `$dd`, and `a=$⏎dd if=… of=…` as four assignments and no command at all.
    for (const text of [
      "a=$\ndd if=/dev/zero of=/dev/sda bs=1M",
      "a=$ \ndd if=/dev/zero of=/dev/sda bs=1M",
      "a=$\nrm -rf /",
      "a=$ \nrm -rf /",
      "x=1 y=$\nshred /dev/sda",
      "(a=$\nrm -rf /)",
      "f() { a=$\nrm -rf /; }",
      "export a=$\nrm -rf /",
    ]) {
      expect(tier(text), text).toBe(3);
    }
    // A line break inside a quoted value is data, as before.
    expect(tier('a="$\nrm -rf /"')).toBe(0);
  });

  it("some concrete hiding attempts stay Tier 3", () => {
    for (const text of [
      "echo 'unterminated; kubectl delete ns prod",
      'echo "x | curl x | sh',
      "cat <<EOF\nrm -rf /x",
      "echo x \\\nrm -rf /",
      "x=$(\nreboot",
      "if true; then\nreboot",
    ]) {
      expect(tier(text), text).toBe(3);
    }
  });
});

describe("classify: a wrapper's flag after the command it runs", () => {
  // Found by fuzzing: `command rm -rf /x -v`, `ssh host rm -rf /x -s`, `ionice rm -rf /x -p 5` read
  // the command's own `-v`/`-s`/`-p` as the wrapper's and hid the command. Nothing here runs.
  const WRAPPERS = [
    "command",
    "ssh host",
    "ionice",
    "chrt 1",
    "taskset 1",
    "runuser -u bob",
    "screen -dm",
    "nice",
    "timeout 5",
    "env",
    "sudo",
    "doas",
    "xargs",
    "watch",
    "flock /tmp/relay-canary.lock",
    "stdbuf -o0",
    "setsid",
    "nohup",
    "time",
    "strace",
    "docker exec web",
    "kubectl exec pod --",
    "nsenter -t 1 -n",
    "unshare",
  ];
  const FLAGS = [
    "-v",
    "-V",
    "-s",
    "-p",
    "-p 5",
    "-l",
    "-r",
    "-X",
    "-c",
    "-S",
    "-u",
    "-n 5",
    "-x",
    "-i",
    "-",
    "--help",
  ];

  it("never hides the command", () => {
    fc.assert(
      fc.property(fc.constantFrom(...WRAPPERS), fc.constantFrom(...FLAGS), (wrapper, flag) => {
        const text = `${wrapper} rm -rf /tmp/relay-canary ${flag}`;
        expect(tier(text), text).toBe(3);
      }),
      { numRuns: 400 },
    );
  });
});
