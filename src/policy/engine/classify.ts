import { Best, toPart } from "../best.js";
import { startupHooks } from "../opaque/env-hooks.js";
import { fallbackClassify } from "../patterns/fallback.js";
import { classifyWindowsCommand, DOWNLOADS, tokenizeWindows } from "../patterns/windows.js";
import { type PythonSyntax, preparePythonSyntax } from "../python/syntax.js";
import { safeVariable } from "../readonly/prove.js";
import { buildRuleTable, type Rule } from "../rules/index.js";
import { parseEnvOverlay, splitEnvOverlay } from "../shell/env-overlay.js";
import { plainScript } from "../shell/fast-path.js";
import type { ParsedScript, StdinFeed } from "../shell/script.js";
import { type BashSyntax, loadBashSyntax } from "../shell/syntax.js";
import { walkScript } from "../shell/walker.js";
import { literalWord } from "../shell/words.js";
import type { Classification, Classifier, ClassifyOptions, ProgramInput } from "../types.js";
import { classifyUnits } from "./commands.js";
import type { Scope, StdinCtx } from "./context.js";
import { pythonInto as pythonProgramInto } from "./python-host.js";
import { cutPartsInto, piecesInto } from "./recovery.js";

/**
 * Texts longer than this (UTF-16 code units) skip the parser and go to the
 * linear pattern tables. Measured here, web-tree-sitter parses ordinary shell
 * text at about 0.6 MB/s including the tree copy (16 KiB: ~30 ms) and dense
 * text such as thousands of `x|x|...` stages ten times slower; 1 MiB would
 * take seconds. The parse also has a work budget (shell/syntax.ts). Scripts past
 * 16 KiB are rare, and the tables round up.
 */
export const PARSE_LIMIT = 16 * 1024;

/** Re-parse levels (bash -c inside eval inside ssh ...) before the text counts as unseen. */
export const MAX_DEPTH = 8;

/** Re-parsed bytes allowed per call: a multiple of the input, so the total work stays linear. */
const reparseBudget = (length: number): number => 2 * length + 16 * 1024;

interface Run {
  syntax: BashSyntax;
  python: PythonSyntax;
  rules: ReadonlyMap<string, Rule>;
  windows: boolean;
  /** The command starts on a terminal (ClassifyOptions.terminal). */
  terminal: boolean;
  budget: { bytes: number };
  /**
   * Bytes the recovery pass over later lines may parse, what they nest
   * included, for the whole call: every such pass at every depth draws on it.
   */
  recovery: { bytes: number };
  /** The tool's stdin, and whether a Python interpreter read it as its program. */
  stdin: { feed: StdinFeed | null; readAsPython: boolean };
}

function scopeAt(run: Run, depth: number): Scope {
  return {
    rules: run.rules,
    windows: run.windows,
    terminal: run.terminal,
    nested: (text, best, part, stdin) => nestedScript(run, depth + 1, text, best, part, stdin),
    nestedWindows: (text, best, part) => {
      if (!spend(run, depth + 1, text, best, part)) return;
      windowsInto(run, depth + 1, text, best);
    },
    nestedPython: (source, best, part, feed) => {
      if (feed !== null && feed === run.stdin.feed) run.stdin.readAsPython = true;
      pythonInto(run, depth + 1, source, best, part);
    },
  };
}

/** Classify a Python program, charged to the same depth and byte budgets as nested shell text. */
function pythonInto(run: Run, depth: number, source: string, best: Best, part: string): void {
  if (best.done || !spend(run, depth, source, best, part)) return;
  pythonProgramInto(
    {
      parse: (text) => (text.length > PARSE_LIMIT ? null : run.python.parse(text)),
      scope: scopeAt(run, depth),
      python: (text, p) => pythonInto(run, depth + 1, text, best, p),
    },
    source,
    best,
  );
}

/** Charge a nested text to the depth and byte budgets; past either, it is unseen (Tier 3). */
function spend(run: Run, depth: number, text: string, best: Best, part: string): boolean {
  if (depth > MAX_DEPTH || run.budget.bytes < text.length) {
    // The recovery pass only adds to what the whole text gave: its budget running out is not "unseen".
    if (depth <= MAX_DEPTH && run.budget === run.recovery) return false;
    best.consider(3, "nesting_limit", part);
    return false;
  }
  run.budget.bytes -= text.length;
  return true;
}

function nestedScript(
  run: Run,
  depth: number,
  text: string,
  best: Best,
  part: string,
  stdin: StdinCtx | null,
): void {
  if (best.done || !spend(run, depth, text, best, part)) return;
  scriptInto(run, depth, text, best, stdin);
}

