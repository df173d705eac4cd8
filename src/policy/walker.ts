import type { FunctionDef, ParsedScript, PipeRef, Redirect, StdinFeed, Unit } from "./script.js";
import type { SyntaxNode, SyntaxTree } from "./syntax.js";
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
 * Turns a bash syntax tree into the flat list of simple commands the rules
 * look at. The walk is iterative (an explicit stack) so that `a && b && …`
 * nested a hundred thousand levels deep cannot overflow the JS stack, and
 * every node is visited once, which keeps it linear in the input.
 */

interface Ctx {
  container: number;
  pipe: PipeRef | null;
  fn: string | null;
}

interface Item {
  node: SyntaxNode;
  ctx: Ctx;
  /** Redirections that the grammar attached to an enclosing statement. */
  extra: SyntaxNode[] | null;
  /** A substitution whose container id is already allocated. */
  opened?: boolean;
}

/** Word nesting beyond this is treated as unknown (and still scanned for substitutions). */
const MAX_WORD_DEPTH = 32;

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

const REDIRECT_OPS = new Set([">", ">>", ">|", "&>", "&>>", "<>", "<", ">&", "<&", ">&-", "<&-"]);

export function walkScript(tree: SyntaxTree): ParsedScript {
  const units: Unit[] = [];
  const functions: FunctionDef[] = [];
  const stack: Item[] = [];
  const parents: number[] = [];
  const dataRanges: [number, number][] = [];
  const commandRanges: [number, number][] = [];
  const data = (node: SyntaxNode): void => {
    if (tree.source.includes("\n", node.start) && tree.source.indexOf("\n", node.start) < node.end) {
      dataRanges.push([node.start, node.end]);
    }
  };
  let pipes = 0;
  const text = (n: SyntaxNode): string => tree.source.slice(n.start, n.end);

  const pushAll = (items: Item[]): void => {
    for (let i = items.length - 1; i >= 0; i--) stack.push(items[i]!);
  };

  // Substitutions and expansions met while resolving words wait here, so that they are
  // visited in source order right after the command that holds them.
  let pending: Item[] = [];

  const scan = (node: SyntaxNode, ctx: Ctx): void => {
    pending.push({ node, ctx, extra: null });
  };

  const substitution = (node: SyntaxNode, ctx: Ctx): number => {
    const id = parents.length;
    parents.push(ctx.container);
    pending.push({ node, ctx: { container: id, pipe: null, fn: ctx.fn }, extra: null, opened: true });
    return id;
  };

  const resolveParts = (parts: SyntaxNode[], ctx: Ctx, depth: number, raw: string): Word => {
    let word: Word | null = null;
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i]!;
      let piece: Word;
      if (part.named) {
        piece = resolveWord(part, ctx, depth + 1);
      } else if (part.type === "$" && parts[i + 1]?.type === "string") {
        continue; // `$"..."` is a translated string: the `$` adds nothing
      } else {
        piece = literalWord(text(part));
      }
      word = word === null ? piece : joinWords(word, piece);
    }
    const out = word ?? literalWord("");
    return { ...out, text: raw };
  };

  const resolveWord = (node: SyntaxNode, ctx: Ctx, depth: number): Word => {
    const raw = text(node);
    if (depth > MAX_WORD_DEPTH) {
      scan(node, ctx);
      return dynamicWord(raw);
    }
    switch (node.type) {
      case "word":
        return { ...literalWord(unescapeBare(raw), raw), glob: hasGlobChars(raw) };
      case "raw_string":
        data(node);
        return literalWord(raw.slice(1, -1), raw);
      case "ansi_c_string":
        data(node);
        return literalWord(decodeAnsiC(raw.slice(2, -1)), raw);
      case "string_content":
        return literalWord(unescapeDouble(raw), raw);
      case "string":
      case "translated_string": {
        data(node);
        const parts = node.children.filter((c) => c.named);
        return parts.length === 0 ? literalWord("", raw) : resolveParts(parts, ctx, depth, raw);
      }
      case "concatenation":
      case "command_name":
        return resolveParts(node.children, ctx, depth, raw);
      case "number":
        if (node.children.some((c) => c.named)) return resolveParts(node.children, ctx, depth, raw);
        return literalWord(raw);
      case "brace_expression":
        return { ...literalWord(raw), glob: true };
      case "ERROR":
        // Junk the grammar could not place is not an expansion; still look inside for substitutions.
        scan(node, ctx);
        return literalWord(raw);
      case "command_substitution":
      case "process_substitution": {
        const id = substitution(node, ctx);
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
        scan(node, ctx);
        // An "expansion" the grammar built around junk it could not place is error recovery, not `$x`.
        return node.children.some((c) => c.type === "ERROR") ? literalWord(raw) : dynamicWord(raw);
    }
  };

  const redirectOp = (node: SyntaxNode): string => {
    for (const c of node.children) if (!c.named && REDIRECT_OPS.has(c.type)) return c.type;
    return ">";
  };

  interface RedirectResult {
    redirects: Redirect[];
    stdin: StdinFeed | null;
  }

  const resolveRedirects = (nodes: SyntaxNode[], ctx: Ctx, out: RedirectResult): void => {
    for (const r of nodes) {
      if (r.type === "file_redirect") {
        const fdNode = r.children.find((c) => c.type === "file_descriptor");
        const dest = r.children.filter((c) => c.field === "destination");
        let target: Word | null = null;
        for (const d of dest) {
          const w = resolveWord(d, ctx, 0);
          target = target === null ? w : joinWords(target, w);
        }
        out.redirects.push({ op: redirectOp(r), fd: fdNode ? text(fdNode) : null, target, text: text(r) });
      } else if (r.type === "herestring_redirect") {
        const content = r.children.find((c) => c.named && c.type !== "file_descriptor");
        const w = content ? resolveWord(content, ctx, 0) : literalWord("");
        out.redirects.push({ op: "<<<", fd: null, target: null, text: text(r) });
        out.stdin = { text: `${w.value}\n`, dynamic: w.dynamic, subst: w.subst };
      } else if (r.type === "heredoc_redirect") {
        const start = r.children.find((c) => c.type === "heredoc_start");
        const body = r.children.find((c) => c.type === "heredoc_body");
        const quoted = start !== undefined && /['"\\]/.test(text(start));
        const subst: number[] = [];
        let dynamic = false;
        if (body && !quoted) {
          for (const c of body.children) {
            if (c.type === "command_substitution") subst.push(substitution(c, ctx));
            else if (c.type === "expansion" || c.type === "simple_expansion") {
              dynamic = true;
              scan(c, ctx);
            }
          }
        }
        out.redirects.push({
          op: r.children.find((c) => c.type === "<<" || c.type === "<<-")?.type ?? "<<",
          fd: null,
          target: null,
          text: start ? `<<${text(start)}` : "<<",
        });
        // Lines of a here-doc body start at the range start: include the newline before it.
        if (body) dataRanges.push([body.start - 1, body.end]);
        out.stdin = { text: body ? text(body) : "", dynamic: dynamic || subst.length > 0, subst };
        const nested = r.children.filter((c) => c.field === "redirect");
        if (nested.length > 0) resolveRedirects(nested, ctx, out);
      } else {
        scan(r, ctx);
      }
    }
  };

  const addUnit = (
    words: Word[],
    redirectNodes: SyntaxNode[],
    ctx: Ctx,
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

  const command = (node: SyntaxNode, ctx: Ctx, extra: SyntaxNode[] | null): void => {
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

  const assignment = (node: SyntaxNode, ctx: Ctx): { name: string; value: Word } => {
    const nameNode = node.children.find((c) => c.field === "name");
    const valueNode = node.children.find((c) => c.field === "value");
    const value = valueNode ? resolveWord(valueNode, ctx, 0) : literalWord("");
    return { name: nameNode ? text(nameNode) : "", value };
  };

  const statementChildren = (node: SyntaxNode): SyntaxNode[] =>
    node.children.filter((c) => c.named && c.type !== "comment");

  const pipeline = (stages: SyntaxNode[], ctx: Ctx, lastExtra: SyntaxNode[] | null, attachAt: number) => {
    const id = pipes++;
    pushAll(
      stages.map((node, stage) => ({
        node,
        ctx: { ...ctx, pipe: { id, stage } },
        extra: stage === attachAt ? lastExtra : null,
      })),
    );
  };

  const redirected = (node: SyntaxNode, ctx: Ctx, extra: SyntaxNode[] | null): void => {
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
    switch (node.type) {
      case "command":
        command(node, ctx, extra);
        return;
      case "redirected_statement":
        redirected(node, ctx, extra);
        return;
      case "pipeline": {
        const stages = statementChildren(node);
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
        addUnit(words, extra ?? [], ctx, text(node), {});
        return;
      }
      case "variable_assignment":
        assignment(node, ctx);
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
  return { units, functions, parents, hasError: tree.hasError, dataRanges, commandRanges };
}
