import type { Best } from "../best.js";
import type { Rule } from "../rules/index.js";
import type { StdinFeed } from "../shell/script.js";
import { DYNAMIC, type Word } from "../shell/words.js";
import type { Basis } from "../types.js";
import type { Origin, ScriptIndex } from "./script-index.js";

/**
 * What one argv is classified in, and the way into a script string it
 * carries. The command engine (commands.ts), the opaque-execution rules
 * (opaque-rules.ts) and the Python host (python-host.ts) all build on this
 * module, so none of them imports another for it; the engine hands its own
 * entry for an argv to the opaque rules (`ArgvClassifier`) instead of being
 * imported by them, which keeps the three free of an import cycle.
 */

/** What a command reads on stdin. */
export interface StdinCtx {
  /** Earlier stages of a pipeline write to this command's stdin. */
  piped: boolean;
  /** Where the upstream output comes from (a downloader or decoder), if known. */
  origin: Origin | null;
  feed: StdinFeed | null;
  /** Literal text known to arrive on stdin (echoed into the pipe, or a here-doc). */
  literal: string | null;
}

/**
 * The classifier's recursion context at one nesting level: the rule tables,
 * whether the Windows rules apply, and the way one level deeper (charged to
 * the depth and byte budgets).
 */
export interface Scope {
  rules: ReadonlyMap<string, Rule>;
  windows: boolean;
  /** The command starts on a terminal: a program that reads commands from it is interactive. */
  terminal: boolean;
  /** Parse `text` as a script one level deeper and add its findings to `best`. */
  nested(text: string, best: Best, part: string, stdin: StdinCtx | null): void;
  /** Classify PowerShell/cmd text one level deeper. */
  nestedWindows(text: string, best: Best, part: string): void;
  /**
   * Classify a Python program one level deeper. `feed` is the stdin it was
   * read from, when the program arrived on a command's standard input.
   */
  nestedPython(source: string, best: Best, part: string, feed: StdinFeed | null): void;
}

/** The argv at hand: where it sits in the script, what it reads, and where its findings go. */
export interface ArgvCtx {
  scope: Scope;
  index: ScriptIndex;
  stdin: StdinCtx | null;
  best: Best;
  part: string;
}

export function originBasis(origin: Origin | null, fallback: Basis): Basis {
  return origin ?? fallback;
}

/** A script string (-c, eval, su -c ...): parsed again, or opaque when it is only known at run time. */
export function scriptWord(word: Word, c: ArgvCtx, stdin: StdinCtx | null): void {
  if (word.dynamic) {
    const origin = c.index.originOfSubst(word.subst);
    if (origin !== null || word.value.trim() === DYNAMIC) {
      c.best.consider(3, originBasis(origin, "dynamic_command"), c.part);
      if (c.best.done) return;
    }
    // Keep the literal skeleton visible: each unknown stretch becomes an expansion.
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
    c.scope.nested(word.value.replaceAll(DYNAMIC, "${__relay_unknown__}"), c.best, c.part, stdin);
    return;
  }
  c.scope.nested(word.value, c.best, c.part, stdin);
}

/**
 * Classifies one argv `unwraps` wrappers deep (the engine's `argvHit`), for a
 * command that runs another argv it names (`python3 -m MODULE ARGS`).
 */
export type ArgvClassifier = (words: Word[], c: ArgvCtx, unwraps: number) => void;
