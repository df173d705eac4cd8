import { createRequire } from "node:module";
import { Language, Parser, type TreeCursor } from "web-tree-sitter";

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
  missing: boolean;
  children: SyntaxNode[];
}

export interface SyntaxTree {
  root: SyntaxNode;
  hasError: boolean;
  source: string;
}

export interface BashSyntax {
  /** Parse `source`; null when tree-sitter gives no tree. The wasm tree is always freed. */
  parse(source: string): SyntaxTree | null;
}

export function nodeText(tree: SyntaxTree, node: SyntaxNode): string {
  return tree.source.slice(node.start, node.end);
}

/** Load the wasm runtime and the bash grammar once; the returned object parses synchronously. */
export async function loadBashSyntax(): Promise<BashSyntax> {
  await Parser.init();
  const wasmPath = createRequire(import.meta.url).resolve("tree-sitter-bash/tree-sitter-bash.wasm");
  const bash = await Language.load(wasmPath);
  const parser = new Parser();
  parser.setLanguage(bash);
  return {
    parse(source: string): SyntaxTree | null {
      // A previous parse that threw half-way must not be resumed.
      parser.reset();
      const tree = parser.parse(source);
      if (tree === null) return null;
      try {
        const hasError = tree.rootNode.hasError;
        const cursor = tree.walk();
        try {
          return { root: copyTree(cursor), hasError, source };
        } finally {
          cursor.delete();
        }
      } finally {
        tree.delete();
      }
    },
  };
}

/** Iterative pre-order copy: nesting depth of the input cannot overflow the JS stack. */
function copyTree(cursor: TreeCursor): SyntaxNode {
  const root = makeNode(cursor, null);
  const parents: SyntaxNode[] = [root];
  if (!cursor.gotoFirstChild()) return root;
  for (;;) {
    const parent = parents[parents.length - 1]!;
    const node = makeNode(cursor, cursor.currentFieldName);
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

function makeNode(cursor: TreeCursor, field: string | null): SyntaxNode {
  return {
    type: cursor.nodeType,
    named: cursor.nodeIsNamed,
    field,
    start: cursor.startIndex,
    end: cursor.endIndex,
    missing: cursor.nodeIsMissing,
    children: [],
  };
}
