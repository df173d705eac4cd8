import type { Best } from "../best.js";
import type { PythonHost } from "../python/actions.js";
import { classifyPython } from "../python/classify.js";
import { redirectHit } from "../rules/redirects.js";
import { flatScript, plainUnit, type Unit } from "../shell/script.js";
import type { SyntaxTree } from "../shell/syntax.js";
import { literalWord, type Word } from "../shell/words.js";
import { argvHit } from "./commands.js";
import { type ArgvCtx, type Scope, scriptWord } from "./context.js";
import { ScriptIndex } from "./script-index.js";

/**
 * Connects the Python classifier to the shell side: a command line a Python
 * program runs goes through the shell classifier, and a deletion, write or
 * permission change is judged as the shell command that does the same, with
 * the same rule tables.
 */

export interface PythonRun {
  /** Parse a Python program; null when it is too large or the parse gave up. */
  parse(source: string): SyntaxTree | null;
  /** The shell scope one level below the program (depth and byte budgets). */
  scope: Scope;
  /** Classify Python source the program runs (exec of a literal), one level deeper. */
  python(source: string, part: string): void;
}

const EMPTY_INDEX = new ScriptIndex(flatScript([]));

/** The unit a Python write is judged as: a command that writes something (never an emptying `: >`). */
function writerUnit(part: string): Unit {
  return plainUnit([literalWord("python3")], part);
}

export function pythonInto(run: PythonRun, source: string, best: Best): void {
  const ctx = (part: string): ArgvCtx => ({
    scope: run.scope,
    index: EMPTY_INDEX,
    stdin: null,
    best,
    part,
  });
  const host: PythonHost = {
    best,
    shell: (command: Word, part: string) => scriptWord(command, ctx(part), null),
    argv: (words: Word[], part: string) => argvHit(words, ctx(part), 0),
    write: (op, target, part) => {
      const h = redirectHit({ op, fd: null, target, text: part }, writerUnit(part));
      if (h !== null) best.consider(h.tier, h.basis, part);
    },
    python: (text, part) => run.python(text, part),
  };
  classifyPython(run.parse(source), source, host);
}
