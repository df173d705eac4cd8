import type { SyntaxNode, SyntaxTree } from "../shell/syntax.js";
import { DYNAMIC, dynamicWord, literalWord, type Word } from "../shell/words.js";

/**
 * A Python program's syntax tree with what can be known without running it:
 * the names it binds (imports, assignments, definitions, loop and `with`
 * targets) and the value of string and list expressions, with DYNAMIC
 * standing for each stretch only known at run time.
 */

/** A name bound by the program itself (a def, a parameter, a relative import). */
export const LOCAL = "<local>";
/** How far aliases and assigned values are followed (`a = b; b = os.system`). */
const MAX_RESOLVE = 8;

export class PythonSource {
  protected readonly tree: SyntaxTree;
  /** name → qualified names it was imported as. */
  protected readonly imports = new Map<string, string[]>();
  /** name → expressions assigned to it. */
  protected readonly assigns = new Map<string, SyntaxNode[]>();
  /** Names bound some other way (def, class, parameters, loop targets ...). */
  protected readonly locals = new Set<string>();
  /** Modules star-imported (`from os import *`). */
  protected readonly stars: string[] = [];
  /** Modules imported, by any spelling (import, from, __import__ of a literal). */
  readonly modules = new Set<string>();

  constructor(tree: SyntaxTree) {
    this.tree = tree;
  }

  text(node: SyntaxNode): string {
    const t = this.tree.source.slice(node.start, node.end);
    // Python reads identifiers in NFKC form: `ｏｓ` is `os`.
    if ((node.type === "identifier" || node.type === "dotted_name") && /[^ -~\t\n\r]/.test(t))
      return t.normalize("NFKC");
    return t;
  }

  protected field(node: SyntaxNode, name: string): SyntaxNode | undefined {
    return node.children.find((c) => c.field === name);
  }

  protected named(node: SyntaxNode): SyntaxNode[] {
    return node.children.filter((c) => c.named && c.type !== "comment");
  }

  protected addImport(name: string, qualified: string): void {
    const list = this.imports.get(name);
    if (list === undefined) this.imports.set(name, [qualified]);
    else list.push(qualified);
    this.modules.add(qualified.split(".")[0]!);
  }

  /** `name as alias`: the alias stands for `prefix` and the imported name. */
  protected addAliasedImport(node: SyntaxNode, prefix: string): void {
    const full = this.field(node, "name");
    const alias = this.field(node, "alias");
    if (full !== undefined && alias !== undefined)
      this.addImport(this.text(alias), `${prefix}${this.text(full)}`);
  }

  /** Every name a target binds (`a`, `a, b`, `(a, [b, *c])`), as locals. */
  protected bindTargets(node: SyntaxNode): void {
    const stack = [node];
    while (stack.length > 0) {
      const n = stack.pop()!;
      if (n.type === "identifier") this.locals.add(this.text(n));
      else if (n.type !== "attribute" && n.type !== "subscript") stack.push(...n.children);
    }
  }

  /** Pass 1: imports, assignments and other bindings, anywhere in the program. */
  collect(): void {
    const stack = [this.tree.root];
    while (stack.length > 0) {
      const node = stack.pop()!;
      switch (node.type) {
        case "import_statement":
          for (const c of node.children) {
            if (c.field !== "name") continue;
            if (c.type === "aliased_import") {
              this.addAliasedImport(c, "");
            } else {
              const full = this.text(c).replace(/\s+/g, "");
              this.addImport(full.split(".")[0]!, full.split(".")[0]!);
              this.modules.add(full.split(".")[0]!);
            }
          }
          continue;
        case "import_from_statement": {
          const mod = this.field(node, "module_name");
          const from = mod === undefined ? "" : this.text(mod).replace(/\s+/g, "");
          const base = from.startsWith(".") ? LOCAL : from;
          for (const c of node.children) {
            if (c.type === "wildcard_import") this.stars.push(base);
            if (c.field !== "name") continue;
            if (c.type === "aliased_import") {
              this.addAliasedImport(c, `${base}.`);
            } else {
              this.addImport(this.text(c), `${base}.${this.text(c)}`);
            }
          }
          if (base !== LOCAL) this.modules.add(base.split(".")[0]!);
          continue;
        }
        case "assignment":
        case "named_expression":
        case "augmented_assignment": {
          const left = this.field(node, node.type === "named_expression" ? "name" : "left");
          const right = this.field(node, node.type === "named_expression" ? "value" : "right");
          if (left?.type === "identifier" && right !== undefined && node.type !== "augmented_assignment") {
            const name = this.text(left);
            const list = this.assigns.get(name);
            if (list === undefined) this.assigns.set(name, [right]);
            else list.push(right);
          } else if (left !== undefined) {
            this.bindTargets(left);
          }
          break;
        }
        case "function_definition":
        case "class_definition": {
          const name = this.field(node, "name");
          if (name !== undefined) this.locals.add(this.text(name));
          break;
        }
        case "parameters":
        case "lambda_parameters":
          for (const p of node.children) {
            const id = p.type === "identifier" ? p : this.field(p, "name");
            if (id !== undefined) this.bindTargets(id);
            else this.bindTargets(p);
          }
          break;
        case "for_statement":
        case "for_in_clause": {
          const left = this.field(node, "left");
          if (left !== undefined) this.bindTargets(left);
          break;
        }
        case "as_pattern_target":
        case "global_statement":
        case "nonlocal_statement":
          this.bindTargets(node);
          break;
        case "call":
          this.collectDynamicImport(node);
          break;
      }
      stack.push(...node.children);
    }
  }

