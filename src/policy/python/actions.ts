import type { Best } from "../best.js";
import type { SyntaxNode, SyntaxTree } from "../shell/syntax.js";
import { dynamicWord, literalWord, type Word } from "../shell/words.js";
import { PATH_OBJECT, PythonNames, type Ref, UNKNOWN } from "./names.js";
import { DANGEROUS_MODULES, DECODERS, DOWNLOADS, type PyAction } from "./rules.js";

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

/**
 * What a Python call does, once its name is resolved to an action of the
 * rule table: a process call hands its command line or argv to the shell
 * classifier, a deletion, write, rename or permission change becomes the
 * shell command or redirection that does the same (`shutil.rmtree(p)` as
 * `rm -rf p`, `open(p, "w")` as `> p`), and code run from a string is read
 * as Python when it is a literal. Which calls matter is decided in classify.ts.
 */
export class PythonActions extends PythonNames {
  protected readonly host: PythonHost;

  constructor(tree: SyntaxTree, host: PythonHost) {
    super(tree);
    this.host = host;
  }

  /** Whether the program imports a module that can run or fetch code (subprocess, os, ctypes …). */
  protected importsDangerous(): boolean {
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

  /** Report what a call resolved to `action` does, as the shell equivalent or the finding it is. */
  protected act(action: PyAction, call: SyntaxNode, ref: Ref, part: string, inLoop: boolean): void {
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
      case "posix_spawn":
        host.argv(this.spawnArgv(action, call, ref, part, pos), part);
        return;
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
      case "open":
        this.openAct(call, ref, part);
        return;
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
        const own = ownsPath(ref);
        const from = this.target(call, ref, 0, "src");
        const to = own ? arg(0) : arg(1);
        host.argv([literalWord(action === "move" ? "mv" : "cp"), from, to], part);
        return;
      }
      case "chmod": {
        const own = ownsPath(ref);
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
      case "getattr":
        this.getattrAct(pos, part);
        return;
      case "introspect":
        if (this.importsDangerous()) host.best.consider(2, "opaque_program", part);
        return;
      case "opaque":
      case "network":
        host.best.consider(2, "opaque_program", part);
        return;
    }
  }

  /** The argv an exec/spawn/posix_spawn call runs: the program, then its arguments as listed or passed. */
  private spawnArgv(action: PyAction, call: SyntaxNode, ref: Ref, part: string, pos: SyntaxNode[]): Word[] {
    const at = action === "spawn" ? 1 : 0;
    const program = this.value(pos[at], call);
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
    return [program, ...rest];
  }

  /** open() with a mode that writes is the redirection that writes the same way. */
  private openAct(call: SyntaxNode, ref: Ref, part: string): void {
    const host = this.host;
    const modeNode = ownsPath(ref) ? this.arg(call, 0, "mode") : this.arg(call, 1, "mode");
    if (modeNode === undefined) return;
    const mode = this.stringValue(modeNode, 0);
    const target = this.target(call, ref, 0, "file");
    if (mode === null || mode.dynamic) host.write(">", target, part);
    else if (/[wx]/.test(mode.value)) host.write(">", target, part);
    else if (/a/.test(mode.value)) host.write(">>", target, part);
    else if (/\+/.test(mode.value)) host.write("<>", target, part);
  }

  /** getattr with a name the program computes, on a module that can run code, is opaque. */
  private getattrAct(pos: SyntaxNode[], part: string): void {
    const name = pos[1] === undefined ? null : this.stringValue(pos[1], 0);
    if (name !== null && !name.dynamic) return;
    const object = pos[0];
    const refs = object === undefined ? [] : this.resolve(object, 0);
    if (this.importsDangerous() || refs.some((r) => DANGEROUS_MODULES.has(r.name.split(".")[0]!)))
      this.host.best.consider(2, "opaque_program", part);
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

/** The call is a method of the path it acts on (a path object, or a receiver not resolved). */
function ownsPath(ref: Ref): boolean {
  return ref.name.startsWith(`${PATH_OBJECT}.`) || ref.name.startsWith(`${UNKNOWN}.`);
}
