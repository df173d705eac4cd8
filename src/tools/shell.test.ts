import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { loadSettings } from "../config/index.js";
import type { ProcessRunner } from "../exec/index.js";
import type { Tool } from "../runner/index.js";
import { createShellTools } from "./shell.js";

// The input the classifier reads is derived here, not run: no process is ever started.
const unused = new Proxy(
  {},
  { get: () => () => Promise.reject(new Error("not started here")) },
) as ProcessRunner;
const tools = createShellTools({
  settings: loadSettings({}, { cwd: "/tmp", homeDir: "/home/op" }),
  processes: unused,
  baseEnv: {},
});
const tool = (name: string): Tool => tools.find((t) => t.name === name)!;

function inputOf(name: string, raw: Record<string, unknown>) {
  const t = tool(name);
  const parsed = t.parse(raw);
  if (!parsed.ok) throw new Error(parsed.error.join("; "));
  return { input: t.programInput!(parsed.value), policyText: t.policyText(parsed.value, { clientId: "" }) };
}

/** The policy text rebuilt from the parts, once each: nothing the deny list sees escapes the classifier. */
function rejoin(i: { program: string; stdin: string; env: string }): string {
  return [i.program, i.stdin === i.program ? "" : i.stdin, i.env].filter((p) => p !== "").join("\n");
}

describe("the program input of the local command tools", () => {
  it("shell_exec: the command as shell, with its stdin and env", () => {
    const { input, policyText } = inputOf("shell_exec", {
      command: "python3 -",
      stdin: "print(1)",
      env_json: '{"A":"1"}',
    });
    expect(input).toEqual({ language: "shell", program: "python3 -", stdin: "print(1)", env: '{"A":"1"}' });
    expect(rejoin(input)).toBe(policyText);
  });

  it.each([
    ["python3", "python"],
    [" PyThOn ", "python"],
    ["py", "python"],
    ["bash", "shell"],
    ["SH", "shell"],
    ["ruby", "shell"],
  ])("shell_script with interpreter %j is read as %s", (interpreter, language) => {
    const { input, policyText } = inputOf("shell_script", { script: "print(1)", interpreter, env_json: "" });
    expect(input.language).toBe(language);
    // A shell reads its script on stdin, so the script is also what its commands read.
    expect(input.stdin).toBe(language === "shell" ? "print(1)" : "");
    expect(rejoin(input)).toBe(policyText);
  });

  it("covers every byte of the policy text, whatever the arguments", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.string(), (command, stdin, env) => {
        fc.pre(command.trim() !== "" && !command.includes("\0"));
        const exec = inputOf("shell_exec", { command, stdin, env_json: env });
        expect(
          [exec.input.program, exec.input.stdin, exec.input.env].filter((p) => p !== "").join("\n"),
        ).toBe(exec.policyText);
        const script = inputOf("shell_script", { script: command, interpreter: "python3", env_json: env });
        expect(rejoin(script.input)).toBe(script.policyText);
      }),
    );
  });
});
