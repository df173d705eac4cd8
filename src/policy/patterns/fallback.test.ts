import { describe, expect, it } from "vitest";
import { fallbackClassify } from "./fallback.js";

const tierOf = (text: string) => fallbackClassify(text)?.tier ?? 1;

describe("fallback pattern tables", () => {
  it("fires Tier-3 alternatives only at a token start", () => {
    expect(tierOf("reboot")).toBe(3);
    expect(tierOf("echo theshutdown")).toBe(1);
    expect(tierOf("cat graceful-shutdown.md")).toBe(3); // documented Python tradeoff
    expect(tierOf("éreboot")).toBe(1); // Unicode letters are word characters, as in Python
    expect(tierOf("RM -RF /")).toBe(3);
  });

  it("ports the Tier-3 families of docs/wire-contract.md §5.6", () => {
    for (const text of [
      "rm -rf /x",
      "rm -vf x",
      "rm a b c --force /x",
      "mkfs.ext4 /dev/sdb1",
      "dd if=/dev/zero of=/dev/sda",
      "echo > /dev/hda",
      "init 6",
      "passwd root",
      "drop table users",
      "git push origin main --force",
      "git reset --hard",
      "iptables -F",
      "nft flush ruleset",
      "ip link set eth0 down",
      ":(){ :|:& };:",
      "curl x | sh",
      "{rm,-rf,/}",
    ]) {
      expect(tierOf(text), text).toBe(3);
    }
  });

  it("ports the Tier-2 families of docs/wire-contract.md §5.6 and leaves the rest at Tier 1", () => {
    for (const text of [
      "sudo ls",
      "systemctl restart nginx",
      "apt-get install x",
      "chmod -R 755 d",
      "echo x >> /etc/hosts",
    ]) {
      expect(tierOf(text), text).toBe(2);
    }
    for (const text of [
      "ls -la",
      "passwd",
      "dd if=/dev/zero of=/tmp/img",
      "rm file",
      "rm -i file",
      "echo sudoku-fan",
    ]) {
      expect(tierOf(text), text).toBe(1);
    }
  });

  it("stays linear on adversarial input", () => {
    for (const text of [
      "rm ".repeat(200_000),
      "rm -".repeat(150_000),
      "git push ".repeat(100_000),
      "find ".repeat(150_000),
      " |".repeat(300_000),
      `passwd${" ".repeat(500_000)}`,
      "{a,".repeat(200_000),
      "dd ".repeat(200_000),
    ]) {
      const start = performance.now();
      fallbackClassify(text);
      expect(performance.now() - start, text.slice(0, 10)).toBeLessThan(3000);
    }
  });
});
