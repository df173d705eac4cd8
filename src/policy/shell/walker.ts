import { arithmeticName } from "./arithmetic-names.js";
import type { FunctionDef, ParsedScript, Unit } from "./script.js";
import type { SyntaxNode, SyntaxTree } from "./syntax.js";
import { createWordResolver, type RedirectResult, type WalkCtx, type WordResolver } from "./word-resolver.js";
import { joinWords, literalWord, type Word } from "./words.js";

/**
 * Turns a bash syntax tree into the flat list of simple commands the rules
 * look at. The walk is iterative (an explicit stack) so that `a && b && …`
 * nested a hundred thousand levels deep cannot overflow the JS stack, and
 * every node is visited once, which keeps it linear in the input.
 * Reading the value of a word or redirection lives in word-resolver.ts; this
 * file decides what is a command and in which order nodes are visited.
 */

interface Item {
  node: SyntaxNode;
  ctx: WalkCtx;
  /** Redirections that the grammar attached to an enclosing statement. */
  extra: SyntaxNode[] | null;
  /** A substitution whose container id is already allocated. */
  opened?: boolean;
}

/** Node types with nothing below them that could hold a command, so the generic descent stops there. */
const LEAF_TYPES = new Set([
  "word",
  "raw_string",
  "string_content",
  "variable_name",
  "comment",
  "heredoc_start",
  "heredoc_end",
  "heredoc_content",
  "file_descriptor",
  "special_variable_name",
  "test_operator",
  "regex",
  "extglob_pattern",
  "ansi_c_string",
]);

/** One walk's state: the stack of nodes still to visit and everything found so far. */
interface Walk {
  tree: SyntaxTree;
  stack: Item[];
  /**
   * Substitutions and expansions met while resolving words wait here, so that they are
   * visited in source order right after the command that holds them.
   */
  pending: Item[];
  units: Unit[];
  functions: FunctionDef[];
  parents: number[];
  dataRanges: [number, number][];
  commandRanges: [number, number][];
  assigns: { name: string; value: Word }[];
  arithmeticNames: boolean;
  pipes: number;
  resolver: WordResolver;
  /** The source text of a node. */
  textOf: (n: SyntaxNode) => string;
}

export function walkScript(tree: SyntaxTree): ParsedScript {
  const w = newWalk(tree);
  w.stack.push({ node: tree.root, ctx: { container: -1, pipe: null, fn: null }, extra: null });
  for (let item = w.stack.pop(); item !== undefined; item = w.stack.pop()) {
    visit(w, item);
    if (w.pending.length > 0) {
      pushAll(w, w.pending);
      w.pending = [];
    }
  }
  return {
    units: w.units,
    functions: w.functions,
    parents: w.parents,
    hasError: tree.hasError,
    dataRanges: w.dataRanges,
    commandRanges: w.commandRanges,
    assigns: w.assigns,
    arithmeticNames: w.arithmeticNames,
  };
}

function newWalk(tree: SyntaxTree): Walk {
  const dataRanges: [number, number][] = [];
  const w: Walk = {
    tree,
    stack: [],
    pending: [],
    units: [],
    functions: [],
    parents: [],
    dataRanges,
    commandRanges: [],
    assigns: [],
    arithmeticNames: false,
    pipes: 0,
    textOf: (n) => tree.source.slice(n.start, n.end),
    resolver: createWordResolver({
      source: tree.source,
      dataRanges,
      scan: (node, ctx) => {
        w.pending.push({ node, ctx, extra: null });
      },
      substitution: (node, ctx) => substitution(w, node, ctx),
    }),
  };
  return w;
}

function text(w: Walk, n: SyntaxNode): string {
  return w.textOf(n);
}

function pushAll(w: Walk, items: Item[]): void {
  for (let i = items.length - 1; i >= 0; i--) w.stack.push(items[i]!);
}

/** A substitution gets a container of its own, below the one it appears in; its id. */
function substitution(w: Walk, node: SyntaxNode, ctx: WalkCtx): number {
  const id = w.parents.length;
  w.parents.push(ctx.container);
  w.pending.push({ node, ctx: { container: id, pipe: null, fn: ctx.fn }, extra: null, opened: true });
  return id;
}

function addUnit(
  w: Walk,
  words: Word[],
  redirectNodes: SyntaxNode[],
  ctx: WalkCtx,
  unitText: string,
  extra: Partial<Unit>,
): void {
  const res: RedirectResult = { redirects: [], stdin: null };
  w.resolver.resolveRedirects(redirectNodes, ctx, res);
  let shown = unitText;
  for (const r of res.redirects) if (!unitText.includes(r.text)) shown += ` ${r.text}`;
  w.units.push({
    words,
    assigns: extra.assigns ?? [],
    redirects: res.redirects,
    stdin: res.stdin,
    text: shown,
    pipe: ctx.pipe,
    container: ctx.container,
    fn: ctx.fn,
  });
}

