import { createRequire } from "node:module";
import type { Language, Parser, TreeCursor } from "web-tree-sitter";

/**
 * A syntax node copied out of the wasm heap. The classifier walks these plain
 * objects instead of web-tree-sitter nodes: every property read on a wasm node
 * crosses into the module, and the tree can be deleted right after the copy.
 */
export interface SyntaxNode {
  type: string;
  named: boolean;
  /** Field name in the parent (`name`, `argument`, `redirect`, `body` ...), or null. */
  field: string | null;
  /** UTF-16 offsets into the parsed source (web-tree-sitter parses JS strings as UTF-16). */
  start: number;
  end: number;
  children: SyntaxNode[];
}

export interface SyntaxTree {
  root: SyntaxNode;
  hasError: boolean;
  source: string;
}

export interface BashSyntax {
  /**
   * Parse `source`; null when tree-sitter gives no tree or the parse exceeded
   * its work budget. The wasm tree is always freed.
   */
  parse(source: string): SyntaxTree | null;
}

/**
 * Work budget of one parse, in progress-callback ticks: tree-sitter calls back
 * periodically while it works, about 10–20 times per KiB of ordinary shell
 * text but several times more on pathological input (thousands of `x|x|...`
 * stages). Past the budget the parse is cancelled and the caller falls back
 * to the pattern tables, which keeps the cost linear in the input.
 */
function tickBudget(length: number): number {
  return 32 + Math.ceil(length / 40);
}

/** Node kinds of a grammar, looked up by id: one wasm call per node instead of three. */
export interface NodeKinds {
  types: string[];
  named: boolean[];
  fields: (string | null)[];
}

export function nodeKinds(language: Language): NodeKinds {
  return {
    types: language.types,
    named: language.types.map((_, id) => language.nodeTypeIsNamed(id)),
    fields: language.fields,
  };
}

/**
 * Parse `source` within its work budget and copy the tree out of the wasm
 * heap; null when tree-sitter gives no tree or the budget ran out. The wasm
 * tree is always freed. Shared by the bash and Python grammars.
 */
export function parseBounded(parser: Parser, kinds: NodeKinds, source: string): SyntaxTree | null {
  // A previous parse that was cancelled or threw half-way must not be resumed.
  parser.reset();
  const budget = tickBudget(source.length);
  let ticks = 0;
  const tree = parser.parse(source, null, {
    progressCallback: () => {
      ticks++;
      return ticks > budget;
    },
  });
  if (tree === null) return null;
  try {
    const hasError = tree.rootNode.hasError;
    const cursor = tree.walk();
    try {
      return { root: copyTree(cursor, kinds), hasError, source };
    } finally {
      cursor.delete();
    }
  } finally {
    tree.delete();
  }
}

/** Load the wasm runtime and the bash grammar once; the returned object parses synchronously. */
export async function loadBashSyntax(): Promise<BashSyntax> {
  // Loaded here, not at module load: the wasm runtime initialises while the transport starts.
  const { Language, Parser } = await import("web-tree-sitter");
  await Parser.init();
  const wasmPath = createRequire(import.meta.url).resolve("tree-sitter-bash/tree-sitter-bash.wasm");
  const bash = await Language.load(wasmPath);
  const parser = new Parser();
  parser.setLanguage(bash);
  const kinds = nodeKinds(bash);
  return { parse: (source) => parseBounded(parser, kinds, source) };
}

/** Iterative pre-order copy: nesting depth of the input cannot overflow the JS stack. */
function copyTree(cursor: TreeCursor, kinds: NodeKinds): SyntaxNode {
  const root = makeNode(cursor, kinds);
  const parents: SyntaxNode[] = [root];
  if (!cursor.gotoFirstChild()) return root;
  for (;;) {
    const parent = parents[parents.length - 1]!;
    const node = makeNode(cursor, kinds);
    parent.children.push(node);
    if (cursor.gotoFirstChild()) {
      parents.push(node);
      continue;
    }
    while (!cursor.gotoNextSibling()) {
      if (!cursor.gotoParent()) return root;
      parents.pop();
      if (parents.length === 0) return root;
    }
  }
}

function makeNode(cursor: TreeCursor, kinds: NodeKinds): SyntaxNode {
  const id = cursor.nodeTypeId;
  const fieldId = cursor.currentFieldId;
  return {
    type: kinds.types[id] ?? cursor.nodeType,
    named: kinds.named[id] ?? cursor.nodeIsNamed,
    field: fieldId > 0 ? (kinds.fields[fieldId] ?? null) : null,
    start: cursor.startIndex,
    end: cursor.endIndex,
    children: [],
  };
}
