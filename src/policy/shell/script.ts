import type { Word } from "./words.js";

/** A redirection of one simple command (or of a compound statement, then on a unit without words). */
export interface Redirect {
  /** `>`, `>>`, `>|`, `&>`, `&>>`, `<>`, `<`, `>&`, `<&`, `<<`, `<<-`, `<<<` */
  op: string;
  fd: string | null;
  target: Word | null;
  text: string;
}

/** Text a command reads on its standard input from a here-doc or here-string. */
export interface StdinFeed {
  text: string;
  /** The text contains expansions or substitutions (an unquoted here-doc delimiter). */
  dynamic: boolean;
  subst: number[];
}

export interface PipeRef {
  id: number;
  stage: number;
}

/** One simple command (or a bare redirection) found anywhere in a script. */
export interface Unit {
  /** argv: the command name and its arguments, after quote removal. Empty for a bare redirection. */
  words: Word[];
  assigns: { name: string; value: Word }[];
  redirects: Redirect[];
  stdin: StdinFeed | null;
  /** Source text of the command, for `part`. */
  text: string;
  /** Pipeline membership: stage 0 is the producer, later stages read what earlier ones write. */
  pipe: PipeRef | null;
  /** Id of the innermost command/process substitution holding this command; -1 at top level. */
  container: number;
  /** Name of the enclosing function definition, if any. */
  fn: string | null;
}

export interface FunctionDef {
  name: string;
  text: string;
}

export interface ParsedScript {
  units: Unit[];
  functions: FunctionDef[];
  /** `parents[id]` is the container in which substitution `id` appeared (-1 at top level). */
  parents: number[];
  hasError: boolean;
  /** Source ranges [start, end) of quoted strings and here-doc bodies: text that is data, not code. */
  dataRanges: [number, number][];
  /** Source ranges [start, end) of simple commands, to spot one the grammar carried over a line break. */
  commandRanges: [number, number][];
  /** Assignments that are statements of their own (`PATH=/x`), in force for the commands after them. */
  assigns: { name: string; value: Word }[];
  /**
   * An arithmetic expansion or command holds a name or an expansion (`$((x+1))`, `$(($n))`,
   * `((reboot))`): bash evaluates a variable's value again as arithmetic, where `a[$(cmd)]` runs
   * cmd, and a login shell such as fish runs `(reboot)` as a command.
   */
  arithmeticNames: boolean;
}

/** A top-level command with no redirections, pipe or stdin: what a plain line or a program's call amounts to. */
export function plainUnit(words: Word[], text: string, assigns: Unit["assigns"] = []): Unit {
  return { words, assigns, redirects: [], stdin: null, text, pipe: null, container: -1, fn: null };
}

/** A script of top-level units only, without functions, substitutions or errors. */
export function flatScript(units: Unit[]): ParsedScript {
  return {
    units,
    functions: [],
    parents: [],
    hasError: false,
    dataRanges: [],
    commandRanges: [],
    assigns: [],
    arithmeticNames: false,
  };
}
