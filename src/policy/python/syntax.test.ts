import { afterAll, describe, expect, it } from "vitest";
import { createClassifier } from "../index.js";

/** The project's type library has no DOM, so WebAssembly is reached through globalThis. */
type Wasm = Record<"Module" | "compile" | "instantiate", (...args: unknown[]) => unknown>;
const wasm = (globalThis as unknown as { WebAssembly: Wasm }).WebAssembly;
const originals = { Module: wasm.Module, compile: wasm.compile, instantiate: wasm.instantiate };
let compiled = 0;
// Counting proxies, not subclasses: the wasm runtime's `instanceof WebAssembly.Module` checks still hold.
for (const key of ["Module", "compile", "instantiate"] as const) {
  wasm[key] = new Proxy(originals[key], {
    construct(target, args, newTarget) {
      compiled++;
      return Reflect.construct(target as never, args, newTarget);
    },
    apply(target, self, args) {
      // instantiate() of an already compiled module compiles nothing.
      if (!(args[0] instanceof (originals.Module as never))) compiled++;
      return Reflect.apply(target, self, args);
    },
  });
}

afterAll(() => {
  Object.assign(wasm, originals);
});

describe("the Python grammar", () => {
  it("is compiled on the first Python program, not at start-up, and once", async () => {
    const classifier = await createClassifier();
    // The wasm runtime and the bash grammar.
    const atStart = compiled;
    classifier.classify("ls -la; rm -rf /tmp/x");
    expect(compiled).toBe(atStart);
    expect(classifier.classify("python3 -c 'import shutil; shutil.rmtree(\"/x\")'")).toMatchObject({
      tier: 3,
      basis: "file_destruction",
    });
    expect(compiled).toBe(atStart + 1);
    classifier.classify("print(1)", {
      input: { language: "python", program: "print(1)", stdin: "", env: "" },
    });
    expect(compiled).toBe(atStart + 1);
    expect(atStart).toBe(2);
  });
});
