import type { Settings } from "../config/index.js";
import { clamp, RelayError } from "../core/index.js";
import { buildEnv, type ProcessOutcome, type ProcessRunner, splitShellWords } from "../exec/index.js";
import type { ProgramLanguage, TierSpec } from "../policy/index.js";
import { annotationsFor, commandOutcome, defineTool, type Tool, type ToolOutcome } from "../runner/index.js";
import {
  type BindContext,
  digestOrNull,
  envBinding,
  physicalPath,
  sha256,
  Unbindable,
} from "./consent-bindings.js";
import { cwdTargets } from "./targets.js";

export interface ShellToolDeps {
  settings: Settings;
  processes: ProcessRunner;
  /** The server's own environment: the base every overlay starts from. */
  baseEnv: Readonly<Record<string, string | undefined>>;
}

/** Commands, scripts, keystrokes and spawned programs are classified like commands: benign input is Tier 1. */
/** Command text: Tier 0 when the classifier proves it only reads (ADR 0033), else what it finds, at least 1. */
export const COMMAND_TIER: TierSpec = { kind: "heuristic", floor: 0, windows: false };

/** The working directory of a local process (shell_exec, shell_script, shell_spawn). */
export const CWD_PARAM = {
  type: "string",
  description: "working directory; empty = the server's",
  default: "",
  noNul: true,
} as const;

/** The environment overlay of a local process, as shell_exec and shell_spawn describe it. */
export const ENV_JSON_PARAM = {
  type: "string",
  description: 'JSON object of environment overrides; null removes a variable, e.g. {"A":"1","B":null}',
  default: "",
} as const;

const RESULT_FIELDS = {
  duration_ms: { type: "number", description: "wall time of the process" },
  output_bytes: { type: "integer", description: "bytes the process wrote in all" },
  stopped_processes: {
    type: "integer",
    description: "processes the command started that were still running when it ended, and were stopped",
  },
};

/** Non-empty parts joined by newlines: the probe holds every byte the executor sees (docs/wire-contract.md §5.4). */
export function joinProbe(...parts: string[]): string {
  return parts.filter((p) => p !== "").join("\n");
}

export function clampTimeout(seconds: number, settings: Settings): number {
  return clamp(seconds, 1, settings.maxTimeout);
}

function toOutcome(result: ProcessOutcome, timeoutSeconds: number): ToolOutcome {
  const fields = {
    duration_ms: Math.round(result.durationMs),
    output_bytes: result.totalBytes,
    stopped_processes: result.stoppedProcesses ?? 0,
  };
  return commandOutcome(result, timeoutSeconds, fields);
}

const INTERPRETERS: Record<string, { argv: string[]; strictPrefix: string; language: ProgramLanguage }> = {
  bash: { argv: ["/bin/bash", "-s"], strictPrefix: "set -euo pipefail\n", language: "shell" },
  // dash has no pipefail: `set -o pipefail` would abort the script at line 1.
  sh: { argv: ["/bin/sh", "-s"], strictPrefix: "set -eu\n", language: "shell" },
  python: { argv: ["python3", "-"], strictPrefix: "", language: "python" },
  python3: { argv: ["python3", "-"], strictPrefix: "", language: "python" },
  py: { argv: ["python3", "-"], strictPrefix: "", language: "python" },
};

/** The interpreter a name selects; an own key only, so `constructor` is just unsupported. */
function interpreterOf(name: string) {
  const key = name.trim().toLowerCase();
  return Object.hasOwn(INTERPRETERS, key) ? INTERPRETERS[key] : undefined;
}

/**
 * What the classifier reads for shell_script: the script in the language of
 * its interpreter. A shell reads its script from stdin, so a command in it
 * that reads stdin (`python3 -`, `bash`) gets the lines after it: the script
 * is also its commands' stdin. An unsupported interpreter is refused when it
 * would run; it is classified as shell text meanwhile.
 */
