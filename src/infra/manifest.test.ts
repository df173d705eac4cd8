import { describe, expect, it } from "vitest";
import {
  buildManifest,
  compareWithManifest,
  MAX_LISTED_BYTES,
  MAX_LISTED_DIFFERENCES,
  manifestDigest,
  manifestListing,
  parseManifest,
} from "./manifest.js";

const H = (c: string) => c.repeat(64);

const manifest = buildManifest(
  ["site"],
  ["site/b", "site"],
  [
    { path: "site/b/two", size: 2, sha256: H("b") },
    { path: "site/one", size: 1, sha256: H("a") },
  ],
);

describe("manifest", () => {
  it("is sorted, totalled, and its digest does not depend on the order it was built in", () => {
    expect(manifest.directories).toEqual(["site", "site/b"]);
    expect(manifest.files.map((f) => f.path)).toEqual(["site/b/two", "site/one"]);
    expect([manifest.total_files, manifest.total_bytes]).toEqual([2, 3]);
    const again = buildManifest(["site"], ["site", "site/b"], [...manifest.files].reverse());
    expect(manifestDigest(again)).toBe(manifestDigest(manifest));
    const changed = buildManifest(["site"], ["site", "site/b"], [{ ...manifest.files[0]!, sha256: H("c") }]);
    expect(manifestDigest(changed)).not.toBe(manifestDigest(manifest));
  });

  it("is read back only when it carries the digest it is stored under", () => {
    const text = JSON.stringify(manifest);
    expect(parseManifest(text, manifestDigest(manifest))).toEqual(manifest);
    expect(parseManifest(text.replace(H("a"), H("d")), manifestDigest(manifest))).toBeNull();
    expect(parseManifest("{", manifestDigest(manifest))).toBeNull();
    expect(parseManifest('{"version":1}', manifestDigest(manifest))).toBeNull();
  });

  it("compares: equal, missing, extra, size, hash and type", () => {
    expect(compareWithManifest(manifest, manifestListing(manifest)).differences).toEqual([]);
    const found = {
      directories: new Set(["site", "site/one"]),
      files: new Map([
        ["site/b/two", { size: 2, sha256: H("e") }],
        ["site/planted", { size: 9 }],
      ]),
    };
    const { differences, counts } = compareWithManifest(manifest, found);
    expect(differences).toEqual([
      { path: "site/b", kind: "missing" },
      { path: "site/b/two", kind: "hash" },
      { path: "site/one", kind: "type" },
      { path: "site/planted", kind: "extra" },
    ]);
    expect(counts).toEqual({ missing: 1, extra: 1, size: 0, hash: 1, type: 1 });
    const sized = compareWithManifest(manifest, {
      directories: new Set(["site", "site/b"]),
      files: new Map([
        ["site/b/two", { size: 3 }],
        ["site/one", { size: 1 }],
      ]),
    });
    expect(sized.differences).toEqual([{ path: "site/b/two", kind: "size" }]);
  });

  it("lists differences within a byte bound too, however long the paths", () => {
    const long = (i: number) => `site/${String(i).padStart(4, "0")}${"x".repeat(3000)}`;
    const files = new Map(Array.from({ length: 10 }, (_, i) => [long(i), { size: 1 }] as const));
    const result = compareWithManifest(manifest, { directories: new Set(["site", "site/b"]), files });
    expect(result.differences.length).toBeLessThan(5);
    expect(result.differences.reduce((n, d) => n + d.path.length, 0)).toBeLessThanOrEqual(MAX_LISTED_BYTES);
    expect(result.counts.extra).toBe(10);
  });

  it("lists a bounded number of differences and counts them all", () => {
    const files = new Map(Array.from({ length: 500 }, (_, i) => [`site/x${i}`, { size: 1 }] as const));
    const result = compareWithManifest(manifest, { directories: new Set(["site", "site/b"]), files });
    expect(result.differences).toHaveLength(MAX_LISTED_DIFFERENCES);
    expect(result.counts.extra).toBe(500);
    expect(result.counts.missing).toBe(2);
  });
});
