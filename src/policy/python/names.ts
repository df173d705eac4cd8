import type { SyntaxNode } from "../shell/syntax.js";
import { dynamicWord, literalWord, type Word } from "../shell/words.js";
import { BUILTINS, DANGEROUS_MODULES, NETWORK_MODULES, PY_CALLS } from "./rules.js";
import { joinPath, LOCAL, PythonSource } from "./source.js";

/** A resolved reference: a qualified name, and the literal path of a path object. */
export interface Ref {
  name: string;
  path?: Word;
}

export const UNKNOWN = "?";
/** Nesting followed when resolving one expression (attribute chains, calls, aliases). */
const MAX_DEPTH = 48;
/** Distinct meanings kept per name. */
const MAX_REFS = 16;
/** Rounds of the name table's fixpoint: alias chains longer than this stay unknown. */
const MAX_ROUNDS = 8;

/** Modules that other modules import and so expose as attributes. */
const REEXPORTED = new Set([...DANGEROUS_MODULES, ...NETWORK_MODULES, "io", "codecs", "sys", "asyncio"]);
export const PATH_OBJECT = "pathlib.Path()";

const PATH_CLASSES = new Set([
  "pathlib.Path",
  "pathlib.PurePath",
  "pathlib.PosixPath",
  "pathlib.PurePosixPath",
  "pathlib.WindowsPath",
]);

/**
 * What the names of a Python program stand for: imports, assignments, star
 * imports and builtins, resolved to qualified names (`o.system` after
 * `import os as o` is `os.system`) and path objects to their literal paths.
 * The judgement of calls builds on this (classify.ts).
 */
export class PythonNames extends PythonSource {
  /** Meaning of each bound name, built on first use. */
  private table: Map<string, Ref[]> | null = null;

  /** What a name stands for: its imports, what was assigned to it, a builtin, or a star import. */
  protected resolveName(name: string): Ref[] {
    const table = this.table ?? this.buildTable();
    const bound = table.get(name);
    if (bound !== undefined) return bound;
    // While the table is built, a bound name not reached yet stands for nothing so far.
    if (this.hasBindings(name)) return [];
    if (this.stars.length > 0 && (!BUILTINS.has(name) || name === "open"))
      return this.stars.map((m) => ({ name: `${m}.${name}` }));
    if (BUILTINS.has(name)) return [{ name: `builtins.${name}` }];
    return [{ name: `<free>.${name}` }];
  }

  private hasBindings(name: string): boolean {
    return this.imports.has(name) || this.assigns.has(name) || this.locals.has(name);
  }

  /**
   * The meaning of every bound name, as a fixpoint: each round resolves every
   * binding with the meanings found so far, until nothing changes. Cycles
   * (`a = b; b = a`) and self-reference (`x = x + 1`) settle instead of
   * recursing, and the cost stays linear in the program per round.
   */
  private buildTable(): Map<string, Ref[]> {
    const table = new Map<string, Ref[]>();
    this.table = table;
    // Bindings were collected last statement first; source order settles a forward chain in one round.
    const names = [...new Set([...this.imports.keys(), ...this.assigns.keys(), ...this.locals])].reverse();
    let changed = true;
    for (let round = 0; round < MAX_ROUNDS && changed; round++) {
      changed = false;
      for (const name of names) {
        const refs = this.bindingsOf(name);
        const before = table.get(name);
        if (
          before === undefined ||
          before.length !== refs.length ||
          before.some((r, k) => r.name !== refs[k]!.name)
        ) {
          table.set(name, refs);
          changed = true;
        }
      }
    }
    for (const [name, refs] of table) {
      // Not settled: any name may still gain a meaning, so each may also be something unknown.
      if (refs.length === 0 || changed) table.set(name, [...refs, { name: UNKNOWN }]);
    }
    return table;
  }

