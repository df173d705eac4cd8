import { analyzeInline } from "../opaque/inline-code.js";
import type { SyntaxNode, SyntaxTree } from "../shell/syntax.js";
import { literalWord } from "../shell/words.js";
import { PythonActions, type PythonHost } from "./actions.js";
import { PATH_OBJECT, reexported, UNKNOWN } from "./names.js";
import {
  DANGEROUS_MODULES,
  INTROSPECTION,
  NETWORK_MODULES,
  PY_CALLS,
  type PyAction,
  SAFE_MEMBERS,
  SAFE_PATH_METHODS,
  UNKNOWN_METHODS,
} from "./rules.js";

/**
 * Classifies a Python program from its tree-sitter syntax tree. Imports and
 * simple assignments are collected first (flow-insensitively, so a name
 * bound anywhere to `os.system` counts everywhere), then every call is
 * resolved to a qualified name and judged:
 *
 * - process execution hands its literal command to the shell classifier (a
 *   string as a command line, a list as an argv);
 * - deletions, writes, renames and permission changes are judged as the
 *   shell command that does the same (`shutil.rmtree(p)` as `rm -rf p`,
 *   `open(p, "w")` as `> p`), so paths weigh the same in both languages;
 * - code the classifier cannot see (eval/exec of a non-literal, importlib,
 *   deserialisers, interpreter introspection, the network) is opaque;
 * - in a program that imports a dangerous module, a call that resolves to no
 *   known-safe name is opaque too.
 *
 * This file decides which calls matter; actions.ts turns each into
 * what it does on the shell side.
 */

/** Names of the interpreter's own tables: `__builtins__["exec"]` reaches any builtin. */
const INTERNALS = new Set(["__builtins__", "__loader__", "__spec__"]);

/** Nodes whose elements are values: a function or module among them leaves name resolution. */
const VALUE_LISTS = new Set([
  "argument_list",
  "list",
  "tuple",
  "set",
  "expression_list",
  "pattern_list",
  "return_statement",
  "yield",
  "conditional_expression",
  "boolean_operator",
  "lambda",
]);

const LOOPS = new Set([
  "for_statement",
  "while_statement",
  "list_comprehension",
  "set_comprehension",
  "dictionary_comprehension",
  "generator_expression",
]);

class Program extends PythonActions {
  /** Walk the whole tree and judge every call, attribute and value that can matter. */
  judge(): void {
    const stack: { node: SyntaxNode; loop: boolean; inClass: boolean }[] = [
      { node: this.tree.root, loop: false, inClass: false },
    ];
    const best = this.host.best;
    while (stack.length > 0 && !best.done) {
      const { node, loop, inClass: outerClass } = stack.pop()!;
      const inLoop = loop || LOOPS.has(node.type);
      // A class attribute (`class A: run = os.system`) is reached as `A.run`, which is not resolved.
      const inClass =
        node.type === "class_definition" ? true : node.type === "function_definition" ? false : outerClass;
      if (node.type === "call") this.judgeCall(node, inLoop);
      else if (node.type === "attribute") this.judgeAttribute(node);
      else if (node.type === "identifier" && INTERNALS.has(this.text(node)))
        best.consider(2, "opaque_program", this.text(node));
      else if (VALUE_LISTS.has(node.type)) for (const v of this.named(node)) this.judgeValue(v);
      else if (
        node.type === "keyword_argument" ||
        node.type === "default_parameter" ||
        node.type === "typed_default_parameter" ||
        node.type === "pair"
      ) {
        const v = this.field(node, "value");
        if (v !== undefined) this.judgeValue(v);
      } else if (node.type === "assignment" || node.type === "named_expression") {
        const left = this.field(node, node.type === "assignment" ? "left" : "name");
        const right = this.field(node, node.type === "assignment" ? "right" : "value");
        if (left !== undefined && right !== undefined && (left.type !== "identifier" || inClass))
          this.judgeValue(right);
      }
      for (let i = node.children.length - 1; i >= 0; i--)
        stack.push({ node: node.children[i]!, loop: inLoop, inClass });
    }
  }

  /** `sys.modules`, `x.__globals__`, `().__class__.__subclasses__()`: a way around name resolution. */
  private judgeAttribute(node: SyntaxNode): void {
    const attr = this.field(node, "attribute");
    if (attr === undefined) return;
    const name = this.text(attr);
    if (!INTROSPECTION.has(name)) return;
    if (name === "modules" && !this.resolve(node, 0).some((r) => r.name === "sys.modules")) return;
    this.host.best.consider(2, "opaque_program", this.text(node));
  }

