import type { PipeRef, Redirect, StdinFeed } from "./script.js";
import type { SyntaxNode } from "./syntax.js";
import {
  DYNAMIC,
  decodeAnsiC,
  dynamicWord,
  hasGlobChars,
  joinWords,
  literalWord,
  unescapeBare,
  unescapeDouble,
  type Word,
} from "./words.js";

/**
 * Resolves the words, assignments and redirections of one command into the
 * values the rules compare against. It never walks statements itself: whatever
 * code it meets inside a word (a substitution, an expansion, junk the grammar
 * could not place) is handed back to the walk through `deps`, so the walk stays
 * the single place that orders and visits nodes.
 */

/** Where a node sits: which substitution holds it, which pipeline stage, which function body. */
export interface WalkCtx {
  container: number;
  pipe: PipeRef | null;
  fn: string | null;
}

export interface WordResolverDeps {
  source: string;
  /** Spans of text that is data rather than code; the resolver adds quoted strings and here-doc bodies. */
  dataRanges: [number, number][];
  /** Have the walk look inside `node` later, for substitutions a word may hide. */
  scan(node: SyntaxNode, ctx: WalkCtx): void;
  /** Give a substitution its own container, have the walk visit its body, and return the container id. */
  substitution(node: SyntaxNode, ctx: WalkCtx): number;
}

export interface RedirectResult {
  redirects: Redirect[];
  stdin: StdinFeed | null;
}

export interface WordResolver {
  resolveWord(node: SyntaxNode, ctx: WalkCtx, depth: number): Word;
  resolveRedirects(nodes: SyntaxNode[], ctx: WalkCtx, out: RedirectResult): void;
  assignment(node: SyntaxNode, ctx: WalkCtx): { name: string; value: Word };
}

/** Word nesting beyond this is treated as unknown (and still scanned for substitutions). */
const MAX_WORD_DEPTH = 32;

const REDIRECT_OPS = new Set([">", ">>", ">|", "&>", "&>>", "<>", "<", ">&", "<&", ">&-", "<&-"]);

function redirectOp(node: SyntaxNode): string {
  for (const c of node.children) if (!c.named && REDIRECT_OPS.has(c.type)) return c.type;
  return ">";
}

export function createWordResolver(deps: WordResolverDeps): WordResolver {
  return {
    resolveWord: (node, ctx, depth) => resolveWord(deps, node, ctx, depth),
    resolveRedirects: (nodes, ctx, out) => resolveRedirects(deps, nodes, ctx, out),
    assignment: (node, ctx) => assignment(deps, node, ctx),
  };
}

function text(d: WordResolverDeps, n: SyntaxNode): string {
  return d.source.slice(n.start, n.end);
}

/** Only a quoted span that crosses a line break can be mistaken for a second command, so only those are kept. */
function data(d: WordResolverDeps, node: SyntaxNode): void {
  const { source } = d;
  if (source.includes("\n", node.start) && source.indexOf("\n", node.start) < node.end) {
    d.dataRanges.push([node.start, node.end]);
  }
}

function resolveParts(
  d: WordResolverDeps,
  parts: SyntaxNode[],
  ctx: WalkCtx,
  depth: number,
  raw: string,
): Word {
  let word: Word | null = null;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    let piece: Word;
    if (part.named) {
      piece = resolveWord(d, part, ctx, depth + 1);
    } else if (part.type === "$" && parts[i + 1]?.type === "string") {
      continue; // `$"..."` is a translated string: the `$` adds nothing
    } else {
      piece = literalWord(text(d, part));
    }
    word = word === null ? piece : joinWords(word, piece);
  }
  const out = word ?? literalWord("");
  return { ...out, text: raw };
}