  private bindingsOf(name: string): Ref[] {
    const out: Ref[] = [];
    for (const q of this.imports.get(name) ?? []) out.push({ name: q });
    for (const value of this.assigns.get(name) ?? []) {
      out.push(...this.resolve(value, 0));
      if (out.length > MAX_REFS) break;
    }
    if (this.locals.has(name)) out.push({ name: LOCAL });
    // A star import may rebind any name, a local one or a builtin (`from os import *` replaces `open`),
    // depending on the order at run time: both count.
    if (!BUILTINS.has(name) || name === "open")
      for (const m of this.stars) out.push({ name: `${m}.${name}` });
    const unique = [...new Map(out.map((r) => [r.name, r])).values()];
    unique.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return unique.slice(0, MAX_REFS);
  }

  /** Resolve an expression to what it refers to. */
  resolve(node: SyntaxNode, depth: number): Ref[] {
    if (depth > MAX_DEPTH) return [{ name: UNKNOWN }];
    switch (node.type) {
      case "identifier":
        return this.resolveName(this.text(node));
      case "parenthesized_expression": {
        const inner = this.named(node)[0];
        return inner === undefined ? [{ name: UNKNOWN }] : this.resolve(inner, depth + 1);
      }
      case "attribute": {
        const object = this.field(node, "object");
        const attr = this.field(node, "attribute");
        if (object === undefined || attr === undefined) return [{ name: UNKNOWN }];
        const name = this.text(attr);
        return this.resolve(object, depth + 1).map((r) => ({
          name: r.name === LOCAL || r.name.startsWith("<free>") ? `${UNKNOWN}.${name}` : `${r.name}.${name}`,
          ...(r.path !== undefined ? { path: r.path } : {}),
        }));
      }
      case "call": {
        const fn = this.field(node, "function");
        if (fn === undefined) return [{ name: UNKNOWN }];
        const refs = this.resolve(fn, depth + 1);
        const out: Ref[] = [];
        for (const r of refs) {
          const action = PY_CALLS.get(r.name);
          if (action === "import") {
            const arg = this.positional(node)[0];
            const value = arg === undefined ? null : this.stringValue(arg, 0);
            out.push({ name: value === null || value.dynamic ? UNKNOWN : value.value });
          } else if (action === "getattr") {
            const [object, attr] = this.positional(node);
            const value = attr === undefined ? null : this.stringValue(attr, 0);
            if (object === undefined || value === null || value.dynamic) out.push({ name: UNKNOWN });
            else
              for (const o of this.resolve(object, depth + 1)) out.push({ name: `${o.name}.${value.value}` });
          } else if (PATH_CLASSES.has(r.name) || r.name === `${PATH_OBJECT}.resolve`) {
            out.push({ name: PATH_OBJECT, path: this.pathOf(node, r) });
          } else {
            out.push({ name: UNKNOWN });
          }
        }
        return out;
      }
      case "binary_operator": {
        // `Path("/srv") / "data"` is still a path.
        const left = this.field(node, "left");
        if (left !== undefined && this.resolve(left, depth + 1).some((r) => r.name === PATH_OBJECT)) {
          const right = this.field(node, "right");
          const l = this.resolve(left, depth + 1).find((r) => r.name === PATH_OBJECT)?.path;
          const r = right === undefined ? null : this.stringValue(right, 0);
          const joined =
            l === undefined ? dynamicWord(this.text(node)) : joinPath(l, r ?? dynamicWord(this.text(node)));
          return [{ name: PATH_OBJECT, path: joined }];
        }
        return [{ name: UNKNOWN }];
      }
      default:
        return [{ name: UNKNOWN }];
    }
  }

  protected pathOf(call: SyntaxNode, ref: Ref): Word {
    if (ref.path !== undefined) return ref.path;
    const parts = this.positional(call);
    if (parts.length === 0) return literalWord(".");
    let out: Word | null = null;
    for (const p of parts) {
      const v = this.stringValue(p, 0) ?? dynamicWord(this.text(p));
      out = out === null ? v : joinPath(out, v);
    }
    return out!;
  }
}

/**
 * A module reached through another one (`os.path.os.system`, `shutil.os.remove`,
 * `tempfile.shutil.rmtree`) is that module: judge the name from its last
 * dangerous component on.
 */
export function reexported(ref: Ref): Ref {
  const parts = ref.name.split(".");
  for (let i = parts.length - 2; i > 0; i--) {
    if (REEXPORTED.has(parts[i]!)) return { ...ref, name: parts.slice(i).join(".") };
  }
  return ref;
}