function fallbackInto(text: string, best: Best): void {
  // The pattern tables can raise a tier; they can never prove a read.
  best.doubt();
  const hit = fallbackClassify(text);
  if (hit !== null) best.consider(hit.tier, "pattern_fallback", hit.part);
}

/** Classify what the parser makes of `text`, with no recovery of its own (the caller's pass is the recovery). */
function parsedInto(run: Run, depth: number, text: string, best: Best): void {
  const tree = run.syntax.parse(text);
  if (tree !== null) classifyUnits(walkScript(tree), scopeAt(run, depth), best, null);
}

/** Suffixes re-parsed because a command was carried over a line break. */
const MAX_GLUED = 4;

/**
 * The grammar is more lenient than bash about newlines: it lets a redirection
 * or a word carry on to the next line (`<⏎rm -rf /`, `ls⏎\\rm -rf /`), where
 * bash ends the command. Where a simple command spans a line start that is
 * not inside a quoted string or a here-doc body, the text before that line
 * and the text from that line on are judged again, each as a script.
 */
function gluedLinesInto(run: Run, depth: number, text: string, script: ParsedScript, best: Best): void {
  const inside = (ranges: [number, number][], at: number) => ranges.some(([s, e]) => s < at && at < e);
  let glued = 0;
  let nl = text.indexOf("\n");
  while (nl >= 0 && nl + 1 < text.length && !best.done) {
    const at = nl + 1;
    if (inside(script.commandRanges, at) && !inside(script.dataRanges, at) && text[nl - 1] !== "\\") {
      // The grammar and bash disagree on where a command ends: not a text to vouch for.
      best.doubt();
      if (glued++ >= MAX_GLUED) {
        piecesInto(text, best, (piece) => parsedInto(run, depth, piece, best));
        return;
      }
      // Judge the text before the break and the text after it, each on its own.
      for (const side of [text.slice(0, at - 1), text.slice(at)]) {
        if (!best.done && spend(run, depth, side, best, side)) scriptInto(run, depth, side, best, null);
      }
    }
    nl = text.indexOf("\n", at);
  }
}

/** Parse and classify one script text; on a parse error the pattern tables run too (parsed parts win ties). */
function scriptInto(
  run: Run,
  depth: number,
  text: string,
  best: Best,
  stdin: StdinCtx | null,
  joined = true,
): void {
  if (text.length > PARSE_LIMIT) {
    fallbackInto(text, best);
    return;
  }
  const plain = plainScript(text);
  if (plain !== null) {
    classifyUnits(plain, scopeAt(run, depth), best, stdin);
    return;
  }
  const tree = run.syntax.parse(text);
  if (tree === null) {
    fallbackInto(text, best);
    return;
  }
  const script = walkScript(tree);
  classifyUnits(script, scopeAt(run, depth), best, stdin);
  if (script.hasError) best.doubt();
  if (script.hasError && !best.done) {
    fallbackInto(text, best);
    piecesInto(text, best, (piece) => parsedInto(run, depth, piece, best));
    const own: Run = { ...run, budget: run.recovery };
    cutPartsInto(text, best, run.recovery, (part) => parsedInto(own, depth, part, best));
  } else if (!best.done && script.commandRanges.length > 0 && text.includes("\n")) {
    gluedLinesInto(run, depth, text, script, best);
  }
  // A backslash-newline joins the next line into the command (`echo x \⏎rm -rf /`): also judge the
  // lines as separate commands, once.
  if (joined && !best.done && /\\\r?\n/.test(text)) {
    scriptInto(run, depth, text.replace(/\\\r?\n/g, "\n"), best, stdin, false);
  }
}

function windowsInto(run: Run, depth: number, text: string, best: Best): void {
  const ctx = {
    nested: (inner: string) => {
      const local = new Best();
      if (spend(run, depth + 1, inner, local, inner)) windowsInto(run, depth + 1, inner, local);
      return local.tier >= 2 ? { tier: local.tier, basis: local.basis } : null;
    },
  };
  let download = false;
  tokenizeWindows(text, (st) => {
    const joined = st.lower.join(" ");
    const upstream: boolean = st.piped && download;
    for (const at of st.commands) {
      const hit = classifyWindowsCommand(st, at, joined, upstream, ctx);
      if (hit !== null) best.consider(hit.tier, hit.basis, st.raw.slice(at, at + 40).join(" "));
    }
    download = upstream || DOWNLOADS.test(joined);
    return best.done;
  });
}

/**
 * Environment values are classified as command text; variables that load code are opaque.
 * A value is data to the proof: only what it raises counts, and a variable that may change what
 * runs (docs/policy.md, "Tier 0") leaves the call unproven.
 */