function scriptInput(a: { script: string; interpreter: string; env_json: string }) {
  const language = interpreterOf(a.interpreter)?.language ?? "shell";
  return { language, program: a.script, stdin: language === "shell" ? a.script : "", env: a.env_json };
}

/** The timeout a call runs under: the one it asks for, or the server's default, within 1..RELAY_SHELL_MAX_TIMEOUT. */
function callTimeout(timeout: number | undefined, settings: Settings): number {
  return clampTimeout(timeout ?? settings.defaultTimeout, settings);
}

/** What shell_exec starts: the line for /bin/sh -c, or its words run without a shell; never nothing. */
function execTarget(command: string, useShell: boolean): { command: string } | { argv: string[] } {
  if (useShell) {
    if (command.trim() === "") throw RelayError.untyped("empty command");
    return { command };
  }
  const argv = splitShellWords(command);
  if (argv.length === 0) throw RelayError.untyped("empty command");
  return { argv };
}

export function createShellTools(deps: ShellToolDeps): Tool[] {
  return [shellExecTool(deps), shellScriptTool(deps)];
}

function shellExecTool({ settings, processes, baseEnv }: ShellToolDeps): Tool {
  return defineTool({
    name: "shell_exec",
    title: "Run a local command",
    description:
      "Run one non-interactive command on the relay host through /bin/sh and return `[exit N]` and its output " +
      "when it runs and exits. Everything the command starts ends with it: a background job (`&`, nohup, " +
      "setsid) still running when it exits, or at its timeout, is stopped and the result says so. " +
      "For a multi-line script use shell_script; for anything that needs a tty, a prompt, or keeps " +
      "running (a server, a watcher), use shell_spawn.",
    params: {
      command: { type: "string", description: "command line, run with /bin/sh -c", noNul: true },
      timeout: {
        type: "integer",
        description: "seconds before the process group is killed (default RELAY_SHELL_DEFAULT_TIMEOUT)",
        optional: true,
      },
      max_output: {
        type: "integer",
        description: "output budget in bytes (1024..MAX_OUTPUT_HARD)",
        default: 65536,
      },
      cwd: CWD_PARAM,
      stdin: { type: "string", description: "text written to the command's stdin", default: "" },
      merge_stderr: { type: "boolean", description: "interleave stderr with stdout", default: true },
      use_shell: {
        type: "boolean",
        description: "false: split the command into words and exec it without a shell",
        default: true,
      },
      env_json: ENV_JSON_PARAM,
    },
    tier: COMMAND_TIER,
    annotations: annotationsFor(COMMAND_TIER, { openWorld: true }),
    resultFields: RESULT_FIELDS,
    budget: (a) => a.max_output,
    policyText: (a) => joinProbe(a.command, a.stdin, a.env_json),
    targets: (a) => cwdTargets(a.cwd),
    programInput: (a) => ({ language: "shell", program: a.command, stdin: a.stdin, env: a.env_json }),
    auditArgs: (a) => ({
      command: a.command,
      timeout: callTimeout(a.timeout, settings),
      cwd: a.cwd,
      use_shell: a.use_shell,
      stdin: a.stdin,
      env_json: a.env_json,
    }),
    // A verify/rollback step runs in the same directory and environment, without the original stdin.
    followUp: (a, command) => ({ ...a, command, stdin: "" }),
    // The timeout, the output budget and merging stderr bound the act; they do not change it.
    act: (a, { deps }: BindContext) => ({
      command: a.command,
      command_sha256: sha256(a.command),
      // false: the command is split into words and run without a shell.
      use_shell: a.use_shell,
      stdin_sha256: digestOrNull(a.stdin),
      ...envBinding(a.env_json),
      cwd: physicalPath(deps, a.cwd),
    }),
    async run(a, ctx) {
      const timeout = callTimeout(a.timeout, settings);
      const target = execTarget(a.command, a.use_shell);
      const result = await processes.run(
        {
          ...target,
          cwd: a.cwd,
          env: buildEnv(baseEnv, a.env_json),
          stdin: a.stdin,
          timeoutMs: timeout * 1000,
          maxBufferBytes: settings.maxOutputHard,
          mergeStderr: a.merge_stderr,
        },
        ctx.signal,
      );
      return toOutcome(result, timeout);
    },
  });
}

