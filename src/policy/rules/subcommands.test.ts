import { beforeAll, describe, expect, it } from "vitest";
import { type Classifier, createClassifier } from "../index.js";
import { literalWord } from "../shell/words.js";
import { Args } from "./args.js";
import { helpRequest, subcommandPath } from "./subcommands.js";

let classifier: Classifier;
beforeAll(async () => {
  classifier = await createClassifier();
});

const verdict = (text: string) => {
  const r = classifier.classify(text);
  return { tier: r.tier, basis: r.basis };
};
const args = (...values: string[]) => new Args(values.map((v) => literalWord(v)));

describe("subcommand path", () => {
  it("skips options and the word right after a separate option", () => {
    expect(subcommandPath(args("-n", "prod", "delete", "pod", "x"))).toEqual(["delete", "pod", "x"]);
    expect(subcommandPath(args("--region=eu", "ec2", "terminate-instances"))).toEqual([
      "ec2",
      "terminate-instances",
    ]);
    expect(subcommandPath(args("commit", "-m", "delete"))).toEqual(["commit"]);
  });

  it("stops at a path, a value-shaped word, `--` and after a verb that takes an operand", () => {
    expect(subcommandPath(args("path/to/file", "delete"))).toEqual([]);
    expect(subcommandPath(args("--", "delete"))).toEqual([]);
    expect(subcommandPath(args("checkout", "remove-stale-keys"))).toEqual(["checkout"]);
    expect(subcommandPath(args("a", "b", "c", "delete"))).toEqual(["a", "b", "c"]);
  });
});

describe("help requests", () => {
  it("tells the whole-program form from the subcommand form", () => {
    expect(helpRequest("passwd", args("--help"))).toBe("whole");
    expect(helpRequest("kubectl", args("delete", "--help"))).toBe("subcommand");
    expect(helpRequest("git", args("help", "reset"))).toBe("subcommand");
    expect(helpRequest("aws", args("s3", "rm", "help"))).toBe("subcommand");
  });

  it("is no help request when anything but subcommand words precedes it", () => {
    expect(helpRequest("rm", args("-rf", "/", "--help"))).toBeNull();
    expect(helpRequest("tool", args("delete", "--", "--help"))).toBeNull();
    expect(helpRequest("tool", args("delete", "path/to/x", "--help"))).toBeNull();
    expect(helpRequest("docker", args("run", "ubuntu", "--help"))).toBeNull();
    expect(helpRequest("npx", args("some-package", "--help"))).toBeNull();
    expect(helpRequest("shutdown", args("-h"))).toBeNull();
    expect(helpRequest("tool", args("delete", "--help", "now"))).toBeNull();
  });
});

describe("destructive subcommands of tools no table names", () => {
  it.each([
    "gh repo delete owner/repo",
    "aws s3api delete-bucket --bucket b",
    "aws --region eu-west-1 ec2 terminate-instances --instance-ids i-1",
    "mycli -p prod delete thing",
    "ykman fido credentials delete id",
    "dokku apps:destroy app",
    "brew uninstall wget",
    "adb kill-server",
    "gpg-card factory-reset",
    "vault token revoke abc",
    "sudo snap remove firefox",
    "env FOO=1 heroku destroy --app x",
    "cat ids | xargs crane delete",
    "VBoxManage cloud --provider=oci instance terminate --id=1",
    "fdupes --recurse --delete dir",
  ])("%s is at least Tier 2", (text) => {
    const r = classifier.classify(text);
    expect(r.tier).toBeGreaterThanOrEqual(2);
  });

  it("names the subcommand rule when nothing else decided", () => {
    expect(classifier.classify("glab repo delete owner/repo")).toEqual({
      tier: 3,
      basis: "destructive_subcommand",
      part: "glab repo delete owner/repo",
    });
  });

  it.each([
    "grep delete file.txt",
    "echo remove",
    "man kill",
    "tldr uninstall",
    "rm notes.txt",
    "mycli upload path/to/delete",
    "mycli list --deleted",
    "hg status --removed",
    "mycli delete --dry-run x",
    "printf '%s\\n' purge",
    "hub checkout remove-stale-keys",
    "hub commit -m delete",
  ])("%s stays below Tier 2", (text) => {
    expect(classifier.classify(text).tier).toBeLessThan(2);
  });

  it.each([
    ["git commit -m delete", "git commit -m fix"],
    ["git commit --message delete", "git commit --message fix"],
    ["git checkout remove-stale-keys", "git checkout stale-keys"],
    ["git switch -c delete-user-endpoint", "git switch -c user-endpoint"],
    ["docker run --rm alpine true", "docker run alpine true"],
  ])("%s gets what the table gives %s", (text, control) => {
    expect(verdict(text)).toEqual(verdict(control));
  });

  it("keeps a table's higher verdict", () => {
    expect(verdict("terraform destroy")).toEqual({ tier: 3, basis: "infrastructure_destruction" });
    expect(verdict("zpool destroy tank")).toEqual({ tier: 3, basis: "storage_destruction" });
    expect(verdict("kubectl delete namespace prod")).toEqual({
      tier: 3,
      basis: "infrastructure_destruction",
    });
  });
});

describe("help, version and read-only subcommands", () => {
  it.each([
    "kubectl delete --help",
    "docker rm --help",
    "mycli delete -h",
    "glab repo delete --help",
    "git help reset",
    "aws s3 rm help",
    "passwd --help",
    "userdel --version",
    "shutdown --help",
    "reboot --version",
    "conda env list",
    "uv pip show requests",
    "launchctl list",
    "git worktree list",
    // A help request right after a Tier-3 verb names no object: the verb's help is printed.
    "gh repo delete --help",
    "terraform destroy --help",
    "docker system prune --help",
    "zfs destroy -h",
    "btrfs subvolume delete --help",
  ])("%s stays below Tier 2", (text) => {
    expect(classifier.classify(text).tier).toBeLessThan(2);
  });

  it.each([
    ["rm -rf / --help", 3],
    ["rm -rf --help /", 3],
    ["shutdown -h", 3],
    ["shutdown now -h", 3],
    ["shutdown -?", 3],
    ["passwd -?", 3],
    ["kubectl delete ns prod --help", 3],
    ["git push --force --help", 3],
    ["kubectl delete --help; rm -rf /tmp/x", 3],
    ["kubectl delete --help && reboot", 3],
    ["$TOOL delete --help", 3],
    ["shred secrets.txt --help", 3],
    ["kubectl delete --help > /etc/motd", 2],
    ["sudo kubectl delete --help", 2],
    ["docker run ubuntu --help", 2],
    ["docker container run ubuntu --help", 2],
    ["docker rm -f web --help", 2],
    ["mycli delete -- --help", 2],
    ["npx some-package --help", 1],
  ] as const)("%s stays Tier %i", (text, tier) => {
    expect(classifier.classify(text).tier).toBe(tier);
  });

  it("does not read a read-only word after another verb as the subcommand", () => {
    expect(verdict("terraform apply show")).toEqual(verdict("terraform apply plan.out"));
    expect(verdict("npm publish info")).toEqual(verdict("npm publish dist"));
    expect(verdict("docker run ls")).toEqual(verdict("docker run alpine"));
    expect(verdict("terraform apply show").tier).toBe(2);
  });

  it("does not let `go get` pass as a read-only get", () => {
    expect(verdict("go get example.com/mod")).toEqual(verdict("go install example.com/mod"));
  });
});
