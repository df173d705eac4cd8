import { DOWNLOADERS, isDecoder } from "../opaque/decoders.js";
import type { ParsedScript, PipeRef, Redirect, Unit } from "../shell/script.js";
import { baseName } from "../shell/words.js";

/** Where executed content came from, when a downloader or decoder produced it. */
export type Origin = "remote_code" | "decoded_code";

/** Wrappers that leave the wrapped program's output as it is. */
const TRANSPARENT = new Set([
  "sudo",
  "doas",
  "env",
  "nice",
  "nohup",
  "timeout",
  "stdbuf",
  "ionice",
  "command",
  "exec",
  "busybox",
  "time",
]);

/** Ancestor steps followed when a substitution sits inside another. */
const MAX_CLIMB = 16;

function nameAt(words: Unit["words"], i: number): string {
  const w = words[i];
  return w === undefined || w.dynamic ? "" : baseName(w.value).toLowerCase();
}

/** Does this command download or decode what it prints? */
function unitOrigin(unit: Unit): Origin | null {
  let i = 0;
  if (TRANSPARENT.has(nameAt(unit.words, 0))) {
    i = 1;
    while (
      i < unit.words.length &&
      (unit.words[i]!.value.startsWith("-") || /^\w+=/.test(unit.words[i]!.value))
    )
      i++;
    if (i >= unit.words.length) i = 0;
  }
  const name = nameAt(unit.words, i);
  if (DOWNLOADERS.has(name)) return "remote_code";
  const args = unit.words.slice(i + 1).map((w) => w.value);
  return isDecoder(name, args) ? "decoded_code" : null;
}

function stronger(a: Origin | null, b: Origin | null): Origin | null {
  if (a === "remote_code" || b === "remote_code") return "remote_code";
  return a ?? b;
}

/** Per-script lookups built once: pipeline members, and the origin of what each substitution prints. */
export class ScriptIndex {
  private readonly script: ParsedScript;
  private readonly pipes = new Map<number, Unit[]>();
  private readonly containerOrigin = new Map<number, Origin>();
  private readonly prefixOrigin = new Map<number, (Origin | null)[]>();
  private readonly producerText = new Map<string, string | null>();
  private inputs: Map<string, Redirect> | null = null;

  constructor(script: ParsedScript) {
    this.script = script;
    for (const unit of script.units) {
      if (unit.pipe !== null) {
        const list = this.pipes.get(unit.pipe.id);
        if (list === undefined) this.pipes.set(unit.pipe.id, [unit]);
        else list.push(unit);
      }
      if (unit.container < 0) continue;
      const origin = unitOrigin(unit);
      if (origin === null) continue;
      let id = unit.container;
      for (let step = 0; id >= 0 && step < MAX_CLIMB; step++) {
        this.containerOrigin.set(id, stronger(this.containerOrigin.get(id) ?? null, origin)!);
        id = script.parents[id] ?? -1;
      }
    }
  }

  originOfSubst(ids: readonly number[]): Origin | null {
    let out: Origin | null = null;
    for (const id of ids) out = stronger(out, this.containerOrigin.get(id) ?? null);
    return out;
  }

  private unitOutputOrigin(unit: Unit): Origin | null {
    let out = unitOrigin(unit);
    for (const w of unit.words) if (w.subst.length > 0) out = stronger(out, this.originOfSubst(w.subst));
    if (unit.stdin !== null) out = stronger(out, this.originOfSubst(unit.stdin.subst));
    return out;
  }

  /** Origin of everything written into the pipe before `pipe.stage`. */
  pipeOrigin(pipe: PipeRef): Origin | null {
    let prefix = this.prefixOrigin.get(pipe.id);
    if (prefix === undefined) {
      prefix = [];
      const members = this.pipes.get(pipe.id) ?? [];
      const byStage: (Origin | null)[] = [];
      for (const u of members)
        byStage[u.pipe!.stage] = stronger(byStage[u.pipe!.stage] ?? null, this.unitOutputOrigin(u));
      let acc: Origin | null = null;
      for (let s = 0; s <= byStage.length; s++) {
        prefix.push(acc);
        acc = stronger(acc, byStage[s] ?? null);
      }
      this.prefixOrigin.set(pipe.id, prefix);
    }
    return prefix[Math.min(pipe.stage, prefix.length - 1)] ?? null;
  }

  /** Literal text the previous stage writes (echo/printf arguments, a here-doc), for clients that read SQL on stdin. */
  literalUpstream(pipe: PipeRef): string | null {
    const key = `${pipe.id}:${pipe.stage}`;
    if (this.producerText.has(key)) return this.producerText.get(key) ?? null;
    let text: string | null = null;
    for (const u of this.pipes.get(pipe.id) ?? []) {
      if (u.pipe!.stage !== pipe.stage - 1) continue;
      const name = nameAt(u.words, 0);
      if (name === "echo" || name === "printf")
        text = `${text ?? ""}${u.words
          .slice(1)
          .map((w) => w.value)
          .join(" ")}\n`;
      else if (u.stdin !== null) text = `${text ?? ""}${u.stdin.text}`;
    }
    this.producerText.set(key, text);
    return text;
  }

  /**
   * The file a command reads on stdin through `<` (`bash < f.sh`, `mysql db < dump.sql`),
   * looked up by the command's text (equal texts are equal commands); null when none.
   */
  inputRedirect(text: string): Redirect | null {
    if (this.inputs === null) {
      this.inputs = new Map();
      for (const u of this.script.units) {
        const r = u.redirects.find(
          (x) => x.op === "<" && (x.fd === null || x.fd === "0") && x.target !== null,
        );
        if (r !== undefined && u.words.length > 0) this.inputs.set(u.text, r);
      }
    }
    return this.inputs.get(text) ?? null;
  }

  /** Function definitions that call themselves in a pipeline or in the background: `:(){ :|:& };:`. */
  forkBombs(): string[] {
    if (this.script.functions.length === 0) return [];
    const piped = new Set<string>();
    const recursive = new Set<string>();
    for (const u of this.script.units) {
      if (u.fn === null || nameAt(u.words, 0) !== u.fn.toLowerCase()) continue;
      recursive.add(u.fn);
      if (u.pipe !== null) piped.add(u.fn);
    }
    return this.script.functions
      .filter((fn) => piped.has(fn.name) || (recursive.has(fn.name) && fn.text.includes("&")))
      .map((fn) => fn.text);
  }
}