function shellScriptTool({ settings, processes, baseEnv }: ShellToolDeps): Tool {
  return defineTool({
    name: "shell_script",
    title: "Run a local script",
    description:
      "Run a multi-line script on the relay host, fed on stdin to bash, sh or python3, and return `[exit N]` " +
      "and its merged output when it runs and exits. bash and sh scripts start with strict mode " +
      "(set -eu, plus pipefail for bash) unless strict=false. Like shell_exec, anything the script leaves " +
      "running in the background is stopped when it ends; use shell_spawn for long-lived work. " +
      "For one command use shell_exec.",
    params: {
      script: { type: "string", description: "the script text" },
      interpreter: { type: "string", description: "bash, sh or python3", default: "bash" },
      strict: { type: "boolean", description: "prepend strict mode for bash/sh", default: true },
      timeout: {
        type: "integer",
        description: "seconds before the process group is killed (default RELAY_SHELL_DEFAULT_TIMEOUT)",
        optional: true,
      },
      cwd: CWD_PARAM,
      env_json: { type: "string", description: "JSON object of environment overrides", default: "" },
    },
    tier: COMMAND_TIER,
    annotations: annotationsFor(COMMAND_TIER, { openWorld: true }),
    resultFields: RESULT_FIELDS,
    budget: () => 65536,
    policyText: (a) => joinProbe(a.script, a.env_json),
    // The interpreter as typed and the program it selects.
    targets: (a) => [
      ...cwdTargets(a.cwd),
      { kind: "interpreter", value: a.interpreter },
      ...(interpreterOf(a.interpreter)?.argv.slice(0, 1) ?? []).map((value) => ({
        kind: "interpreter" as const,
        value,
      })),
    ],
    programInput: scriptInput,
    auditArgs: (a) => ({
      interpreter: a.interpreter,
      strict: a.strict,
      script: a.script,
      timeout: callTimeout(a.timeout, settings),
      cwd: a.cwd,
      env_json: a.env_json,
    }),
    // A verify/rollback step is a script for the same interpreter, directory and environment.
    followUp: (a, command) => ({ ...a, script: command }),
    act: (a, { deps }: BindContext) => {
      const interpreter = interpreterOf(a.interpreter);
      if (!interpreter) throw new Unbindable(`unsupported interpreter: ${a.interpreter}`);
      return {
        script: a.script,
        script_sha256: sha256(a.script),
        // The program that reads the script, as it will be started.
        interpreter: interpreter.argv.join(" "),
        // Strict mode changes what a failing line does; python has none.
        strict: a.strict && interpreter.strictPrefix !== "",
        ...envBinding(a.env_json),
        cwd: physicalPath(deps, a.cwd),
      };
    },
    async run(a, ctx) {
      const interpreter = interpreterOf(a.interpreter);
      if (!interpreter) throw RelayError.untyped(`unsupported interpreter: ${a.interpreter}`);
      const timeout = callTimeout(a.timeout, settings);
      const prefix = a.strict ? interpreter.strictPrefix : "";
      const result = await processes.run(
        {
          argv: interpreter.argv,
          cwd: a.cwd,
          env: buildEnv(baseEnv, a.env_json),
          // A script is never empty on stdin: an interpreter reading /dev/null would also just exit 0.
          stdin: `${prefix}${a.script}\n`,
          timeoutMs: timeout * 1000,
          maxBufferBytes: settings.maxOutputHard,
          mergeStderr: true,
        },
        ctx.signal,
      );
      return toOutcome(result, timeout);
    },
  });
}