function resolveWord(d: WordResolverDeps, node: SyntaxNode, ctx: WalkCtx, depth: number): Word {
  const raw = text(d, node);
  if (depth > MAX_WORD_DEPTH) {
    d.scan(node, ctx);
    return dynamicWord(raw);
  }
  switch (node.type) {
    case "word":
      return { ...literalWord(unescapeBare(raw), raw), glob: hasGlobChars(raw) };
    case "raw_string":
      data(d, node);
      return literalWord(raw.slice(1, -1), raw);
    case "ansi_c_string":
      data(d, node);
      return literalWord(decodeAnsiC(raw.slice(2, -1)), raw);
    case "string_content":
      return literalWord(unescapeDouble(raw), raw);
    case "string":
    case "translated_string": {
      data(d, node);
      const parts = node.children.filter((c) => c.named);
      return parts.length === 0 ? literalWord("", raw) : resolveParts(d, parts, ctx, depth, raw);
    }
    case "concatenation":
    case "command_name":
      return resolveParts(d, node.children, ctx, depth, raw);
    case "number":
      if (node.children.some((c) => c.named)) return resolveParts(d, node.children, ctx, depth, raw);
      return literalWord(raw);
    case "brace_expression":
      return { ...literalWord(raw), glob: true };
    case "ERROR":
      // Junk the grammar could not place is not an expansion; still look inside for substitutions.
      d.scan(node, ctx);
      return literalWord(raw);
    case "command_substitution":
    case "process_substitution": {
      const id = d.substitution(node, ctx);
      return {
        value: DYNAMIC,
        dynamic: true,
        subst: [id],
        procSub: node.type === "process_substitution",
        glob: false,
        text: raw,
      };
    }
    default:
      // Parameter and arithmetic expansions: unknown value; scan them for substitutions.
      d.scan(node, ctx);
      // An "expansion" the grammar built around junk it could not place is error recovery, not `$x`.
      return node.children.some((c) => c.type === "ERROR") ? literalWord(raw) : dynamicWord(raw);
  }
}

function resolveRedirects(d: WordResolverDeps, nodes: SyntaxNode[], ctx: WalkCtx, out: RedirectResult): void {
  for (const r of nodes) {
    if (r.type === "file_redirect") fileRedirect(d, r, ctx, out);
    else if (r.type === "herestring_redirect") {
      const content = r.children.find((c) => c.named && c.type !== "file_descriptor");
      const w = content ? resolveWord(d, content, ctx, 0) : literalWord("");
      out.redirects.push({ op: "<<<", fd: null, target: null, text: text(d, r) });
      out.stdin = { text: `${w.value}\n`, dynamic: w.dynamic, subst: w.subst };
    } else if (r.type === "heredoc_redirect") heredocRedirect(d, r, ctx, out);
    else d.scan(r, ctx);
  }
}

function fileRedirect(d: WordResolverDeps, r: SyntaxNode, ctx: WalkCtx, out: RedirectResult): void {
  const fdNode = r.children.find((c) => c.type === "file_descriptor");
  const dest = r.children.filter((c) => c.field === "destination");
  let target: Word | null = null;
  for (const node of dest) {
    const w = resolveWord(d, node, ctx, 0);
    target = target === null ? w : joinWords(target, w);
  }
  out.redirects.push({ op: redirectOp(r), fd: fdNode ? text(d, fdNode) : null, target, text: text(d, r) });
}

/** A here-doc: its body is the command's stdin, dynamic unless its delimiter is quoted. */
function heredocRedirect(d: WordResolverDeps, r: SyntaxNode, ctx: WalkCtx, out: RedirectResult): void {
  const start = r.children.find((c) => c.type === "heredoc_start");
  const body = r.children.find((c) => c.type === "heredoc_body");
  const quoted = start !== undefined && /['"\\]/.test(text(d, start));
  const subst: number[] = [];
  let dynamic = false;
  if (body && !quoted) {
    for (const c of body.children) {
      if (c.type === "command_substitution") subst.push(d.substitution(c, ctx));
      else if (c.type === "expansion" || c.type === "simple_expansion") {
        dynamic = true;
        d.scan(c, ctx);
      }
    }
  }
  out.redirects.push({
    op: r.children.find((c) => c.type === "<<" || c.type === "<<-")?.type ?? "<<",
    fd: null,
    target: null,
    text: start ? `<<${text(d, start)}` : "<<",
  });
  // Lines of a here-doc body start at the range start: include the newline before it.
  if (body) d.dataRanges.push([body.start - 1, body.end]);
  out.stdin = { text: body ? text(d, body) : "", dynamic: dynamic || subst.length > 0, subst };
  const nested = r.children.filter((c) => c.field === "redirect");
  if (nested.length > 0) resolveRedirects(d, nested, ctx, out);
}

function assignment(d: WordResolverDeps, node: SyntaxNode, ctx: WalkCtx): { name: string; value: Word } {
  const nameNode = node.children.find((c) => c.field === "name");
  const valueNode = node.children.find((c) => c.field === "value");
  const value = valueNode ? resolveWord(d, valueNode, ctx, 0) : literalWord("");
  return { name: nameNode ? text(d, nameNode) : "", value };
}
