import { describe, expect, it } from "vitest";
import { countItemized, parseListing, saysAbsent, unescapeName } from "./listing.js";

/** Lines as rsync 3.x prints them for `--list-only -r`. */
const SLASHED = [
  "drwxr-xr-x          4,096 2026/12/01 16:15:43 .",
  "-rw-r--r--      5,120,000 2026/12/01 16:15:43 big",
  "drwxr-xr-x          4,096 2026/12/01 16:15:43 a",
  "-rw-r--r--              2 2026/12/01 16:15:43 a/sp ace",
  "lrwxrwxrwx             11 2026/12/01 16:15:43 a/link -> /etc/passwd",
  "-rw-r--r--              3 2026/12/01 16:15:43 a/new\\#012line",
  "",
].join("\n");

describe("parseListing", () => {
  it("reads directories, files with grouped sizes, names with spaces and escapes; a symlink is other", () => {
    const parsed = parseListing(SLASHED, "r1");
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect([...parsed.value.directories]).toEqual(["a"]);
    expect(Object.fromEntries(parsed.value.files)).toEqual({
      big: { size: 5_120_000 },
      "a/sp ace": { size: 2 },
      "a/new\nline": { size: 3 },
    });
    expect(parsed.value.other).toEqual(["a/link"]);
    expect(parsed.value.total_bytes).toBe(5_120_005);
  });

  it("strips the run id when rsync printed the names under it", () => {
    const text = "drwx------ 4,096 2026/12/01 16:15:43 r1\n-rw------- 1 2026/12/01 16:15:43 r1/site/x\n";
    const parsed = parseListing(text, "r1");
    expect(parsed.ok && Object.fromEntries(parsed.value.files)).toEqual({ "site/x": { size: 1 } });
  });

  it("refuses a listing cut before its last newline or holding a line that is not an entry", () => {
    expect(parseListing(SLASHED.slice(0, -5), "r1").ok).toBe(false);
    expect(parseListing(`${SLASHED}rsync: something odd\n`, "r1")).toEqual({
      ok: false,
      error: "rsync: something odd",
    });
  });

  it("an empty listing is an empty tree", () => {
    const parsed = parseListing("", "r1");
    expect(parsed.ok && parsed.value.files.size + parsed.value.directories.size).toBe(0);
  });
});

describe("countItemized and saysAbsent", () => {
  it("counts itemized changes, not the run directory's own line nor rsync's notes", () => {
    const out =
      "created directory x\ncd+++++++++ ./\n<f+++++++++ big\ncd+++++++++ a/\n<f+++++++++ a/sp ace\n";
    expect(countItemized(out)).toBe(3);
  });

  it("recognises rsync's answer for a path that does not exist, and nothing else", () => {
    expect(saysAbsent('rsync: [sender] change_dir "/runs/x" failed: No such file or directory (2)')).toBe(
      true,
    );
    expect(saysAbsent('rsync: link_stat "/runs/x" failed: No such file or directory (2)')).toBe(true);
    expect(
      saysAbsent(
        "/usr/bin/rrsync error: post-realpath open failed (race detected): ./runs/r1/ No such file or directory\n",
      ),
    ).toBe(true);
    expect(
      saysAbsent("/usr/bin/rrsync error: post-realpath open failed (race detected): ./x Too many levels"),
    ).toBe(false);
    expect(saysAbsent("rsync: connection unexpectedly closed")).toBe(false);
    expect(saysAbsent("No such file or directory")).toBe(false);
  });
});

describe("names in a listing are bytes", () => {
  it("decodes rsync's \\#ooo escapes as bytes, not as one character each", () => {
    const out = [
      "drwxr-xr-x           4096 2026/12/01 16:15:43 .",
      "-rw-r--r--              1 2026/12/01 16:15:43 caf\\#303\\#251.txt",
      "-rw-r--r--              1 2026/12/01 16:15:43 inv\\#377\\#376",
      "-rw-r--r--              1 2026/12/01 16:15:43 nl\\#012x",
      "-rw-r--r--              1 2026/12/01 16:15:43 x\\#134#101",
      "-rw-r--r--              1 2026/12/01 16:15:43 back\\slash",
      "-rw-r--r--              1 2026/12/01 16:15:43  sp ace ",
      "",
    ].join("\n");
    const parsed = parseListing(out, "r1");
    const names = parsed.ok ? [...parsed.value.files.keys()].map((n) => Buffer.from(n, "latin1")) : [];
    expect(names).toEqual([
      Buffer.from("café.txt"),
      Buffer.from([0x69, 0x6e, 0x76, 0xff, 0xfe]),
      Buffer.from("nl\nx"),
      Buffer.from("x\\#101"),
      Buffer.from("back\\slash"),
      Buffer.from(" sp ace "),
    ]);
    expect(unescapeName("caf\\#303\\#251")).toBe(Buffer.from("café").toString("latin1"));
  });
});