  /** A dangerous module or function used as a value (passed, stored, put in a list): its use is unseen. */
  private judgeValue(node: SyntaxNode): void {
    if (node.type !== "identifier" && node.type !== "attribute") return;
    const part = this.text(node);
    for (const r of this.resolve(node, 0)) {
      const action = PY_CALLS.get(r.name) ?? this.memberAction(r.name);
      if (action === "rmtree" || action === "delete" || action === "rmdir")
        this.host.best.consider(3, "file_destruction", part);
      else if (action === "shell" || action === "subprocess" || action === "exec" || action === "spawn")
        this.host.best.consider(3, "dynamic_command", part);
      else if (action !== undefined && action !== "getattr" && action !== "fork")
        this.host.best.consider(2, "opaque_program", part);
      else if (DANGEROUS_MODULES.has(r.name)) this.host.best.consider(2, "opaque_program", part);
    }
  }

  private memberAction(name: string): PyAction | undefined {
    const dot = name.lastIndexOf(".");
    if (dot < 0) return undefined;
    const owner = name.slice(0, dot);
    const member = name.slice(dot + 1);
    if (owner === UNKNOWN) return UNKNOWN_METHODS.get(member);
    if (owner === PATH_OBJECT) return SAFE_PATH_METHODS.has(member) ? undefined : UNKNOWN_METHODS.get(member);
    return undefined;
  }

  private judgeCall(call: SyntaxNode, inLoop: boolean): void {
    const fn = this.field(call, "function");
    if (fn === undefined) return;
    const part = this.text(call);
    const best = this.host.best;
    const dangerous = this.importsDangerous();
    for (const found of this.resolve(fn, 0)) {
      if (best.done) return;
      const ref = reexported(found);
      const action = PY_CALLS.get(ref.name) ?? this.memberAction(ref.name);
      if (action !== undefined) {
        this.act(action, call, ref, part, inLoop);
        continue;
      }
      const root = ref.name.split(".")[0]!;
      if (root === "builtins") {
        // A builtin without a rule (print, len, sorted ...) computes or prints.
      } else if (ref.name.startsWith("<free>.")) {
        // An unbound, non-builtin name: it exists only if something put it there at run time.
        if (dangerous) best.consider(2, "opaque_program", part);
      } else if (NETWORK_MODULES.has(root) && !SAFE_MEMBERS.has(ref.name)) {
        best.consider(2, "opaque_program", part);
      } else if (DANGEROUS_MODULES.has(root) && !SAFE_MEMBERS.has(ref.name) && !this.safeMember(ref.name)) {
        best.consider(2, "opaque_program", part);
      } else if (ref.name === UNKNOWN && fn.type !== "attribute" && dangerous) {
        // f()() or (lambda: ...)(): a callee computed at run time.
        best.consider(2, "opaque_program", part);
      }
    }
  }

  private safeMember(name: string): boolean {
    if (name.startsWith("os.path.") || name.startsWith("os.environ.")) return true;
    if (name.startsWith(`${PATH_OBJECT}.`)) return SAFE_PATH_METHODS.has(name.slice(PATH_OBJECT.length + 1));
    if (name.startsWith("pathlib.Path.")) return SAFE_PATH_METHODS.has(name.slice("pathlib.Path.".length));
    // Exception classes and constants of a dangerous module.
    const member = name.slice(name.lastIndexOf(".") + 1);
    return /^[A-Z][A-Za-z]*(?:Error|Exception|Expired)$/.test(member) || /^[A-Z_0-9]+$/.test(member);
  }
}

/**
 * Classify one Python program into `host.best`. A tree with syntax errors is
 * still walked (tree-sitter recovers around the error), its findings count,
 * and because what the grammar could not read may still run, it is at least
 * Tier 2 (opaque_program) and Tier 3 when the text visibly deletes.
 */
export function classifyPython(tree: SyntaxTree | null, source: string, host: PythonHost): void {
  if (tree === null || tree.hasError) {
    const found = analyzeInline(source);
    host.best.consider(
      found.destructive ? 3 : 2,
      found.destructive ? "file_destruction" : "opaque_program",
      source,
    );
    for (const line of found.commands) {
      if (host.best.done) return;
      host.shell(literalWord(line), source);
    }
    if (tree === null) return;
  }
  const program = new Program(tree, host);
  program.collect();
  program.judge();
}