function command(w: Walk, node: SyntaxNode, ctx: WalkCtx, extra: SyntaxNode[] | null): void {
  const { resolveWord, assignment } = w.resolver;
  const words: Word[] = [];
  const ends: number[] = [];
  const redirects: SyntaxNode[] = [];
  const assigns: { name: string; value: Word }[] = [];
  const later: Item[] = [];
  for (let i = 0; i < node.children.length; i++) {
    const c = node.children[i]!;
    if (!c.named && c.type === "$" && node.children[i + 1]?.type === "string") {
      continue; // `$"..."` is a translated string: the `$` adds nothing
    }
    if (c.field === "name" || c.field === "argument") {
      const word = resolveWord(c, ctx, 0);
      const prevEnd = ends[ends.length - 1];
      if (prevEnd !== undefined && prevEnd === c.start && words.length > 0) {
        words[words.length - 1] = joinWords(words[words.length - 1]!, word);
      } else {
        words.push(word);
      }
      ends[words.length - 1] = c.end;
    } else if (c.field === "redirect" || c.type.endsWith("_redirect")) {
      redirects.push(c);
    } else if (c.type === "variable_assignment" && words.length === 0 && !isAssignment(w, c)) {
      // `9=/a ls`: not a name bash can assign, so the word is the command (a path, here).
      words.push(assignmentWord(w, c, ctx));
      ends[0] = c.end;
    } else if (c.type === "variable_assignment") {
      assigns.push(assignment(c, ctx));
    } else if (c.named && c.type !== "comment") {
      later.push({ node: c, ctx, extra: null });
    }
  }
  if (extra) redirects.push(...extra);
  let end = node.end;
  for (const r of redirects) if (r.type === "file_redirect" && r.end > end) end = r.end;
  w.commandRanges.push([node.start, end]);
  addUnit(w, words, redirects, ctx, text(w, node), { assigns });
  pushAll(w, later);
}

function statementChildren(node: SyntaxNode): SyntaxNode[] {
  return node.children.filter((c) => c.named && c.type !== "comment");
}

function pipeline(
  w: Walk,
  stages: SyntaxNode[],
  ctx: WalkCtx,
  lastExtra: SyntaxNode[] | null,
  attachAt: number,
): void {
  const id = w.pipes++;
  pushAll(
    w,
    stages.map((node, stage) => ({
      node,
      ctx: { ...ctx, pipe: { id, stage } },
      extra: stage === attachAt ? lastExtra : null,
    })),
  );
}

function redirected(w: Walk, node: SyntaxNode, ctx: WalkCtx, extra: SyntaxNode[] | null): void {
  const body = node.children.find((c) => c.field === "body");
  const redirects = node.children.filter((c) => c.type.endsWith("_redirect"));
  if (extra) redirects.push(...extra);
  const continuation: SyntaxNode[] = [];
  const rights: Item[] = [];
  for (const r of redirects) {
    if (r.type !== "heredoc_redirect") continue;
    for (const c of r.children) {
      if (c.type === "pipeline") continuation.push(...statementChildren(c));
      else if (c.field === "right") rights.push({ node: c, ctx, extra: null });
    }
  }
  pushAll(w, rights);
  if (body === undefined) {
    const first = redirects[0];
    if (first !== undefined)
      w.commandRanges.push([node.start, first.type === "heredoc_redirect" ? first.start : node.end]);
    addUnit(w, [], redirects, ctx, text(w, node), {});
    return;
  }
  const own = body.type === "pipeline" ? statementChildren(body) : [body];
  if (continuation.length > 0 || own.length > 1) {
    pipeline(w, [...own, ...continuation], ctx, redirects, own.length - 1);
  } else {
    w.stack.push({ node: body, ctx, extra: redirects });
  }
}

function visitPipeline(w: Walk, node: SyntaxNode, ctx: WalkCtx, extra: SyntaxNode[] | null): void {
  const stages = statementChildren(node);
  const last = stages[stages.length - 1];
  if (last === undefined || last.type !== "list") {
    pipeline(w, stages, ctx, extra, stages.length - 1);
    return;
  }
  // `a | b | c && d` comes out of the grammar as `a | (b | c && d)`, but `|` binds tighter
  // than `&&`: the pipe feeds the list's leftmost pipeline, and the rest of the list runs after.
  const after: SyntaxNode[] = [];
  let head: SyntaxNode = last;
  while (head.type === "list") {
    const parts = statementChildren(head);
    if (parts.length === 0) break;
    after.unshift(...parts.slice(1));
    head = parts[0]!;
  }
  const fed = [...stages.slice(0, -1), ...(head.type === "pipeline" ? statementChildren(head) : [head])];
  pipeline(w, fed, ctx, after.length === 0 ? extra : null, fed.length - 1);
  pushAll(
    w,
    after.map((c, i) => ({ node: c, ctx, extra: i === after.length - 1 ? extra : null })),
  );
}

