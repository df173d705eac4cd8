import { describe, expect, it } from "vitest";
import { assembleLine, EMPTY_LINE, MAX_PENDING_LINE, type PendingLine, showLine } from "./terminal-line.js";

/** Sends in order, each applied only as an admitted send would be: the rest becomes pending. */
function sendAll(sends: Array<[string, boolean]>) {
  let pending: PendingLine = EMPTY_LINE;
  const judged: ReturnType<typeof assembleLine>[] = [];
  for (const [data, enter] of sends) {
    const line = assembleLine(pending, data, enter);
    judged.push(line);
    pending = line.rest;
  }
  return { judged, pending };
}

describe("assembleLine: the line a terminal will run", () => {
  it("joins pieces sent without Enter into the line the Enter runs", () => {
    const { judged, pending } = sendAll([
      ["r", false],
      ["m -rf /tmp/x", true],
    ]);
    expect(judged[0]).toMatchObject({ text: "r", entered: [], rest: { text: "r", opacity: "" } });
    expect(judged[1]).toMatchObject({
      text: "rm -rf /tmp/x",
      entered: [{ text: "rm -rf /tmp/x", opacity: "" }],
      opacity: "",
    });
    expect(pending).toEqual(EMPTY_LINE);
  });

  it("judges a piece without Enter as the whole pending text so far", () => {
    const { judged } = sendAll([
      ["rm -r", false],
      ["f /tmp/y", false],
    ]);
    expect(judged[1]?.text).toBe("rm -rf /tmp/y");
    expect(judged[1]?.entered).toEqual([]);
  });

  it("treats CR, LF and CRLF inside data as Enter; each line is judged and the remainder stays pending", () => {
    const line = assembleLine({ text: "ec", opacity: "" }, "ho a\r\nls\rrm -rf /tmp/z\nwho", false);
    expect(line.entered.map((l) => l.text)).toEqual(["echo a", "ls", "rm -rf /tmp/z"]);
    expect(line.rest).toEqual({ text: "who", opacity: "" });
    expect(line.text).toBe("echo a\nls\nrm -rf /tmp/z\nwho");
  });

  it("keeps a line continued by a trailing backslash, without the backslash-newline, as the shell does", () => {
    const { judged, pending } = sendAll([
      ["r\\", true],
      ["m -rf /tmp/x", true],
    ]);
    expect(judged[0]).toMatchObject({ entered: [], rest: { text: "r" }, text: "r" });
    expect(judged[1]?.text).toBe("rm -rf /tmp/x");
    expect(pending).toEqual(EMPTY_LINE);
    // An escaped backslash ends the line.
    expect(assembleLine(EMPTY_LINE, "echo \\\\", true).entered.map((l) => l.text)).toEqual(["echo \\\\"]);
  });

  it("keeps a line whose quotes are open after Enter pending, with the newline, until they close", () => {
    const { judged } = sendAll([
      ["echo 'a", true],
      ["'; rm -rf /tmp/q", true],
    ]);
    expect(judged[0]?.rest.text).toBe("echo 'a\n");
    expect(judged[0]?.entered).toEqual([]);
    expect(judged[1]?.entered.map((l) => l.text)).toEqual(["echo 'a\n'; rm -rf /tmp/q"]);
    // A quote inside a comment opens nothing; inside double quotes a single quote is plain.
    expect(assembleLine(EMPTY_LINE, "ls # it's", true).entered).toHaveLength(1);
    expect(assembleLine(EMPTY_LINE, `echo "it's"`, true).entered).toHaveLength(1);
    expect(assembleLine(EMPTY_LINE, `echo $'a\\'b'`, true).entered).toHaveLength(1);
  });

  it("makes a line edited by control keys opaque until the next Enter, then starts clean", () => {
    for (const key of [
      "\x1b[D",
      "\x1b[200~",
      "\x15",
      "\x17",
      "\x12",
      "\x7f",
      "\x08",
      "\t",
      "\x03",
      "\u009b",
    ]) {
      const { judged, pending } = sendAll([
        ["ls", false],
        [key, false],
        ["rm", true],
        ["ls", true],
      ]);
      expect(judged[1]?.opacity, JSON.stringify(key)).toBe("edited");
      expect(judged[2]?.opacity).toBe("edited");
      expect(judged[2]?.entered[0]?.opacity).toBe("edited");
      expect(judged[3]?.opacity).toBe("");
      expect(pending).toEqual(EMPTY_LINE);
    }
  });

  it("judges every line of one send: an edited line among them makes the send opaque", () => {
    const line = assembleLine(EMPTY_LINE, "ls\nx\x1b[Ay\nwho", true);
    expect(line.entered.map((l) => l.opacity)).toEqual(["", "edited", ""]);
    expect(line.opacity).toBe("edited");
    expect(line.rest).toEqual(EMPTY_LINE);
  });

  it("bounds what stays pending: past the bound the line is opaque until Enter", () => {
    const long = "a".repeat(MAX_PENDING_LINE + 10);
    const first = assembleLine(EMPTY_LINE, long, false);
    expect(first.rest.opacity).toBe("overflow");
    expect(first.rest.text).toHaveLength(MAX_PENDING_LINE);
    const next = assembleLine(first.rest, "b", true);
    expect(next.opacity).toBe("overflow");
    expect(next.rest).toEqual(EMPTY_LINE);
    // A long line entered in one send is judged whole, and is not opaque.
    const whole = assembleLine(EMPTY_LINE, long, true);
    expect(whole.opacity).toBe("");
    expect(whole.text).toBe(long);
  });

  it("an empty Enter is an empty line", () => {
    expect(assembleLine(EMPTY_LINE, "", true)).toMatchObject({ text: "", entered: [{ text: "" }] });
  });

  it("shows control characters in a line as \\xNN and cuts it", () => {
    expect(showLine("a\x1b[Ab\x7f")).toBe("a\\x1b[Ab\\x7f");
    expect(showLine("x".repeat(200))).toHaveLength(120);
  });
});

describe("assembleLine: an edited line is read in its plain forms", () => {
  it("a cursor key in front of a command does not hide it", () => {
    const line = assembleLine({ text: "\x1b[D", opacity: "edited" }, "rm -rf /tmp/x", true);
    expect(line.text).toBe("\x1b[Drm -rf /tmp/x\nrm -rf /tmp/x");
    expect(line.raw).toBe("\x1b[Drm -rf /tmp/x");
    expect(line.opacity).toBe("edited");
  });

  it("shows the text without the sequences and each piece between them, Tab as a space", () => {
    const forms = (data: string) => assembleLine(EMPTY_LINE, data, true).text.split("\n").slice(1);
    expect(forms("rm -r\x1b[Cf /x")).toEqual(["rm -rf /x", "rm -r", "f /x"]);
    expect(forms("ls\x15rm\t-rf /x")).toEqual(["lsrm -rf /x", "ls", "rm -rf /x"]);
    expect(forms("\x1bOA\x1b[200~echo hi\x1b[201~")).toEqual(["echo hi"]);
    expect(assembleLine(EMPTY_LINE, "\x1b", false).text).toBe("\x1b");
  });
});
