import type { Unit } from "../shell/script.js";
import { baseName } from "../shell/words.js";

/**
 * Environment variables that make a shell, an interpreter or the dynamic
 * loader run code named only by the variable: a file the classifier cannot
 * read (BASH_ENV=/tmp/x.sh) or options that load a module (NODE_OPTIONS=
 * --require ...). Setting one in an environment overlay is opaque execution.
 */
const HOOKS = new Set([
  // shells: sourced at start-up, or run around every command
  "BASH_ENV",
  "ENV",
  "SHELLOPTS",
  "BASHOPTS",
  "PROMPT_COMMAND",
  "PS4",
  // interpreters
  "PYTHONSTARTUP",
  "PYTHONPATH",
  "PYTHONHOME",
  "PYTHONINSPECT",
  "PYTHONWARNINGS",
  "PYTHONBREAKPOINT",
  "PERL5OPT",
  "PERL5LIB",
  "PERLLIB",
  "PERL5DB",
  "RUBYOPT",
  "RUBYLIB",
  "NODE_OPTIONS",
  "NODE_PATH",
  "JAVA_TOOL_OPTIONS",
  "_JAVA_OPTIONS",
  "JDK_JAVA_OPTIONS",
  // the dynamic loader and libc
  "LD_PRELOAD",
  "LD_LIBRARY_PATH",
  "LD_AUDIT",
  "GCONV_PATH",
]);

function isHook(key: string): boolean {
  // bash imports `BASH_FUNC_name%%` variables as function definitions.
  return HOOKS.has(key) || key.startsWith("BASH_FUNC_");
}

/** `KEY=value` of every variable in the overlay that loads code; a removal (null) or "" loads nothing. */
export function startupHooks(env: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const [key, value] of Object.entries(env)) {
    if (value === null || value === "") continue;
    if (isHook(key)) out.push(`${key}=${String(value)}`);
  }
  return out;
}

/** Commands whose `NAME=value` arguments set a variable for what they run, or for the shell. */
const SETTERS = new Set(["env", "export", "declare", "typeset", "local", "readonly", "sudo", "doas"]);

/**
 * The same variables set in shell text: as an assignment before a command
 * or on its own (`BASH_ENV=/tmp/x.sh bash -c …`), or as an argument of env,
 * export, declare and their kin. Returns the first such `NAME=value`, or null.
 */
export function startupHookInUnit(unit: Unit): string | null {
  for (const a of unit.assigns)
    if (isHook(a.name) && a.value.value !== "") return `${a.name}=${a.value.value}`;
  const name = baseName(unit.words[0]?.value ?? "").toLowerCase();
  if (!SETTERS.has(name)) return null;
  for (const w of unit.words.slice(1)) {
    const eq = w.value.indexOf("=");
    if (eq > 0 && isHook(w.value.slice(0, eq)) && eq < w.value.length - 1) return w.value;
  }
  return null;
}
