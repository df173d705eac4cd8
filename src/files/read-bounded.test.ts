import { mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { FILE_TOO_LARGE, readBoundedFile } from "./read-bounded.js";

const root = mkdtempSync(join(tmpdir(), "relay-bounded-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("readBoundedFile", () => {
  it("reads a file up to its bound exactly", () => {
    const path = join(root, "exact");
    writeFileSync(path, "x".repeat(64));
    expect(readBoundedFile(path, { maxBytes: 64, what: "test file" })?.toString()).toBe("x".repeat(64));
  });

  it("refuses one byte over the bound, naming the file, its size and the bound", () => {
    const path = join(root, "over");
    writeFileSync(path, "x".repeat(65));
    expect(() => readBoundedFile(path, { maxBytes: 64, what: "test file" })).toThrow(
      expect.objectContaining({
        type: "ValueError",
        code: FILE_TOO_LARGE,
        message: `test file ${path} is 65 bytes, more than the 64 accepted`,
      }),
    );
  });

  it("refuses a huge file by its size, without reading it", () => {
    // A sparse 3 GiB file: reading it whole would fail (Node reads at most 2 GiB at once) or take long.
    const path = join(root, "huge");
    writeFileSync(path, "");
    truncateSync(path, 3 * 1024 ** 3);
    const started = performance.now();
    expect(() => readBoundedFile(path, { maxBytes: 1024, what: "" })).toThrow(
      `${path} is ${3 * 1024 ** 3} bytes, more than the 1024 accepted`,
    );
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it("answers null for a missing file and throws what the system says otherwise", () => {
    expect(readBoundedFile(join(root, "absent"), { maxBytes: 10, what: "" })).toBeNull();
    const dir = join(root, "dir");
    mkdirSync(dir);
    expect(() => readBoundedFile(dir, { maxBytes: 1 << 20, what: "" })).toThrow(/EISDIR/);
  });
});
