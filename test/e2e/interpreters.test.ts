import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../helpers/server.js";

/**
 * Programs run through an interpreter, a script file, stdin or a start-up
 * variable, through the built server in guarded mode. Every destructive
 * program aims only at a canary directory in the test's temp dir, so even a
 * broken classifier destroys nothing else; the canary must survive.
 */

interface Case {
  tool: "shell_exec" | "shell_script";
  args: Record<string, unknown>;
  tier: 2 | 3;
  basis: string;
}

/** `dir` is the canary directory (holding `file`); `hook` a shell file that removes it. */
function cases(dir: string, hook: string, pyHook: string): Array<[string, Case]> {
  const py = (script: string, tier: 2 | 3, basis: string): Case => ({
    tool: "shell_script",
    args: { interpreter: "python3", script },
    tier,
    basis,
  });
  const q = JSON.stringify(dir);
  return [
    ["python: shutil.rmtree", py(`import shutil\nshutil.rmtree(${q})`, 3, "file_destruction")],
    ["python: os.system", py(`import os\nos.system("rm -rf ${dir}")`, 3, "file_destruction")],
    [
      "python: subprocess argv",
      py(`import subprocess\nsubprocess.run(["rm", "-rf", ${q}])`, 3, "file_destruction"),
    ],
    ["python: __import__", py(`__import__('shutil').rmtree(${q})`, 3, "file_destruction")],
    ["python: import alias", py(`import os as o\no.system("rm -rf ${dir}")`, 3, "file_destruction")],
    ["python: from-import alias", py(`from shutil import rmtree as r\nr(${q})`, 3, "file_destruction")],
    ["python: star import", py(`from os import *\nsystem("rm -rf ${dir}")`, 3, "file_destruction")],
    [
      "python: os.remove in a loop",
      py(`import os\nfor f in os.listdir(${q}):\n    os.remove(${q} + "/" + f)`, 3, "file_destruction"),
    ],
    [
      "python: pathlib unlink of every entry",
      py(`from pathlib import Path\nfor p in Path(${q}).rglob("*"):\n    p.unlink()`, 3, "file_destruction"),
    ],
    [
      "python: exec of a variable",
      py(`import sys\nexec(sys.stdin.read() or "import shutil")`, 2, "opaque_program"),
    ],
    [
      "python3 - with the program on stdin",
      {
        tool: "shell_exec",
        args: { command: "python3 -", stdin: `import shutil\nshutil.rmtree(${q})` },
        tier: 3,
        basis: "file_destruction",
      },
    ],
    [
      "python3 -c (as before)",
      {
        tool: "shell_exec",
        args: { command: `python3 -c 'import shutil; shutil.rmtree(${q})'` },
        tier: 3,
        basis: "file_destruction",
      },
    ],
    [
      "bash script: python3 - reads the rest of the script",
      {
        tool: "shell_script",
        args: { interpreter: "bash", script: `python3 -\nimport shutil\nshutil.rmtree(${q})` },
        tier: 3,
        basis: "file_destruction",
      },
    ],
    [
      "BASH_ENV in env_json",
      {
        tool: "shell_script",
        args: { interpreter: "bash", script: "true", env_json: JSON.stringify({ BASH_ENV: hook }) },
        tier: 2,
        basis: "startup_env",
      },
    ],
    [
      "BASH_ENV set in the command",
      { tool: "shell_exec", args: { command: "BASH_ENV=HOOK bash -c true" }, tier: 2, basis: "startup_env" },
    ],
    [
      "PYTHONPATH in env_json",
      {
        tool: "shell_script",
        args: {
          interpreter: "python3",
          script: "print(1)",
          env_json: JSON.stringify({ PYTHONPATH: pyHook }),
        },
        tier: 2,
        basis: "startup_env",
      },
    ],
    [
      "bash file.sh",
      { tool: "shell_exec", args: { command: `bash ${hook}` }, tier: 2, basis: "script_file" },
    ],
    ["source file", { tool: "shell_exec", args: { command: `. ${hook}` }, tier: 2, basis: "script_file" }],
    [
      "python3 file.py",
      {
        tool: "shell_exec",
        args: { command: `python3 ${pyHook}/sitecustomize.py` },
        tier: 2,
        basis: "script_file",
      },
    ],
    [
      "perl with the program on stdin",
      {
        tool: "shell_exec",
        args: { command: "perl", stdin: `rename "${dir}/file", "${dir}/moved";` },
        tier: 2,
        basis: "opaque_program",
      },
    ],
    [
      "unlink of every entry, then rmdir",
      {
        tool: "shell_exec",
        args: { command: `ls ${dir}/* | xargs unlink && rmdir ${dir}` },
        tier: 3,
        basis: "file_destruction",
      },
    ],
  ];
}

