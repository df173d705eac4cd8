import type { Best } from "./best.js";
import { analyzeInline } from "./opaque.js";
import { PATH_OBJECT, PythonNames, type Ref, reexported, UNKNOWN } from "./python-names.js";
import {
  BUILTINS,
  DANGEROUS_MODULES,
  DECODERS,
  DOWNLOADS,
  INTROSPECTION,
  NETWORK_MODULES,
  PY_CALLS,
  type PyAction,
  SAFE_MEMBERS,
  SAFE_PATH_METHODS,
  UNKNOWN_METHODS,
} from "./python-rules.js";
import { joinPath, LOCAL } from "./python-source.js";
import type { SyntaxNode, SyntaxTree } from "./syntax.js";
import { dynamicWord, literalWord, type Word } from "./words.js";

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
 */

/** Where a finding goes: the shell classifier, the rule tables, another Python program. */
export interface PythonHost {
  best: Best;
  /** A shell command line run by the program (os.system). */
  shell(command: Word, part: string): void;
  /** An argv run by the program, or the shell command equivalent to what it does. */
  argv(words: Word[], part: string): void;
  /** A write through a path, judged as a redirection `op` onto `target`. */
  write(op: ">" | ">>" | "<>", target: Word, part: string): void;
  /** Python source the program runs (exec of a literal). */
  python(source: string, part: string): void;
}

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

class Program extends PythonNames {
  private readonly host: PythonHost;

  constructor(tree: SyntaxTree, host: PythonHost) {
    super(tree);
    this.host = host;
  }

  /** The string an expression evaluates to, with DYNAMIC for unknown stretches; null when it is no string. */
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

  importsDangerous(): boolean {
    for (const m of this.modules) if (DANGEROUS_MODULES.has(m)) return true;
    return this.stars.some((m) => DANGEROUS_MODULES.has(m.split(".")[0]!));
  }

  /** The path a call acts on: its receiver (a path object), else argument `index`. */
  private target(call: SyntaxNode, ref: Ref, index: number, name: string): Word {
    if (ref.name.startsWith(`${PATH_OBJECT}.`)) return ref.path ?? dynamicWord(this.text(call));
    if (ref.name.startsWith(`${UNKNOWN}.`)) {
      const receiver = this.field(this.field(call, "function")!, "object");
      return receiver === undefined
        ? dynamicWord(this.text(call))
        : (this.stringValue(receiver, 0) ?? dynamicWord(this.text(receiver)));
    }
    return this.value(this.arg(call, index, name), call);
  }

  private value(node: SyntaxNode | undefined, call: SyntaxNode): Word {
    if (node === undefined) return dynamicWord(this.text(call));
    if (node.type === "integer") return literalWord(this.text(node).replace(/^0o/i, ""));
    const refs = this.resolve(node, 0);
    const path = refs.find((r) => r.name === PATH_OBJECT)?.path;
    if (path !== undefined) return path;
    return this.stringValue(node, 0) ?? dynamicWord(this.text(node));
  }

  /** What a process call runs: a string is a shell command line, a list an argv, anything else unknown. */
  private commandLine(node: SyntaxNode | undefined, part: string): void {
    if (node === undefined) {
      this.host.best.consider(3, "dynamic_command", part);
      return;
    }
    const list = this.listValue(node, 0);
    if (list !== null) {
      if (list.length > 0) this.host.argv(list, part);
      return;
    }
    const line = this.stringValue(node, 0);
    if (line === null) this.host.best.consider(3, "dynamic_command", part);
    else this.host.shell(line, part);
  }

