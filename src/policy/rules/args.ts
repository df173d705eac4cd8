import type { Tier } from "../../core/index.js";
import { DYNAMIC, type Word } from "../shell/words.js";
import type { Basis } from "../types.js";

export interface Hit {
  tier: Tier;
  basis: Basis;
}

export function hit(tier: Tier, basis: Basis): Hit {
  return { tier, basis };
}

/** What a rule sees besides the arguments. */
export interface RuleInput {
  /** Lower-cased base name of the command (`/usr/bin/RM` → `rm`). */
  name: string;
  /** The name as written, after quote removal (for paths such as `/etc/init.d/ssh`). */
  path: string;
  args: Args;
  /** Literal text the command reads on stdin (here-doc, here-string, or echoed into a pipe), if known. */
  stdin: string | null;
}

export type Rule = (input: RuleInput) => Hit | null;

/** Read-only view of a command's arguments with the option helpers every rule needs. */
export class Args {
  readonly words: readonly Word[];
  readonly values: readonly string[];
  /** Index of `--` (end of options), or the length when absent. */
  readonly optionEnd: number;

  constructor(words: readonly Word[]) {
    this.words = words;
    this.values = words.map((w) => w.value);
    const dd = this.values.indexOf("--");
    this.optionEnd = dd < 0 ? this.values.length : dd;
  }

  get length(): number {
    return this.values.length;
  }

  at(i: number): string | undefined {
    return this.values[i];
  }

  lower(i: number): string | undefined {
    return this.values[i]?.toLowerCase();
  }

  from(i: number): Args {
    return new Args(this.words.slice(i));
  }

  /** Any exact (case-sensitive) literal among the arguments. */
  has(...values: string[]): boolean {
    return this.values.some((v) => values.includes(v));
  }

  hasLower(...values: string[]): boolean {
    return this.values.some((v) => values.includes(v.toLowerCase()));
  }

  /** Short-option clusters (`-rf`, `-vR`) before `--`. */
  clusters(): string[] {
    const out: string[] = [];
    for (let i = 0; i < this.optionEnd; i++) {
      const v = this.values[i]!;
      if (v.length > 1 && v[0] === "-" && v[1] !== "-") out.push(v.slice(1));
    }
    return out;
  }

  /** A short option letter appears in some cluster before `--` (exact case). */
  short(letters: string): boolean {
    return this.clusters().some((c) => [...letters].some((l) => c.includes(l)));
  }

  /** Long options before `--`, without the leading dashes and any `=value`. */
  longs(): string[] {
    const out: string[] = [];
    for (let i = 0; i < this.optionEnd; i++) {
      const v = this.values[i]!;
      if (v.startsWith("--") && v.length > 2) out.push(v.slice(2).split("=", 1)[0]!.toLowerCase());
    }
    return out;
  }

  /** A long option given in full or as an unambiguous GNU abbreviation of at least `min` letters. */
  long(name: string, min = name.length): boolean {
    return this.longs().some((l) => l.length >= min && name.startsWith(l));
  }

  /** The value of `--opt=value` or `--opt value` / `-o value`. */
  optionValue(...names: string[]): string | undefined {
    for (let i = 0; i < this.optionEnd; i++) {
      const v = this.values[i]!;
      for (const n of names) {
        if (v === n) return this.values[i + 1];
        if (n.startsWith("--") && v.startsWith(`${n}=`)) return v.slice(n.length + 1);
        if (!n.startsWith("--") && v.startsWith(n) && v.length > n.length) return v.slice(n.length);
      }
    }
    return undefined;
  }

  /** Arguments that are not options (after `--` everything is an operand). */
  operands(): string[] {
    return this.values.filter((v, i) => i > this.optionEnd || !(v.startsWith("-") && v.length > 1));
  }

  /** Some argument before `--` is only known at run time, so it may turn out to be an option. */
  dynamicOption(): boolean {
    for (let i = 0; i < this.optionEnd; i++) {
      const w = this.words[i]!;
      if (w.dynamic && (w.value.startsWith(DYNAMIC) || w.value.startsWith("-"))) return true;
    }
    return false;
  }

  anyDynamic(): boolean {
    return this.words.some((w) => w.dynamic);
  }

  /** The first argument that is not an option, skipping the values of the named options. */
  subcommand(valued: ReadonlySet<string> = NONE): { index: number; value: string } | null {
    for (let i = 0; i < this.values.length; i++) {
      const v = this.values[i]!;
      if (v === "--")
        return this.values[i + 1] === undefined ? null : { index: i + 1, value: this.values[i + 1]! };
      if (v.startsWith("-") && v.length > 1) {
        if (valued.has(v)) i++;
        continue;
      }
      return { index: i, value: v };
    }
    return null;
  }
}

const NONE: ReadonlySet<string> = new Set();

/** Build a rule table from `name → rule` pairs, one rule under several names. */
export function table(entries: [string | string[], Rule][]): Map<string, Rule> {
  const map = new Map<string, Rule>();
  for (const [names, rule] of entries) {
    for (const n of Array.isArray(names) ? names : [names]) map.set(n, rule);
  }
  return map;
}

/** A rule that gives the same hit whatever the arguments. */
export function always(tier: Tier, basis: Basis): Rule {
  const h = hit(tier, basis);
  return () => h;
}
