import { describe, expect, it } from "vitest";
import { classifyWindowsCommand, tokenizeWindows, type WinStatement } from "./windows.js";

function statements(text: string): WinStatement[] {
  const out: WinStatement[] = [];
  tokenizeWindows(text, (st) => {
    out.push(st);
    return false;
  });
  return out;
}

const noNesting = { nested: () => null };

function tierOf(text: string): number {
  let best = 1;
  for (const st of statements(text)) {
    for (const at of st.commands) {
      const hit = classifyWindowsCommand(st, at, st.lower.join(" "), false, noNesting);
      if (hit !== null && hit.tier > best) best = hit.tier;
    }
  }
  return best;
}

describe("windows tokenizer", () => {
  it("splits statements and keeps quoted text in one token", () => {
    const sts = statements('Get-Item "a b" | Remove-Item -Force; echo x');
    expect(sts.map((s) => s.raw)).toEqual([
      ["Get-Item", "a b"],
      ["Remove-Item", "-Force"],
      ["echo", "x"],
    ]);
    expect(sts.map((s) => s.piped)).toEqual([false, true, false]);
  });

  it("puts words after `(` and after an assignment in command position", () => {
    const [st] = statements("$x = (Remove-Item C:\\x -Recurse)");
    expect(st?.commands.map((i) => st.raw[i])).toEqual(["$x", "Remove-Item"]);
  });

  it("stops when asked", () => {
    let seen = 0;
    tokenizeWindows("a; b; c", () => ++seen === 2);
    expect(seen).toBe(2);
  });
});

describe("windows rules", () => {
  it("binds parameter abbreviations and switch values like PowerShell", () => {
    expect(tierOf("Remove-Item -rec x")).toBe(3);
    expect(tierOf("Remove-Item -Recurse:$true x")).toBe(3);
    // Not recursive: the removal of a named item, Tier 1 like `rm x`.
    expect(tierOf("Remove-Item -Recurse:$false x")).toBe(1);
    expect(tierOf("ri -fo x")).toBe(3);
  });

  it("keeps look-alikes low", () => {
    expect(tierOf("Format-Table -AutoSize")).toBe(1);
    expect(tierOf("echo Remove-Item -Recurse")).toBe(1);
    expect(tierOf("echo runasteroid")).toBe(1);
  });

  it("judges removals as the POSIX rules do: a named item Tier 1, a pipeline's items Tier 3", () => {
    expect(tierOf("del C:\\onefile.txt")).toBe(1);
    expect(tierOf("erase C:\\onefile.txt")).toBe(1);
    expect(tierOf("rmdir C:\\empty")).toBe(1);
    expect(tierOf("Remove-Item single.txt")).toBe(1);
    expect(tierOf("Get-ChildItem C:\\x | Remove-Item")).toBe(3);
    expect(tierOf("Get-ChildItem C:\\x | ri")).toBe(3);
    expect(tierOf("Remove-ItemProperty -Path HKLM:\\Software\\Foo -Name Bar")).toBe(2);
    expect(tierOf("Get-ChildItem C:\\x | Measure-Object")).toBe(1);
  });
});