describe("guarded mode refuses programs it cannot read or that delete", () => {
  let s: TestServer;
  let hook: string;
  let pyHook: string;
  beforeAll(async () => {
    s = await startServer({ RELAY_SHELL_POLICY_MODE: "guarded" });
    // Code that runs only if a start-up variable or a script file were admitted: it removes canaries only.
    hook = join(s.dir, "hook.sh");
    writeFileSync(hook, `rm -rf ${join(s.dir, "canary-")}*\n`);
    pyHook = join(s.dir, "pyhook");
    mkdirSync(pyHook);
    writeFileSync(
      join(pyHook, "sitecustomize.py"),
      `import glob, shutil\nfor d in glob.glob(${JSON.stringify(join(s.dir, "canary-"))} + "*"):\n    shutil.rmtree(d)\n`,
    );
  });
  afterAll(async () => {
    await s.close();
  });

  it.each(cases("CANARY", "HOOK", "PYHOOK"))("%s", async (_label, template) => {
    const dir = join(s.dir, `canary-${Math.random().toString(16).slice(2)}`);
    mkdirSync(dir);
    writeFileSync(join(dir, "file"), "precious");
    const fill = (v: unknown) =>
      typeof v === "string"
        ? v.replaceAll("PYHOOK", pyHook).replaceAll("HOOK", hook).replaceAll("CANARY", dir)
        : v;
    const args = Object.fromEntries(Object.entries(template.args).map(([k, v]) => [k, fill(v)]));
    const r = await s.call(template.tool, args);
    const name = template.tier === 3 ? "IRREVERSIBLE" : "STATEFUL";
    expect(r.text).toMatch(
      new RegExp(`^\\[DENIED tier ${template.tier} \\(${name}\\): guarded mode refuses`),
    );
    expect(r.structured).toMatchObject({ tier: template.tier, basis: template.basis, denied: true });
    expect(existsSync(join(dir, "file"))).toBe(true);
    expect(s.records().at(-1)).toMatchObject({ tool: template.tool, tier: template.tier, denied: true });
  });

  it.each([
    ["print", "print('hello from python')", "hello from python"],
    ["reading a file", "with open('data.json') as f:\n    print(f.read().strip())", '{"k": 1}'],
    ["json.load", "import json\nwith open('data.json') as f:\n    print(json.load(f)['k'])", "1"],
    [
      "os reads",
      "import os\nprint(sorted(os.listdir('.'))[0] != '', os.path.exists('data.json'))",
      "True True",
    ],
  ])("a Python program that only reads runs at Tier 1: %s", async (_label, script, out) => {
    writeFileSync(join(s.dir, "data.json"), '{"k": 1}\n');
    const r = await s.call("shell_script", { interpreter: "python3", script });
    expect(r.text).toBe(`[exit 0]\n${out}\n`);
    expect(r.structured).toMatchObject({ tier: 1, basis: "default" });
  });

  it("python3 --version runs at Tier 0: asking an interpreter for its version runs no program", async () => {
    const r = await s.call("shell_exec", { command: "python3 --version" });
    expect(r.text).toMatch(/^\[exit 0\]\nPython 3\./);
    expect(r.structured).toMatchObject({ tier: 0, basis: "proven_read" });
  });
});

describe("open mode runs opaque programs with a notice that says why", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({ RELAY_SHELL_POLICY_MODE: "open" });
  });
  afterAll(async () => {
    await s.close();
  });

  it("a script file handed to bash", async () => {
    const file = join(s.dir, "hello.sh");
    writeFileSync(file, "echo hello from a file\n");
    const r = await s.call("shell_exec", { command: `bash ${file}` });
    expect(r.text).toMatch(/^\[exit 0\]\nhello from a file\n/);
    expect(r.text).toContain(
      "[NOTICE tier 2 (STATEFUL), runs a script file the classifier cannot read (script_file).",
    );
  });

  it("a Python deletion of canary files in a loop", async () => {
    const canary = join(s.dir, "canary-file");
    writeFileSync(canary, "x");
    const r = await s.call("shell_script", {
      interpreter: "python3",
      script: `import os\nfor f in [${JSON.stringify(canary)}]:\n    os.remove(f)\nprint("removed")`,
    });
    expect(r.text).toMatch(/^\[exit 0\]\nremoved\n/);
    expect(r.text).toContain(
      "[NOTICE tier 3 (IRREVERSIBLE), deletes or overwrites files (file_destruction).",
    );
    expect(existsSync(canary)).toBe(false);
  });
});
