import { DYNAMIC, type Word } from "../shell/words.js";

/**
 * How a read-only program is proven (ADR 0033). A program is in the table
 * because what it does, in the forms its rule accepts, is to observe: it
 * writes no file, changes no process, service, setting, package, account or
 * remote state, and runs no code it was not shown. The rule lists what turns
 * a form into something else: options that write (`-o FILE`), run code
 * (`-exec`), edit in place (`-i`), and, for programs with subcommands, which
 * subcommands only read. Anything the rule does not know is not proven.
 */
export interface ReadSpec {
  /** Options whose value is the next word (so that value is neither a subcommand nor an operand). */
  valued?: readonly string[];
  /** Short option letters that take a value (the rest of the cluster, or the next word). */
  valuedLetters?: string;
  /**
   * Options that make the command not a read. A long option also matches its
   * `--name=value` form and any abbreviation getopt would accept (`--out` for
   * `--output`); a short option matches anywhere in a cluster.
   */
  deny?: readonly string[];
  /**
   * Subcommands that only read, by the first operand: a nested spec for the
   * rest of the words, or true when every form of it reads. When present, a
   * command without a listed subcommand is not proven (help and version
   * forms aside).
   */
  subs?: Readonly<Record<string, ReadSpec | true>>;
  /** Whether a command without any subcommand reads (`git` alone prints help). Default true. */
  bare?: boolean;
  /**
   * Options are whole words with one dash (`-noout`, `-delete`, `-brief`), not clusters of letters:
   * `deny` then matches a word exactly.
   */
  words?: boolean;
  /**
   * The program sends what it reads on stdin somewhere (`openssl s_client` to the server): it is a
   * read only when nothing arrives on its stdin.
   */
  sendsStdin?: boolean;
  /** A last check on the arguments (an awk program, a sed script, sysctl without `=`). */
  check?: (args: readonly Word[]) => boolean;
}

/** What a table entry is: a spec, or true for a program no option turns into a write. */
export type ReadEntry = ReadSpec | true;

const HELP_WORDS = new Set(["--help", "--version", "-help", "--usage", "-?"]);
const HELP_SUBCOMMANDS = new Set(["help", "version", "--help", "--version"]);

/** A word whose value is only known at run time at its start, or a glob that could expand to an option. */
function couldBeOption(w: Word): boolean {
  if (w.dynamic && w.value.startsWith(DYNAMIC)) return true;
  return w.glob && /^[*?[{]/.test(w.value);
}

/** The long option name of `--name=value`, lower-cased. */
function longName(v: string): string {
  const eq = v.indexOf("=");
  return eq < 0 ? v : v.slice(0, eq);
}

function denied(spec: ReadSpec, v: string): boolean {
  const deny = spec.deny;
  if (deny === undefined || deny.length === 0) return false;
  if (v.startsWith("--")) {
    const name = longName(v);
    if (name.length <= 2) return false;
    if (deny.includes(name)) return true;
    // An option the rule knows by its full name is that option, not an abbreviation.
    if (spec.valued?.includes(name)) return false;
    // getopt_long accepts any unambiguous prefix: a prefix of a denied name may be that name.
    return deny.some((d) => d.startsWith("--") && d.startsWith(name));
  }
  if (v.startsWith("-") && v.length > 1) {
    if (deny.includes(v) || deny.includes(longName(v))) return true;
    if (spec.words === true) return false;
    // A cluster: each letter until one that takes a value.
    const letters = spec.valuedLetters ?? "";
    for (let k = 1; k < v.length; k++) {
      const ch = v[k]!;
      if (!/[A-Za-z0-9]/.test(ch)) break;
      if (deny.includes(`-${ch}`)) return true;
      if (letters.includes(ch)) break;
    }
  }
  return false;
}

/** Whether this option word takes the next word as its value. */
function takesValue(spec: ReadSpec, v: string): boolean {
  if (spec.valued?.includes(v)) return true;
  if (v.startsWith("--") || !v.startsWith("-") || v.length < 2) return false;
  const letters = spec.valuedLetters ?? "";
  if (letters === "") return false;
  // The value is the next word when the valued letter ends the cluster (`-n 5`, `-rn 5`).
  for (let k = 1; k < v.length; k++) {
    if (letters.includes(v[k]!)) return k === v.length - 1;
  }
  return false;
}

function merged(parent: ReadSpec, child: ReadSpec): ReadSpec {
  return {
    ...child,
    valued: [...(parent.valued ?? []), ...(child.valued ?? [])],
    valuedLetters: (parent.valuedLetters ?? "") + (child.valuedLetters ?? ""),
    words: parent.words === true || child.words === true,
    deny: [...(parent.deny ?? []), ...(child.deny ?? [])],
  };
}

/**
 * True when a help or version request decides what the program does (it prints and exits): the
 * request comes first. After other words it counts only behind a plain subcommand path (see
 * `helpTail` in prove.ts); after an option or an operand, some parsers would act first.
 */
export function isHelpForm(args: readonly Word[]): boolean {
  const first = args[0];
  return first !== undefined && HELP_WORDS.has(first.value);
}

/**
 * Whether `args` satisfy `entry`: every option is allowed, the subcommand (if
 * the program has them) only reads, and the last check passes. When some
 * option of the program can write or run code, a word that may expand to an
 * option at run time (`$x`, `*`) is not allowed either.
 */
export function satisfies(entry: ReadEntry, args: readonly Word[], stdinEmpty: boolean): boolean {
  if (entry === true) return true;
  return specHolds(entry, args, 0, stdinEmpty);
}

function specHolds(spec: ReadSpec, args: readonly Word[], depth: number, stdinEmpty: boolean): boolean {
  if (spec.sendsStdin === true && !stdinEmpty) return false;
  const risky = (spec.deny?.length ?? 0) > 0 || spec.check !== undefined || spec.subs !== undefined;
  let options = true;
  for (let i = 0; i < args.length; i++) {
    const w = args[i]!;
    const v = w.value;
    if (options && couldBeOption(w)) {
      if (risky) return false;
      continue;
    }
    if (options && v === "--") {
      options = false;
      continue;
    }
    if (options && v.startsWith("-") && v.length > 1) {
      if (denied(spec, v)) return false;
      if (takesValue(spec, v)) i++;
      continue;
    }
    // An operand: the subcommand, when the program has them.
    if (spec.subs !== undefined) return subHolds(spec, args, i, depth, stdinEmpty);
  }
  if (spec.subs !== undefined && spec.bare === false) return false;
  return spec.check?.(args) ?? true;
}

function subHolds(
  spec: ReadSpec,
  args: readonly Word[],
  at: number,
  depth: number,
  stdinEmpty: boolean,
): boolean {
  const word = args[at];
  if (word === undefined) return spec.bare !== false;
  if (word.dynamic || word.glob) return false;
  // Only the table's own keys: `git constructor` must not find Object.prototype's.
  const sub =
    spec.subs !== undefined && Object.hasOwn(spec.subs, word.value) ? spec.subs[word.value] : undefined;
  if (HELP_SUBCOMMANDS.has(word.value) && sub === undefined) return true;
  if (sub === undefined || depth > 4) return false;
  const rest = args.slice(at + 1);
  // The options seen before the subcommand were the parent's; after it, both apply.
  const { subs: _parentSubs, check: _parentCheck, bare: _bare, ...inherited } = spec;
  if (sub === true) return specHolds({ ...inherited }, rest, depth + 1, stdinEmpty);
  return specHolds(merged(inherited, sub), rest, depth + 1, stdinEmpty);
}
