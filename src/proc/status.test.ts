import { describe, expect, it } from "vitest";
import { parseStatusIdentity, readSupplementaryGroups } from "./status.js";

const SAMPLE = [
  "Name:\tnode",
  "Umask:\t0022",
  "Uid:\t1001\t1001\t1001\t1001",
  "Gid:\t1001\t1001\t1001\t1001",
  "FDSize:\t64",
  "Groups:\t27 100 1001 ",
  "",
].join("\n");

describe("parseStatusIdentity", () => {
  it("reads the uid, gid and supplementary group lines", () => {
    expect(parseStatusIdentity(SAMPLE)).toEqual({
      uids: [1001, 1001, 1001, 1001],
      gids: [1001, 1001, 1001, 1001],
      groups: [27, 100, 1001],
    });
  });

  it("takes an empty Groups line as no supplementary groups", () => {
    expect(parseStatusIdentity(SAMPLE.replace("Groups:\t27 100 1001 ", "Groups:\t"))?.groups).toEqual([]);
  });

  it("refuses a text without the lines or with a word that is not an id", () => {
    expect(parseStatusIdentity("Name:\tx\n")).toBeNull();
    expect(parseStatusIdentity(SAMPLE.replace("27 100", "27 -1"))).toBeNull();
    expect(parseStatusIdentity(SAMPLE.replace("27 100", "27 4294967296"))).toBeNull();
    expect(parseStatusIdentity(SAMPLE.replace("Uid:\t1001\t1001\t1001\t1001", "Uid:\t1001"))).toBeNull();
  });
});

describe("readSupplementaryGroups", () => {
  it("answers the groups of this process when the uid matches", () => {
    const euid = process.geteuid?.() ?? 0;
    const groups = readSupplementaryGroups(process.pid, euid);
    expect(groups).not.toBeNull();
    // getgroups(2) may add the effective gid; the status line is the supplementary list itself.
    const own = new Set(process.getgroups?.() ?? []);
    for (const group of groups ?? []) expect(own.has(group)).toBe(true);
  });

  it("answers null when the process no longer has the uid the kernel reported", () => {
    const euid = process.geteuid?.() ?? 0;
    expect(readSupplementaryGroups(process.pid, euid + 1)).toBeNull();
  });

  it("answers null for a pid that is not a process", () => {
    expect(readSupplementaryGroups(0, 0)).toBeNull();
    expect(readSupplementaryGroups(2 ** 30, 0)).toBeNull();
  });
});
