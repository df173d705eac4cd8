import { describe, expect, it } from "vitest";
import { ptyBinding } from "./pty-binding.js";

describe("ptyBinding", () => {
  it("loads node-pty's native half with the entry points the local transport calls", () => {
    const binding = ptyBinding();
    expect(typeof binding.fork).toBe("function");
    expect(typeof binding.resize).toBe("function");
    // Node's module cache hands out the same binding every time.
    expect(ptyBinding()).toBe(binding);
  });
});
