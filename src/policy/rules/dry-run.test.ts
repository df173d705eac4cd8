import { describe, expect, it } from "vitest";
import { literalWord } from "../shell/words.js";
import { Args } from "./args.js";
import { isDryRun, shortFlag } from "./dry-run.js";

const args = (...values: string[]) => new Args(values.map((v) => literalWord(v)));

describe("shortFlag", () => {
  it("finds a letter in a cluster, but not inside an option's value", () => {
    expect(shortFlag(args("-avn", "a/", "b/"), "n")).toBe(true);
    expect(shortFlag(args("-Cn", "all"), "n", "C")).toBe(false);
    expect(shortFlag(args("-C", "dir", "-n"), "n", "C")).toBe(true);
    expect(shortFlag(args("--", "-n"), "n")).toBe(false);
  });
});

describe("isDryRun", () => {
  it.each([
    ["rsync", ["-a", "--delete", "a/", "b/", "-n"]],
    ["git", ["-C", "repo", "push", "-n", "--force"]],
    ["mkfs.ext4", ["-n", "/dev/sdb1"]],
    ["mkfs", ["-t", "xfs", "-N", "/dev/sdb1"]],
    ["apt-get", ["-ys", "purge", "x"]],
    ["kubectl", ["delete", "ns", "x", "--dry-run=server"]],
    ["zfs", ["destroy", "-rnv", "tank/x"]],
    ["lvremove", ["-ft", "vg/lv"]],
    ["pip3", ["install", "--dry-run", "x"]],
    ["systemctl", ["--dry-run", "reboot"]],
  ])("%s %j is a dry run", (name, values) => {
    expect(isDryRun(name, args(...values))).toBe(true);
  });

  it.each([
    // the same letters mean something else here
    ["mkfs.vfat", ["-n", "LABEL", "/dev/sdb1"]],
    ["mkfs", ["-t", "vfat", "-n", "LABEL", "/dev/sdb1"]],
    ["zpool", ["destroy", "-n", "tank"]],
    ["gsutil", ["cp", "-n", "a", "gs://b"]],
    ["umount", ["-f", "/mnt"]],
    ["zypper", ["-D", "/etc/zypp/repos.d", "remove", "x"]],
    // the flag exists but this verb ignores it
    ["systemctl", ["--dry-run", "stop", "sshd"]],
    // an explicit real run
    ["kubectl", ["delete", "ns", "x", "--dry-run=none"]],
    // no dry run at all
    ["rm", ["-rf", "/x", "--dry-run"]],
    ["dd", ["if=/dev/zero", "of=/dev/sda", "-n"]],
  ])("%s %j is not a dry run", (name, values) => {
    expect(isDryRun(name, args(...values))).toBe(false);
  });
});
