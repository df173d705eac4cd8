import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { neutralizeTerminalOutput, openSequenceStart, type TerminalOutputMode } from "./terminal-output.js";

const ESC = "\u001b";
const safe = (text: string) => neutralizeTerminalOutput(text, "safe");
const plain = (text: string) => neutralizeTerminalOutput(text, "plain");

/** What `safe` may let through: no control but tab, LF, CR, except inside a colour/cursor sequence. */
const SAFE_LANGUAGE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what the test looks for
  /^(?:[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]|\u001b\[[0-9;:]*[@ABCDEFGHIJKLMPSTXZ`adefmrsu]|\u001b[78DEM])*$/;
/** What `plain` may let through: no control but tab, LF, CR. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what the test looks for
const PLAIN_LANGUAGE = /^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]*$/;

/** Text built from the pieces an attacker would combine: introducers, terminators, parameters, plain text. */
const hostile = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        ESC,
        `${ESC}[`,
        `${ESC}]`,
        `${ESC}P`,
        `${ESC}_`,
        `${ESC}^`,
        `${ESC}X`,
        `${ESC}\\`,
        "\u0007",
        "\u009b",
        "\u009d",
        "\u0090",
        "\u009c",
        "\u0085",
        "\u0018",
        "\u001a",
        "52;c;",
        "0;",
        "8;;http://x/",
        "31m",
        "?1049h",
        "6n",
        "21t",
        ";",
        "(",
        "7",
        "\n",
        "\r",
        "\t",
        "\u0008",
        "é",
        "😀",
        "a",
      ),
      fc.string({ unit: "binary", maxLength: 4 }),
    ),
    { maxLength: 40 },
  )
  .map((parts) => parts.join(""));

describe("neutralizeTerminalOutput", () => {
  it("leaves raw output alone", () => {
    const text = `${ESC}]52;c;aGk=\u0007x\u009b31m`;
    expect(neutralizeTerminalOutput(text, "raw")).toEqual({ text, removed: 0, escaped: 0 });
  });

  it("returns ordinary text unchanged, the same string", () => {
    const text = "total 4\n\tfile.txt\r\nnaïve 😀\n";
    expect(safe(text)).toEqual({ text, removed: 0, escaped: 0 });
    expect(plain(text)).toEqual({ text, removed: 0, escaped: 0 });
  });

  it.each([
    ["OSC 52 clipboard, BEL", `a${ESC}]52;c;cm0gLXJmIC8K\u0007b`],
    ["OSC 52 clipboard, ST", `a${ESC}]52;c;cm0gLXJmIC8K${ESC}\\b`],
    ["OSC 0 title", `a${ESC}]0;owned\u0007b`],
    ["OSC 8 link", `a${ESC}]8;;http://evil.example/${ESC}\\b`],
    ["DCS", `a${ESC}P1$r0m${ESC}\\b`],
    ["APC", `a${ESC}_payload${ESC}\\b`],
    ["PM", `a${ESC}^payload${ESC}\\b`],
    ["SOS", `a${ESC}Xpayload${ESC}\\b`],
    ["8-bit OSC, 8-bit ST", "a\u009d0;title\u009cb"],
    ["8-bit OSC, BEL", "a\u009d52;c;aGk=\u0007b"],
    ["8-bit DCS", "a\u0090q#0;1;2\u009cb"],
    ["8-bit CSI", "a\u009b31mb"],
    ["8-bit CSI report request", "a\u009b6nb"],
    ["a lone C1 control", "a\u0085b"],
    ["a reset", `a${ESC}cb`],
    ["a device attributes request", `a${ESC}[cb`],
    ["a status report request", `a${ESC}[6nb`],
    ["a window title report", `a${ESC}[21tb`],
    ["a private mode change", `a${ESC}[?1000hb`],
    ["a key modifier change", `a${ESC}[>4;1mb`],
    ["a charset designation", `a${ESC}(0b`],
  ])("removes %s in safe and plain mode", (_name, text) => {
    for (const mode of ["safe", "plain"] as const) {
      const out = neutralizeTerminalOutput(text, mode);
      expect(out.text).toBe("ab");
      expect(out.removed).toBe(1);
    }
  });

  it("removes a lone ESC and keeps what follows it", () => {
    expect(safe(`a${ESC}\nb`)).toEqual({ text: "a\nb", removed: 1, escaped: 0 });
    expect(safe(`a${ESC}${ESC}[31mb`)).toEqual({ text: `a${ESC}[31mb`, removed: 1, escaped: 0 });
  });

  it("keeps colours and cursor moves in safe mode and removes them in plain mode", () => {
    const text = `${ESC}[1;31mred${ESC}[0m ${ESC}[38;2;1;2;3mx${ESC}[2K${ESC}[10;1H${ESC}7${ESC}8`;
    expect(safe(text)).toEqual({ text, removed: 0, escaped: 0 });
    expect(plain(text)).toEqual({ text: "red x", removed: 7, escaped: 0 });
  });

  it("shows other C0 controls and DEL as visible escapes", () => {
    expect(safe("a\u0007b\u0008c\u0000d\u007fe\u000bf\u000cg")).toEqual({
      text: "a\\x07b\\x08c\\x00d\\x7fe\\x0bf\\x0cg",
      removed: 0,
      escaped: 6,
    });
  });

  it("removes an OSC that is never terminated, to the end", () => {
    expect(safe(`ok${ESC}]52;c;aGVsbG8gd29ybGQ=`)).toEqual({ text: "ok", removed: 1, escaped: 0 });
    expect(safe("ok\u009d0;title")).toEqual({ text: "ok", removed: 1, escaped: 0 });
    expect(safe(`ok${ESC}]0;title${ESC}`)).toEqual({ text: "ok", removed: 1, escaped: 0 });
  });

  it("removes a sequence cut at the end, so a later read cannot complete it", () => {
    for (const cut of [ESC, `${ESC}[`, `${ESC}[3`, `${ESC}[?`, `${ESC}(`, "\u009b", "\u009b3"]) {
      expect(safe(`ok${cut}`)).toEqual({ text: "ok", removed: 1, escaped: 0 });
    }
  });

  it("ends a string at another ESC as a terminal does, and reads that ESC again", () => {
    expect(safe(`a${ESC}]0;t${ESC}[31mb`)).toEqual({ text: `a${ESC}[31mb`, removed: 1, escaped: 0 });
    expect(safe(`a${ESC}]0;t\u009b31mb`)).toEqual({ text: "ab", removed: 2, escaped: 0 });
  });

  it("drops a CSI broken by a control and reads that control again", () => {
    expect(safe(`a${ESC}[3\n1mb`)).toEqual({ text: "a\n1mb", removed: 1, escaped: 0 });
    expect(safe(`a${ESC}[3${ESC}]0;x\u0007b`)).toEqual({ text: "ab", removed: 2, escaped: 0 });
  });

  it("keeps UTF-8 text and lone surrogates intact around what it removes", () => {
    expect(safe(`é${ESC}]0;😀\u0007😀\ud800`).text).toBe("é😀\ud800");
  });

  it("lets nothing but text, tab, LF, CR and colour/cursor sequences through (safe)", () => {
    fc.assert(
      fc.property(hostile, (text) => {
        expect(safe(text).text).toMatch(SAFE_LANGUAGE);
      }),
      { numRuns: 2000 },
    );
  });

  it("lets nothing but text, tab, LF and CR through (plain)", () => {
    fc.assert(
      fc.property(hostile, (text) => {
        expect(plain(text).text).toMatch(PLAIN_LANGUAGE);
      }),
      { numRuns: 2000 },
    );
  });

  it("cannot be bypassed by splitting a sequence across two results", () => {
    fc.assert(
      fc.property(hostile, fc.nat(), (text, at) => {
        const cut = text.length === 0 ? 0 : at % (text.length + 1);
        const joined = safe(text.slice(0, cut)).text + safe(text.slice(cut)).text;
        expect(joined).toMatch(SAFE_LANGUAGE);
      }),
      { numRuns: 2000 },
    );
  });

  it("is idempotent: neutralized text has nothing left to remove", () => {
    fc.assert(
      fc.property(hostile, fc.constantFrom<TerminalOutputMode>("safe", "plain"), (text, mode) => {
        const once = neutralizeTerminalOutput(text, mode).text;
        expect(neutralizeTerminalOutput(once, mode)).toEqual({ text: once, removed: 0, escaped: 0 });
      }),
      { numRuns: 1000 },
    );
  });

  it("runs in linear time on adversarial input", () => {
    const patterns = [
      ESC,
      `${ESC}[`,
      `${ESC}]`,
      `${ESC}]0;`,
      `${ESC}[1;`,
      "\u009b",
      "\u009d",
      `${ESC}(`,
      "\u0007",
      `${ESC}[3${ESC}]`,
    ];
    // 256 Ki units of each: linear work takes milliseconds, a quadratic pass tens of billions of steps.
    for (const unit of patterns) {
      const text = unit.repeat(Math.ceil((1 << 18) / unit.length));
      const start = performance.now();
      for (const mode of ["safe", "plain"] as const) neutralizeTerminalOutput(text, mode);
      openSequenceStart(text);
      expect(performance.now() - start, JSON.stringify(unit)).toBeLessThan(3000);
    }
  });
});

