import type { FunctionDef, ParsedScript, Unit } from "./script.js";
import type { SyntaxNode, SyntaxTree } from "./syntax.js";
import { createWordResolver, type RedirectResult, type WalkCtx } from "./word-resolver.js";
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

/** A name, an expansion or a substitution: what arithmetic evaluates again, or what fish would run. */
const ARITHMETIC_NAME = /[A-Za-z_$`]/;

/**
 * Whether bash evaluates a name or an expansion as arithmetic here: `$((…))`, `((…))`, a C-style
 * for loop, an array subscript, or an operand of a numeric comparison in `[[ … ]]` (`-eq`, `-lt`,
 * …). A variable's value is evaluated again there, and `a[$(cmd)]` in it runs cmd.
 */
function arithmeticName(node: SyntaxNode, text: (n: SyntaxNode) => string): boolean {
  switch (node.type) {
    case "arithmetic_expansion":
    case "c_style_for_statement":
      return ARITHMETIC_NAME.test(
        text(node)
          .replace(/^\$?\(\(|\)\)$/g, "")
          .replace(/^for\b|\bdo\b[\s\S]*$/g, ""),
      );
    case "compound_statement":
      return node.children[0]?.type === "((" && ARITHMETIC_NAME.test(text(node).slice(2, -2));
    case "subscript": {
      const open = node.children.findIndex((c) => c.type === "[");
      return node.children.slice(open + 1, -1).some((c) => ARITHMETIC_NAME.test(text(c)));
    }
    case "test_command":
      // `[[ $x -eq 1 ]]` evaluates its operands; the `[`/test builtin only parses integers.
      return node.children[0]?.type === "[[" && numericComparisonOfName(node, text);
    default:
      return false;
  }
}

/** A `-eq`/`-lt`/… comparison below `node` with a name or an expansion as an operand. */
function numericComparisonOfName(node: SyntaxNode, text: (n: SyntaxNode) => string): boolean {
  const stack = [node];
  for (let n = stack.pop(); n !== undefined; n = stack.pop()) {
    const op = n.children.find((c) => c.type === "test_operator");
    if (n.type === "binary_expression" && op !== undefined && /^-(?:eq|ne|lt|le|gt|ge)$/.test(text(op))) {
      if (n.children.some((c) => c !== op && ARITHMETIC_NAME.test(text(c)))) return true;
    }
    stack.push(...n.children);
  }
  return false;
}

export function walkScript(tree: SyntaxTree): ParsedScript {
  const units: Unit[] = [];
  const functions: FunctionDef[] = [];
  const stack: Item[] = [];
  const parents: number[] = [];
  const dataRanges: [number, number][] = [];
  const commandRanges: [number, number][] = [];
  const assigns: { name: string; value: Word }[] = [];
  let arithmeticNames = false;
  let pipes = 0;
  const text = (n: SyntaxNode): string => tree.source.slice(n.start, n.end);

  const pushAll = (items: Item[]): void => {
    for (let i = items.length - 1; i >= 0; i--) stack.push(items[i]!);
  };

  // Substitutions and expansions met while resolving words wait here, so that they are
  // visited in source order right after the command that holds them.
  let pending: Item[] = [];

  const scan = (node: SyntaxNode, ctx: WalkCtx): void => {
    pending.push({ node, ctx, extra: null });
  };

  const substitution = (node: SyntaxNode, ctx: WalkCtx): number => {
    const id = parents.length;
    parents.push(ctx.container);
    pending.push({ node, ctx: { container: id, pipe: null, fn: ctx.fn }, extra: null, opened: true });
    return id;
  };

  const { resolveWord, resolveRedirects, assignment } = createWordResolver({
    source: tree.source,
    dataRanges,
    scan,
    substitution,
  });

  const addUnit = (
    words: Word[],
    redirectNodes: SyntaxNode[],
    ctx: WalkCtx,
    unitText: string,
    extra: Partial<Unit>,
  ) => {
    const res: RedirectResult = { redirects: [], stdin: null };
    resolveRedirects(redirectNodes, ctx, res);
    let shown = unitText;
    for (const r of res.redirects) if (!unitText.includes(r.text)) shown += ` ${r.text}`;
    units.push({
      words,
      assigns: extra.assigns ?? [],
      redirects: res.redirects,
      stdin: res.stdin,
      text: shown,
      pipe: ctx.pipe,
      container: ctx.container,
      fn: ctx.fn,
    });
  };

  const command = (node: SyntaxNode, ctx: WalkCtx, extra: SyntaxNode[] | null): void => {
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
        const w = resolveWord(c, ctx, 0);
        const prevEnd = ends[ends.length - 1];
        if (prevEnd !== undefined && prevEnd === c.start && words.length > 0) {
          words[words.length - 1] = joinWords(words[words.length - 1]!, w);
        } else {
          words.push(w);
        }
        ends[words.length - 1] = c.end;
      } else if (c.field === "redirect" || c.type.endsWith("_redirect")) {
        redirects.push(c);
      } else if (c.type === "variable_assignment") {
        assigns.push(assignment(c, ctx));
      } else if (c.named && c.type !== "comment") {
        later.push({ node: c, ctx, extra: null });
      }
    }
    if (extra) redirects.push(...extra);
    let end = node.end;
    for (const r of redirects) if (r.type === "file_redirect" && r.end > end) end = r.end;
    commandRanges.push([node.start, end]);
    addUnit(words, redirects, ctx, text(node), { assigns });
    pushAll(later);
  };

  const statementChildren = (node: SyntaxNode): SyntaxNode[] =>
    node.children.filter((c) => c.named && c.type !== "comment");

  const pipeline = (stages: SyntaxNode[], ctx: WalkCtx, lastExtra: SyntaxNode[] | null, attachAt: number) => {
    const id = pipes++;
    pushAll(
      stages.map((node, stage) => ({
        node,
        ctx: { ...ctx, pipe: { id, stage } },
        extra: stage === attachAt ? lastExtra : null,
      })),
    );
  };

  const redirected = (node: SyntaxNode, ctx: WalkCtx, extra: SyntaxNode[] | null): void => {
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
    pushAll(rights);
    if (body === undefined) {
      const first = redirects[0];
      if (first !== undefined)
        commandRanges.push([node.start, first.type === "heredoc_redirect" ? first.start : node.end]);
      addUnit([], redirects, ctx, text(node), {});
      return;
    }
    const own = body.type === "pipeline" ? statementChildren(body) : [body];
    if (continuation.length > 0 || own.length > 1) {
      pipeline([...own, ...continuation], ctx, redirects, own.length - 1);
    } else {
      stack.push({ node: body, ctx, extra: redirects });
    }
  };

  const visit = (item: Item): void => {
    const { node, ctx, extra } = item;
    // A name in arithmetic is a variable whose value bash evaluates again (`x='a[$(rm y)]';
    // echo $((x))` runs rm), and to a login shell such as fish `((reboot))` is a command
    // substitution: only numbers and operators are proven.
    if (!arithmeticNames && arithmeticName(node, text)) arithmeticNames = true;
    switch (node.type) {
      case "command":
        command(node, ctx, extra);
        return;
      case "redirected_statement":
        redirected(node, ctx, extra);
        return;
      case "pipeline": {
        const stages = statementChildren(node);
        const last = stages[stages.length - 1];
        if (last !== undefined && last.type === "list") {
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
          const fed = [
            ...stages.slice(0, -1),
            ...(head.type === "pipeline" ? statementChildren(head) : [head]),
          ];
          pipeline(fed, ctx, after.length === 0 ? extra : null, fed.length - 1);
          pushAll(after.map((c, i) => ({ node: c, ctx, extra: i === after.length - 1 ? extra : null })));
          return;
        }
        pipeline(stages, ctx, extra, stages.length - 1);
        return;
      }
      case "list":
        if (extra !== null) {
          // `a || b <<EOF`: the grammar hangs the here-doc on the list; it belongs to the last command.
          const parts = statementChildren(node);
          pushAll(parts.map((c, i) => ({ node: c, ctx, extra: i === parts.length - 1 ? extra : null })));
          return;
        }
        break;
      case "negated_command": {
        // `! sh <<EOF`: the grammar hangs the here-doc on the negation; it is the command's stdin.
        const inner = statementChildren(node);
        if (extra !== null && inner.length === 1) {
          stack.push({ node: inner[0]!, ctx, extra });
          return;
        }
        break;
      }
      case "command_substitution":
      case "process_substitution":
        if (item.opened !== true) {
          // Reached by the generic scan, not through a word: give it its own container.
          substitution(node, ctx);
          return;
        }
        break;
      case "function_definition": {
        const name = node.children.find((c) => c.field === "name");
        const fn = name ? text(name) : "";
        functions.push({ name: fn, text: text(node) });
        const inner: Item[] = [];
        for (const c of statementChildren(node)) {
          if (c.field === "name") continue;
          inner.push({ node: c, ctx: { ...ctx, fn }, extra: null });
        }
        pushAll(inner);
        return;
      }
      case "declaration_command": {
        const keyword = node.children.find((c) => !c.named);
        const words: Word[] = [literalWord(keyword ? keyword.type : "declare")];
        for (const c of node.children) {
          if (!c.named) continue;
          if (c.type === "variable_assignment") {
            const a = assignment(c, ctx);
            words.push({ ...a.value, value: `${a.name}=${a.value.value}`, text: text(c) });
          } else {
            words.push(resolveWord(c, ctx, 0));
          }
        }
        // Its range counts as a command's, for the same line breaks as a bare assignment below.
        commandRanges.push([node.start, node.end]);
        addUnit(words, extra ?? [], ctx, text(node), {});
        return;
      }
      case "variable_assignment":
        // A statement of its own (`a=1`, or several in a row). Its range counts as a command's:
        // the grammar reads `$` before a line break as the start of an expansion and carries the
        // assignment into the next line (`a=$⏎rm -rf /` is `a=$rm` and more assignments after it),
        // where bash ends it at the line break; the glued-lines pass then judges the next line
        // on its own.
        commandRanges.push([node.start, node.end]);
        assigns.push(assignment(node, ctx));
        return;
      case "command_name":
        // Error recovery leaves bare command names under ERROR nodes.
        addUnit([resolveWord(node, ctx, 0)], extra ?? [], ctx, text(node), {});
        return;
      default:
        break;
    }
    if (extra !== null && extra.length > 0) addUnit([], extra, ctx, extra.map(text).join(" "), {});
    if (LEAF_TYPES.has(node.type)) return;
    const children: Item[] = [];
    for (const c of node.children) {
      if (c.named && !LEAF_TYPES.has(c.type)) children.push({ node: c, ctx, extra: null });
    }
    pushAll(children);
  };

  stack.push({ node: tree.root, ctx: { container: -1, pipe: null, fn: null }, extra: null });
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    visit(item);
    if (pending.length > 0) {
      pushAll(pending);
      pending = [];
    }
  }
  return {
    units,
    functions,
    parents,
    hasError: tree.hasError,
    dataRanges,
    commandRanges,
    assigns,
    arithmeticNames,
  };
}