function envInto(run: Run, values: string[], env: Record<string, unknown>, best: Best): void {
  for (const hook of startupHooks(env)) best.consider(2, "startup_env", hook);
  for (const [name, value] of Object.entries(env)) {
    if (!safeVariable(name, typeof value === "string" ? literalWord(value) : null)) best.doubt();
  }
  for (const v of values) {
    const local = new Best();
    nestedScript(run, 1, v, local, v, null);
    const found = local.result();
    if (found.tier > 1) best.consider(found.tier, found.basis, found.part);
  }
}

/**
 * A local command tool's input, in its parts: the program in its own
 * language, the tool's stdin bound to the standard input of the program's
 * top-level commands, the environment overlay. Stdin that no Python
 * interpreter read as its program is also judged as shell text, as in the
 * joined form, since what reads it is not always visible.
 */
function inputInto(run: Run, input: ProgramInput, best: Best): void {
  const clean = (t: string) => (t.includes("\0") ? t.replaceAll("\0", " ") : t);
  const program = clean(input.program);
  const stdinText = clean(input.stdin);
  if (input.language === "python") {
    // A Python program is read for what it raises, never proven to only read.
    best.doubt();
    pythonInto(run, 0, program, best, program);
  } else {
    const feed: StdinFeed | null = stdinText === "" ? null : { text: stdinText, dynamic: false, subst: [] };
    run.stdin.feed = feed;
    const ctx = feed === null ? null : { piped: false, origin: null, feed, literal: stdinText };
    scriptInto(run, 0, program, best, ctx);
    if (feed !== null && stdinText !== program && !run.stdin.readAsPython && !best.done) {
      // Data to a command that reads it; a program only when a shell reads it, which the program shows.
      const local = new Best();
      nestedScript(run, 1, stdinText, local, stdinText, null);
      const found = local.result();
      if (found.tier > 1) best.consider(found.tier, found.basis, found.part);
    }
  }
  if (input.env === "" || best.done) return;
  const { values, env } = parseEnvOverlay(clean(input.env));
  if (env === null) {
    best.doubt();
    nestedScript(run, 1, clean(input.env), best, input.env, null);
  } else envInto(run, values, env, best);
}

function classifyText(
  syntax: BashSyntax,
  python: PythonSyntax,
  rules: ReadonlyMap<string, Rule>,
  text: string,
  options?: ClassifyOptions,
): Classification {
  const windows = options?.windows === true;
  const run: Run = {
    syntax,
    python,
    rules,
    windows,
    terminal: options?.terminal === true,
    budget: { bytes: reparseBudget(text.length) },
    recovery: { bytes: reparseBudget(text.length) },
    stdin: { feed: null, readAsPython: false },
  };
  const best = new Best();
  if (options?.input !== undefined) {
    loginShell(run, options.input.program, best);
    inputInto(run, options.input, best);
    if (windows && !best.done) windowsInto(run, 0, options.input.program, best);
    return best.result();
  }
  // tree-sitter reads a NUL as the end of input; what follows must not become invisible.
  const { body, values, env } = splitEnvOverlay(text.includes("\0") ? text.replaceAll("\0", " ") : text);
  loginShell(run, body, best);
  scriptInto(run, 0, body, best, null);
  envInto(run, values, env, best);
  if (windows && !best.done) windowsInto(run, 0, text, best);
  return best.result();
}

/** A terminal started with no command is a login shell: everything it will run is typed later. */
function loginShell(run: Run, program: string, best: Best): void {
  if (run.terminal && program.trim() === "")
    best.consider(2, "interactive_program", "a shell (no command given)");
}

/**
 * Last resort when the classifier itself failed: the pattern tables; no pattern
 * is Tier 1, as for any command no table knows. Tier 3 only when the tables fail too.
 */
function safeFallback(text: string): Classification {
  try {
    const hit = fallbackClassify(text);
    return hit === null
      ? { tier: 1, basis: "default", part: "" }
      : { tier: hit.tier, basis: "pattern_fallback", part: toPart(hit.part) };
  } catch {
    // Even the tables failed: unseen input is treated as the highest tier.
    return { tier: 3, basis: "pattern_fallback", part: "" };
  }
}

/** Load the shell grammar once; the returned classifier is synchronous and never throws. */
export async function createClassifier(): Promise<Classifier> {
  const syntax = await loadBashSyntax();
  // Only prepared: the Python grammar is compiled on the first Python program.
  const python = await preparePythonSyntax();
  const rules = buildRuleTable();
  return {
    classify(text: string, options?: ClassifyOptions): Classification {
      try {
        return classifyText(syntax, python, rules, text, options);
      } catch {
        // An internal fault must not decide the tier: degrade to the pattern tables.
        return safeFallback(text);
      }
    },
  };
}
