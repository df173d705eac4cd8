import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Language, Parser } from "web-tree-sitter";
import { type NodeKinds, nodeKinds, parseBounded, type SyntaxTree } from "../shell/syntax.js";

/**
 * The tree-sitter Python grammar, loaded on the first Python program rather
 * than at start-up: most calls are shell text, and the grammar's wasm module
 * takes about 10 ms to compile. The compile is synchronous (the classifier
 * is), and happens once per classifier.
 */
export interface PythonSyntax {
  /** Parse `source`; null when tree-sitter gives no tree or the parse exceeded its work budget. */
  parse(source: string): SyntaxTree | null;
}

type TreeSitter = typeof import("web-tree-sitter");
type WasmModule = Parameters<TreeSitter["Language"]["loadSync"]>[0];

/** Node's global WebAssembly, which the project's type library (node only, no DOM) does not declare as a value. */
const wasm = (globalThis as unknown as { WebAssembly: { Module: new (bytes: Uint8Array) => WasmModule } })
  .WebAssembly;

/**
 * Prepare the loader. It only imports the runtime the bash grammar already
 * initialised (a cached module) and resolves the grammar's path; nothing is
 * read or compiled until `parse` is first called.
 */
export async function preparePythonSyntax(): Promise<PythonSyntax> {
  const runtime: TreeSitter = await import("web-tree-sitter");
  const wasmPath = createRequire(import.meta.url).resolve("tree-sitter-python/tree-sitter-python.wasm");
  let loaded: { parser: Parser; kinds: NodeKinds } | null = null;
  const load = () => {
    if (loaded !== null) return loaded;
    const language: Language = runtime.Language.loadSync(new wasm.Module(readFileSync(wasmPath)));
    const parser = new runtime.Parser();
    parser.setLanguage(language);
    loaded = { parser, kinds: nodeKinds(language) };
    return loaded;
  };
  return {
    parse(source: string): SyntaxTree | null {
      const { parser, kinds } = load();
      return parseBounded(parser, kinds, source);
    },
  };
}
