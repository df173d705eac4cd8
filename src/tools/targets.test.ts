import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { targetLines } from "../policy/index.js";
import { cwdTargets, localPathTargets, remotePathTargets } from "./targets.js";

describe("path targets (ADR 0020)", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "relay-targets-"));
    mkdirSync(join(dir, "real", "sub"), { recursive: true });
    mkdirSync(join(dir, "plain"));
    symlinkSync(join(dir, "real"), join(dir, "link"));
    symlinkSync(join(dir, "real", "sub"), join(dir, "plain", "down"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const real = () => join(dir, "real");

  it("an empty cwd names nothing", () => {
    expect(cwdTargets("")).toEqual([]);
  });

  it.each([
    ["absolute", (d: string) => join(d, "real")],
    ["trailing slash", (d: string) => `${join(d, "real")}/`],
    ["dot-dot", (d: string) => join(d, "plain", "..", "real")],
    ["relative to the server", (d: string) => relative(process.cwd(), join(d, "real"))],
    ["a symlink", (d: string) => join(d, "link")],
    ["a symlink then dot-dot, resolved physically", (d: string) => `${join(d, "plain", "down")}/..`],
  ])("%s reaches the real directory", (_label, spell) => {
    const given = spell(dir);
    const lines = targetLines(cwdTargets(given));
    expect(lines[0]).toBe(`cwd=${given}`);
    expect(lines).toContain(`cwd=${real()}`);
  });

  it("a path that does not exist yet resolves through its parent", () => {
    const lines = targetLines(localPathTargets("local", join(dir, "link", "new-file")));
    expect(lines).toContain(`local=${join(real(), "new-file")}`);
  });

  it("a path that cannot be resolved keeps its typed and lexical forms", () => {
    const lines = targetLines(localPathTargets("local", "/nonexistent-relay/a/../b/"));
    expect(lines).toEqual(["local=/nonexistent-relay/a/../b/", "local=/nonexistent-relay/b"]);
  });

  it("a remote path is matched as typed and normalised lexically", () => {
    expect(targetLines(remotePathTargets("/etc/../etc//shadow/"))).toEqual([
      "remote=/etc/../etc//shadow/",
      "remote=/etc/shadow",
    ]);
    expect(targetLines(remotePathTargets("notes.txt"))).toEqual(["remote=notes.txt"]);
    expect(remotePathTargets("")).toEqual([]);
  });
});
