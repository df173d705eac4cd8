import type { Word } from "../shell/words.js";
import { subsOf, tablePart } from "./define.js";
import { operands } from "./programs-files.js";
import type { ReadEntry } from "./spec.js";

/**
 * Version control: git in its reading forms. -c and --config-env set
 * configuration (an fsmonitor, a pager, an editor) and --exec-path picks the
 * programs git runs, so neither is proven; a repository's own configuration
 * is the operator's (docs/policy.md).
 */

const { entries, spec } = tablePart();

// git: -c and --config-env set configuration (an fsmonitor, a pager, an editor); --exec-path picks the programs.
const GIT_LIST_ONLY = (listing: readonly string[], valued: readonly string[]) => (args: readonly Word[]) =>
  operands(args, valued).length === 0 || args.some((w) => listing.includes(w.value));
const GIT_OUTPUT = ["--output", "--ext-diff", "-O", "--open-files-in-pager"];
spec("git", {
  valued: ["-C", "--git-dir", "--work-tree", "--namespace"],
  deny: ["-c", "--config-env", "--exec-path", "--upload-pack", "--receive-pack"],
  bare: true,
  subs: {
    status: { deny: ["--porcelain=v3"] },
    log: { deny: GIT_OUTPUT },
    show: { deny: GIT_OUTPUT },
    diff: { deny: GIT_OUTPUT },
    blame: true,
    annotate: true,
    shortlog: true,
    whatchanged: { deny: GIT_OUTPUT },
    "rev-parse": true,
    "rev-list": true,
    describe: true,
    "ls-files": true,
    "ls-tree": true,
    "ls-remote": { deny: ["--upload-pack"] },
    "cat-file": true,
    "name-rev": true,
    "merge-base": true,
    "count-objects": true,
    "show-ref": true,
    "show-branch": true,
    "for-each-ref": true,
    "verify-commit": true,
    "verify-tag": true,
    "check-ignore": true,
    "check-attr": true,
    "diff-tree": true,
    "diff-files": true,
    "diff-index": true,
    cherry: true,
    range_diff: true,
    grep: { deny: ["-O", "--open-files-in-pager"] },
    branch: {
      deny: [
        "-d",
        "-D",
        "--delete",
        "-m",
        "-M",
        "--move",
        "-c",
        "-C",
        "--copy",
        "-f",
        "--force",
        "-u",
        "--set-upstream-to",
        "--unset-upstream",
        "--edit-description",
        "-t",
        "--track",
      ],
      valued: ["--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format"],
      check: GIT_LIST_ONLY(
        ["-l", "--list"],
        ["--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format"],
      ),
    },
    tag: {
      deny: [
        "-d",
        "--delete",
        "-a",
        "--annotate",
        "-s",
        "--sign",
        "-u",
        "--local-user",
        "-f",
        "--force",
        "-m",
        "--message",
        "-F",
        "--file",
        "-e",
        "--edit",
      ],
      valued: [
        "--contains",
        "--no-contains",
        "--merged",
        "--no-merged",
        "--points-at",
        "--sort",
        "--format",
        "-n",
      ],
      check: GIT_LIST_ONLY(
        ["-l", "--list", "-v", "--verify"],
        ["--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format"],
      ),
    },
    remote: { bare: true, subs: { show: true, "get-url": true, "-v": true } },
    // `git stash` alone, or with options only, is `git stash push`: it rewrites the working tree.
    stash: { bare: false, subs: subsOf(["list", "show"]) },
    // `git reflog REF` is `git reflog show REF`; expire and delete are the writing forms.
    reflog: {
      valued: ["-n", "--max-count"],
      check: (args) => !args.some((w) => w.value === "expire" || w.value === "delete"),
    },
    bisect: { subs: subsOf(["log"]) },
    notes: { subs: subsOf(["list", "show"]) },
    // `git rerere` alone records conflicts and writes recorded resolutions into the working tree.
    rerere: { bare: false, subs: subsOf(["status", "diff", "remaining"]) },
    "check-ref-format": true,
    worktree: { subs: subsOf(["list"]) },
    submodule: { bare: true, subs: subsOf(["status", "summary"]) },
    config: {
      deny: [
        "--unset",
        "--unset-all",
        "--add",
        "--replace-all",
        "--rename-section",
        "--remove-section",
        "-e",
        "--edit",
        "--file",
        "-f",
        "--blob",
      ],
      check: (args) =>
        args.some((w) =>
          /^(?:-l|--list|--get|--get-all|--get-regexp|--get-urlmatch|--get-color|--get-colorbool)$/.test(
            w.value,
          ),
        ) || operands(args, ["--type", "--default"]).length === 1,
    },
    fsck: { deny: ["--lost-found"] },
  },
});

export const VCS_PROGRAMS: ReadonlyMap<string, ReadEntry> = entries;