  /** `__import__("os")` and `importlib.import_module("os")` count as imports of `os`. */
  protected collectDynamicImport(call: SyntaxNode): void {
    const fn = this.field(call, "function");
    if (fn === undefined) return;
    const t = this.text(fn);
    if (t !== "__import__" && !t.endsWith("import_module")) return;
    const arg = this.positional(call)[0];
    const value = arg === undefined ? null : this.stringValue(arg, 0);
    if (value !== null && !value.dynamic) this.modules.add(value.value.split(".")[0]!);
  }

  protected positional(call: SyntaxNode): SyntaxNode[] {
    const args = this.field(call, "arguments");
    if (args === undefined || args.type !== "argument_list") return args === undefined ? [] : [args];
    return this.named(args).filter((a) => a.type !== "keyword_argument");
  }

  protected keyword(call: SyntaxNode, name: string): SyntaxNode | undefined {
    const args = this.field(call, "arguments");
    if (args === undefined) return undefined;
    for (const a of args.children) {
      if (a.type !== "keyword_argument") continue;
      const n = this.field(a, "name");
      if (n !== undefined && this.text(n) === name) return this.field(a, "value");
    }
    return undefined;
  }

  protected arg(call: SyntaxNode, index: number, name: string): SyntaxNode | undefined {
    return this.positional(call)[index] ?? this.keyword(call, name);
  }

  protected hasSplat(call: SyntaxNode): boolean {
    const args = this.field(call, "arguments");
    return args?.children.some((a) => a.type === "list_splat" || a.type === "dictionary_splat") ?? false;
  }