describe("openSequenceStart", () => {
  it("finds a sequence the text ends inside of", () => {
    expect(openSequenceStart("plain text")).toBe(-1);
    expect(openSequenceStart(`ab${ESC}`)).toBe(2);
    expect(openSequenceStart(`ab${ESC}[3`)).toBe(2);
    expect(openSequenceStart(`ab${ESC}]52;c;aGk`)).toBe(2);
    expect(openSequenceStart(`ab${ESC}]0;t${ESC}`)).toBe(2);
    expect(openSequenceStart("ab\u009d0;t")).toBe(2);
    expect(openSequenceStart(`ab${ESC}[31m`)).toBe(-1);
    expect(openSequenceStart(`ab${ESC}]0;t\u0007c`)).toBe(-1);
  });

  it("holding the open tail back makes a chunked stream read exactly like the whole", () => {
    fc.assert(
      fc.property(
        hostile,
        fc.array(fc.nat(), { maxLength: 6 }),
        fc.constantFrom<TerminalOutputMode>("safe", "plain"),
        (text, cuts, mode) => {
          const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
          let pending = "";
          let from = 0;
          let streamed = "";
          for (const point of [...points, text.length]) {
            const buffer = pending + text.slice(from, point);
            from = point;
            const open = openSequenceStart(buffer);
            const ready = open === -1 ? buffer : buffer.slice(0, open);
            pending = open === -1 ? "" : buffer.slice(open);
            streamed += neutralizeTerminalOutput(ready, mode).text;
          }
          streamed += neutralizeTerminalOutput(pending, mode).text;
          expect(streamed).toBe(neutralizeTerminalOutput(text, mode).text);
        },
      ),
      { numRuns: 2000 },
    );
  });
});