  private act(action: PyAction, call: SyntaxNode, ref: Ref, part: string, inLoop: boolean): void {
    const host = this.host;
    const pos = this.positional(call);
    const arg = (i: number) => this.value(pos[i], call);
    switch (action) {
      case "shell":
        this.commandLine(this.arg(call, 0, "cmd") ?? this.keyword(call, "command"), part);
        return;
      case "subprocess":
        this.commandLine(this.arg(call, 0, "args") ?? this.keyword(call, "argv"), part);
        return;
      case "exec":
      case "spawn":
      case "posix_spawn": {
        const at = action === "spawn" ? 1 : 0;
        const program = arg(at);
        const name = ref.name.slice(ref.name.lastIndexOf(".") + 1);
        let rest: Word[] | null;
        if (action === "posix_spawn" || name.replace(/^(?:exec|spawn)/, "").startsWith("v")) {
          const list = pos[at + 1] === undefined ? null : this.listValue(pos[at + 1]!, 0);
          rest = list === null ? [dynamicWord(part)] : list.slice(1);
        } else {
          const end = name.endsWith("e") ? pos.length - 1 : pos.length;
          rest = pos.slice(at + 2, end).map((p) => this.value(p, call));
        }
        if (this.hasSplat(call)) rest.push(dynamicWord(part));
        host.argv([program, ...rest], part);
        return;
      }
      case "exec_args":
        host.argv(
          pos.map((p) => this.value(p, call)),
          part,
        );
        return;
      case "rmtree":
        host.argv([literalWord("rm"), literalWord("-rf"), this.target(call, ref, 0, "path")], part);
        return;
      case "delete":
      case "rmdir": {
        if (inLoop) host.best.consider(3, "file_destruction", part);
        const tool = action === "delete" ? "unlink" : "rmdir";
        host.argv([literalWord(tool), this.target(call, ref, 0, "path")], part);
        return;
      }
      case "open": {
        const own = ref.name.startsWith(`${PATH_OBJECT}.`) || ref.name.startsWith(`${UNKNOWN}.`);
        const modeNode = own ? this.arg(call, 0, "mode") : this.arg(call, 1, "mode");
        if (modeNode === undefined) return;
        const mode = this.stringValue(modeNode, 0);
        const target = this.target(call, ref, 0, "file");
        if (mode === null || mode.dynamic) host.write(">", target, part);
        else if (/[wx]/.test(mode.value)) host.write(">", target, part);
        else if (/a/.test(mode.value)) host.write(">>", target, part);
        else if (/\+/.test(mode.value)) host.write("<>", target, part);
        return;
      }
      case "os_open": {
        const flags = pos[1] === undefined ? "" : this.text(pos[1]);
        if (/O_(?:WRONLY|RDWR|TRUNC|APPEND|CREAT)/.test(flags))
          host.write(/O_TRUNC/.test(flags) ? ">" : "<>", arg(0), part);
        return;
      }
      case "write":
        host.write(">", this.target(call, ref, 0, "path"), part);
        return;
      case "move":
      case "copy": {
        const own = ref.name.startsWith(`${PATH_OBJECT}.`) || ref.name.startsWith(`${UNKNOWN}.`);
        const from = this.target(call, ref, 0, "src");
        const to = own ? arg(0) : arg(1);
        host.argv([literalWord(action === "move" ? "mv" : "cp"), from, to], part);
        return;
      }
      case "chmod": {
        const own = ref.name.startsWith(`${PATH_OBJECT}.`) || ref.name.startsWith(`${UNKNOWN}.`);
        host.argv([literalWord("chmod"), own ? arg(0) : arg(1), this.target(call, ref, 0, "path")], part);
        return;
      }
      case "chown":
        host.argv([literalWord("chown"), arg(1), this.target(call, ref, 0, "path")], part);
        return;
      case "symlink":
      case "link": {
        const own = ref.name.startsWith(`${PATH_OBJECT}.`);
        const flag = action === "symlink" ? [literalWord("-s")] : [];
        const pair = own ? [arg(0), this.target(call, ref, 0, "")] : [arg(0), arg(1)];
        host.argv([literalWord("ln"), ...flag, ...pair], part);
        return;
      }
      case "truncate":
        host.argv([literalWord("truncate"), literalWord("-s"), arg(1), arg(0)], part);
        return;
      case "kill": {
        const sig = pos[1] === undefined ? "" : this.text(pos[1]).replace(/^signal\.(?:SIG)?/, "");
        host.argv([literalWord("kill"), literalWord(`-${sig}`), arg(0)], part);
        return;
      }
      case "fork":
        if (inLoop) host.best.consider(3, "fork_bomb", part);
        return;
      case "sql": {
        // Judged as the same statement given to an SQL client (DROP, TRUNCATE ...).
        const sql = pos[0] === undefined ? null : this.stringValue(pos[0], 0);
        if (sql !== null) host.argv([literalWord("psql"), literalWord("-c"), sql], part);
        return;
      }
      case "code":
        this.code(call, part);
        return;
      case "import": {
        const name = pos[0] === undefined ? null : this.stringValue(pos[0], 0);
        if (name === null || name.dynamic || ref.name.startsWith("importlib"))
          host.best.consider(2, "opaque_program", part);
        return;
      }
      case "getattr": {
        const name = pos[1] === undefined ? null : this.stringValue(pos[1], 0);
        if (name !== null && !name.dynamic) return;
        const object = pos[0];
        const refs = object === undefined ? [] : this.resolve(object, 0);
        if (this.importsDangerous() || refs.some((r) => DANGEROUS_MODULES.has(r.name.split(".")[0]!)))
          host.best.consider(2, "opaque_program", part);
        return;
      }
      case "introspect":
        if (this.importsDangerous()) host.best.consider(2, "opaque_program", part);
        return;
      case "opaque":
      case "network":
        host.best.consider(2, "opaque_program", part);
        return;
    }
  }

  /** eval/exec/compile: a literal program is read like any other; decoded or downloaded code is not. */
  private code(call: SyntaxNode, part: string): void {
    const source = this.positional(call)[0];
    const best = this.host.best;
    if (source === undefined) return;
    const literal = this.stringValue(source, 0);
    if (literal !== null && !literal.dynamic) {
      this.host.python(literal.value, part);
      return;
    }
    const text = this.text(source);
    const inner = source.type === "identifier" ? this.assignedText(this.text(source)) : text;
    if (DOWNLOADS.test(inner)) best.consider(3, "remote_code", part);
    else if (DECODERS.test(inner)) best.consider(3, "decoded_code", part);
    else best.consider(2, "opaque_program", part);
  }

  private assignedText(name: string): string {
    return (this.assigns.get(name) ?? []).map((n) => this.text(n)).join("\n");
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
