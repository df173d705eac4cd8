import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./helpers/server.js";

/**
 * No module of src/ reaches itself through its relative imports. A cycle makes the order in which
 * modules are evaluated decide whether a name is defined yet, and it ties files together that a
 * reader wants to understand one after the other; a piece two modules both need belongs in a lower
 * module, or is handed in. Static imports and re-exports, side-effect imports and `import()` all
 * count, `import type` too: a type cycle is still a cycle in the design.
 */

const SRC = join(REPO_ROOT, "src");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [path] : [];
  });
}

const IMPORTS = [
  /^\s*(?:import|export)\b[^;]*?\bfrom\s+"([^"]+)"/gms,
  /^\s*import\s+"([^"]+)"/gm,
  /\bimport\s*\(\s*"([^"]+)"\s*\)/g,
];

/** The files of the tree that `file` imports by a relative path (`./x.js` is the source `./x.ts`). */
function importedFiles(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const specs = IMPORTS.flatMap((pattern) => [...text.matchAll(pattern)].map((m) => m[1] ?? ""));
  return specs
    .filter((spec) => spec.startsWith("."))
    .map((spec) => resolve(dirname(file), spec.replace(/\.js$/, ".ts")))
    .filter((path) => existsSync(path));
}

/**
 * Every import cycle of `graph`, one per strongly connected component (Tarjan), each written as a
 * walk from its first file back to that file: `a -> b -> a`.
 */
function importCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component = new Set<string>();
    for (let top = stack.pop(); top !== undefined; top = top === node ? undefined : stack.pop()) {
      onStack.delete(top);
      component.add(top);
    }
    const selfLoop = (graph.get(node) ?? []).includes(node);
    if (component.size > 1 || selfLoop) cycles.push(walkBack(graph, node, component));
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return cycles;
}

/** A shortest walk from `start` back to itself inside one component (breadth first). */
function walkBack(
  graph: ReadonlyMap<string, readonly string[]>,
  start: string,
  component: ReadonlySet<string>,
): string[] {
  const from = new Map<string, string>();
  const queue = [start];
  for (let at = 0; at < queue.length; at++) {
    const node = queue[at]!;
    for (const next of graph.get(node) ?? []) {
      if (next === start) {
        const walk = [node];
        for (let back = from.get(node); back !== undefined; back = from.get(back)) walk.unshift(back);
        return [...walk, start];
      }
      if (component.has(next) && !from.has(next)) {
        from.set(next, node);
        queue.push(next);
      }
    }
  }
  return [start, start];
}

describe("import cycles", () => {
  it("no module of src/ imports itself, directly or through others", () => {
    const graph = new Map(sourceFiles(SRC).map((file) => [file, importedFiles(file)]));
    const cycles = importCycles(graph).map((walk) =>
      walk.map((file) => relative(REPO_ROOT, file)).join(" -> "),
    );
    expect(cycles).toEqual([]);
  });
});

describe("the cycle finder", () => {
  const graph = (edges: Record<string, string[]>) => new Map(Object.entries(edges));

  it("finds a circle of two and of three files, and a file that imports itself", () => {
    expect(importCycles(graph({ a: ["b"], b: ["a"] }))).toEqual([["a", "b", "a"]]);
    expect(importCycles(graph({ a: ["b"], b: ["c"], c: ["a", "d"], d: [] }))).toEqual([["a", "b", "c", "a"]]);
    expect(importCycles(graph({ a: ["a"] }))).toEqual([["a", "a"]]);
  });

  it("passes layers, diamonds and shared leaves", () => {
    expect(importCycles(graph({ a: ["b", "c"], b: ["d"], c: ["d"], d: [] }))).toEqual([]);
  });

  it("reports each circle once, with the files that close it", () => {
    const found = importCycles(graph({ a: ["b"], b: ["a"], c: ["d"], d: ["e"], e: ["c"], f: ["a"] }));
    expect(found).toHaveLength(2);
    expect(found).toContainEqual(["a", "b", "a"]);
    expect(found.map((walk) => walk.length)).toEqual(expect.arrayContaining([3, 4]));
  });
});
