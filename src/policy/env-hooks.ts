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

/** `KEY=value` of every variable in the overlay that loads code; a removal (null) or "" loads nothing. */
export function startupHooks(env: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const [key, value] of Object.entries(env)) {
    if (value === null || value === "") continue;
    // bash imports `BASH_FUNC_name%%` variables as function definitions.
    if (HOOKS.has(key) || key.startsWith("BASH_FUNC_")) out.push(`${key}=${String(value)}`);
  }
  return out;
}