  /** What a name stands for: its imports, what was assigned to it, a builtin, or a star import. */
  stringValue(node: SyntaxNode, depth: number): Word | null {
    if (depth > MAX_RESOLVE) return null;
    const text = this.text(node);
    switch (node.type) {
      case "string":
        return this.stringLiteral(node);
      case "concatenated_string": {
        let out = "";
        for (const c of this.named(node)) out += this.stringLiteral(c)?.value ?? DYNAMIC;
        return wordOf(out, text);
      }
      case "parenthesized_expression": {
        const inner = this.named(node)[0];
        return inner === undefined ? null : this.stringValue(inner, depth + 1);
      }
      case "binary_operator": {
        const left = this.field(node, "left");
        const right = this.field(node, "right");
        const op = node.children.find((c) => c.field === "operator");
        const l = left === undefined ? null : this.stringValue(left, depth + 1);
        if (op !== undefined && this.text(op) === "%" && l !== null)
          return wordOf(l.value.replace(/%[-#0 +]*\d*(?:\.\d+)?[sdrifx]/g, DYNAMIC), text);
        if (op === undefined || this.text(op) !== "+") return null;
        const r = right === undefined ? null : this.stringValue(right, depth + 1);
        if (l === null && r === null) return null;
        return wordOf((l?.value ?? DYNAMIC) + (r?.value ?? DYNAMIC), text);
      }
      case "call": {
        // "...".format(x), " ".join([...])
        const fn = this.field(node, "function");
        if (fn?.type !== "attribute") return null;
        const object = this.field(fn, "object");
        const method = this.field(fn, "attribute");
        const base = object === undefined ? null : this.stringValue(object, depth + 1);
        if (base === null || method === undefined) return null;
        const m = this.text(method);
        if (m === "format") return wordOf(base.value.replace(/\{[^{}]*\}/g, DYNAMIC), text);
        if (m === "join") {
          const list = this.positional(node)[0];
          const items = list === undefined ? null : this.listValue(list, depth + 1);
          return items === null
            ? wordOf(DYNAMIC, text)
            : wordOf(items.map((w) => w.value).join(base.value), text);
        }
        if (m === "strip" || m === "lower" || m === "upper" || m === "encode" || m === "decode") return base;
        return null;
      }
      case "identifier": {
        const values = this.assigns.get(text);
        if (values === undefined || values.length !== 1 || this.imports.has(text)) return null;
        return this.stringValue(values[0]!, depth + 1);
      }
      default:
        return null;
    }
  }

  protected stringLiteral(node: SyntaxNode): Word | null {
    if (node.type !== "string") return null;
    const start = node.children.find((c) => c.type === "string_start");
    const raw = start !== undefined && /r/i.test(this.text(start));
    let out = "";
    for (const c of node.children) {
      if (c.type === "string_content") out += this.contentText(c, raw);
      else if (c.type === "escape_sequence") out += raw ? this.text(c) : decodeEscape(this.text(c));
      else if (c.type === "interpolation") out += DYNAMIC;
    }
    return wordOf(out, this.text(node));
  }

  /** string_content may itself hold escape sequences and interpolations as children. */
  protected contentText(node: SyntaxNode, raw: boolean): string {
    if (node.children.length === 0) return this.text(node);
    let out = "";
    let at = node.start;
    for (const c of node.children) {
      out += this.tree.source.slice(at, c.start);
      if (c.type === "interpolation") out += DYNAMIC;
      else if (c.type === "escape_sequence") out += raw ? this.text(c) : decodeEscape(this.text(c));
      else out += this.text(c);
      at = c.end;
    }
    return out + this.tree.source.slice(at, node.end);
  }

  /** The elements of a list or tuple of strings (unknown elements are dynamic words); null when no list. */
  listValue(node: SyntaxNode, depth: number): Word[] | null {
    if (depth > MAX_RESOLVE) return null;
    switch (node.type) {
      case "list":
      case "tuple":
        return this.named(node).map((e) => this.stringValue(e, depth + 1) ?? dynamicWord(this.text(e)));
      case "parenthesized_expression": {
        const inner = this.named(node)[0];
        return inner === undefined ? null : this.listValue(inner, depth + 1);
      }
      case "identifier": {
        const values = this.assigns.get(this.text(node));
        if (values === undefined || values.length !== 1) return null;
        return this.listValue(values[0]!, depth + 1);
      }
      case "call": {
        // shlex.split("...")
        const fn = this.field(node, "function");
        if (fn === undefined || !this.text(fn).endsWith("split")) return null;
        const s = this.positional(node)[0];
        const v = s === undefined ? null : this.stringValue(s, depth + 1);
        return v === null
          ? null
          : v.value
              .split(/\s+/)
              .filter((x) => x !== "")
              .map((x) => wordOf(x, x));
      }
      case "binary_operator": {
        const left = this.field(node, "left");
        const right = this.field(node, "right");
        const l = left === undefined ? null : this.listValue(left, depth + 1);
        const r = right === undefined ? null : this.listValue(right, depth + 1);
        if (l === null && r === null) return null;
        return [...(l ?? [dynamicWord(this.text(node))]), ...(r ?? [dynamicWord(this.text(node))])];
      }
      default:
        return null;
    }
  }

  /** Pass 2: judge every call and every reference that escapes resolution. */
}

function wordOf(value: string, text: string): Word {
  return value.includes(DYNAMIC)
    ? { value, dynamic: true, subst: [], procSub: false, glob: false, text }
    : literalWord(value, text);
}

export function joinPath(a: Word, b: Word): Word {
  const value = b.value.startsWith("/") ? b.value : `${a.value.replace(/\/$/, "")}/${b.value}`;
  return wordOf(value, `${a.text}/${b.text}`);
}

const ESCAPES: Record<string, string> = {
  n: "\n",
  t: "\t",
  r: "\r",
  "0": "\0",
  "\\": "\\",
  "'": "'",
  '"': '"',
};

function decodeEscape(seq: string): string {
  const c = seq[1] ?? "";
  if (c in ESCAPES) return ESCAPES[c]!;
  if (c === "x" || c === "u" || c === "U") {
    const code = Number.parseInt(seq.slice(2), 16);
    return Number.isFinite(code) && code <= 0x10ffff ? String.fromCodePoint(code) : seq;
  }
  if (/[0-7]/.test(c)) return String.fromCharCode(Number.parseInt(seq.slice(1), 8));
  if (c === "\n") return "";
  return seq;
}