function visitFunction(w: Walk, node: SyntaxNode, ctx: WalkCtx): void {
  const name = node.children.find((c) => c.field === "name");
  const fn = name ? text(w, name) : "";
  w.functions.push({ name: fn, text: text(w, node) });
  const inner: Item[] = [];
  for (const c of statementChildren(node)) {
    if (c.field === "name") continue;
    inner.push({ node: c, ctx: { ...ctx, fn }, extra: null });
  }
  pushAll(w, inner);
}

/** A `NAME=value` word as one word, its value's expansions kept. */
function assignmentWord(w: Walk, node: SyntaxNode, ctx: WalkCtx): Word {
  const a = w.resolver.assignment(node, ctx);
  return { ...a.value, value: `${a.name}=${a.value.value}`, text: text(w, node) };
}

/** Whether bash reads this `NAME=value` word as an assignment: NAME must be a shell name, or one with a subscript. */
function isAssignment(w: Walk, node: SyntaxNode): boolean {
  return /^[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=/.test(text(w, node));
}

function visitDeclaration(w: Walk, node: SyntaxNode, ctx: WalkCtx, extra: SyntaxNode[] | null): void {
  const keyword = node.children.find((c) => !c.named);
  const words: Word[] = [literalWord(keyword ? keyword.type : "declare")];
  for (const c of node.children) {
    if (!c.named) continue;
    if (c.type === "variable_assignment") {
      words.push(assignmentWord(w, c, ctx));
    } else {
      words.push(w.resolver.resolveWord(c, ctx, 0));
    }
  }
  // Its range counts as a command's, for the same line breaks as a bare assignment below.
  w.commandRanges.push([node.start, node.end]);
  addUnit(w, words, extra ?? [], ctx, text(w, node), {});
}

/**
 * Visits a node of a kind that is handled on its own; false for the others, which the generic
 * descent takes (after the node kinds here that fall through to it).
 */
function visitSpecial(w: Walk, item: Item): boolean {
  const { node, ctx, extra } = item;
  switch (node.type) {
    case "command":
      command(w, node, ctx, extra);
      return true;
    case "redirected_statement":
      redirected(w, node, ctx, extra);
      return true;
    case "pipeline":
      visitPipeline(w, node, ctx, extra);
      return true;
    case "list": {
      if (extra === null) return false;
      // `a || b <<EOF`: the grammar hangs the here-doc on the list; it belongs to the last command.
      const parts = statementChildren(node);
      pushAll(
        w,
        parts.map((c, i) => ({ node: c, ctx, extra: i === parts.length - 1 ? extra : null })),
      );
      return true;
    }
    case "negated_command": {
      // `! sh <<EOF`: the grammar hangs the here-doc on the negation; it is the command's stdin.
      const inner = statementChildren(node);
      if (extra === null || inner.length !== 1) return false;
      w.stack.push({ node: inner[0]!, ctx, extra });
      return true;
    }
    case "command_substitution":
    case "process_substitution":
      if (item.opened === true) return false;
      // Reached by the generic scan, not through a word: give it its own container.
      substitution(w, node, ctx);
      return true;
    case "function_definition":
      visitFunction(w, node, ctx);
      return true;
    case "declaration_command":
      visitDeclaration(w, node, ctx, extra);
      return true;
    case "variable_assignment":
      // A statement of its own (`a=1`, or several in a row). Its range counts as a command's:
      // the grammar reads `$` before a line break as the start of an expansion and carries the
      // assignment into the next line (`a=$⏎rm -rf /` is `a=$rm` and more assignments after it),
      // where bash ends it at the line break; the glued-lines pass then judges the next line
      // on its own.
      w.commandRanges.push([node.start, node.end]);
      if (!isAssignment(w, node)) {
        // `9=/a` alone: not a name bash can assign, so bash runs it as a command.
        addUnit(w, [assignmentWord(w, node, ctx)], extra ?? [], ctx, text(w, node), {});
        return true;
      }
      w.assigns.push(w.resolver.assignment(node, ctx));
      return true;
    case "command_name":
      // Error recovery leaves bare command names under ERROR nodes.
      addUnit(w, [w.resolver.resolveWord(node, ctx, 0)], extra ?? [], ctx, text(w, node), {});
      return true;
    default:
      return false;
  }
}

function visit(w: Walk, item: Item): void {
  const { node, ctx, extra } = item;
  // A name in arithmetic is a variable whose value bash evaluates again (`x='a[$(rm y)]';
  // echo $((x))` runs rm), and to a login shell such as fish `((reboot))` is a command
  // substitution: only numbers and operators are proven.
  if (!w.arithmeticNames && arithmeticName(node, w.textOf)) w.arithmeticNames = true;
  if (visitSpecial(w, item)) return;
  if (extra !== null && extra.length > 0) addUnit(w, [], extra, ctx, extra.map(w.textOf).join(" "), {});
  if (LEAF_TYPES.has(node.type)) return;
  const children: Item[] = [];
  for (const c of node.children) {
    if (c.named && !LEAF_TYPES.has(c.type)) children.push({ node: c, ctx, extra: null });
  }
  pushAll(w, children);
}
