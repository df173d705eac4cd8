import type { Word } from "../shell/words.js";
import { awkReadsOnly, sedReadsOnly } from "./program-texts.js";
import type { ReadEntry, ReadSpec } from "./spec.js";
import { safeVariable } from "./variables.js";

/**
 * Files and text: programs that read files or stdin and print. Each entry
 * names the options that make it write (an output file, an in-place edit, a
 * compiled cache) or run code (a preprocessor, a compression program).
 */

/** Operands (non-option words) of a command, skipping the values of `valued` options. */
export function operands(args: readonly Word[], valued: readonly string[] = []): Word[] {
  const out: Word[] = [];
  let options = true;
  for (let i = 0; i < args.length; i++) {
    const v = args[i]!.value;
    if (options && v === "--") {
      options = false;
      continue;
    }
    if (options && v.startsWith("-") && v.length > 1) {
      if (valued.includes(v)) i++;
      continue;
    }
    out.push(args[i]!);
  }
  return out;
}

/** At most `n` operands: a further one is an output file (`uniq IN OUT`, `xxd IN OUT`). */
function atMost(n: number, valued: readonly string[] = []): (args: readonly Word[]) => boolean {
  return (args) => operands(args, valued).length <= n;
}

const READS: readonly string[] = [
  "ls",
  "dir",
  "vdir",
  "cat",
  "tac",
  "nl",
  "head",
  "tail",
  "wc",
  "stat",
  "du",
  "df",
  "pwd",
  "echo",
  "test",
  "[",
  "basename",
  "dirname",
  "realpath",
  "readlink",
  "namei",
  "md5sum",
  "sha1sum",
  "sha224sum",
  "sha256sum",
  "sha384sum",
  "sha512sum",
  "b2sum",
  "cksum",
  "sum",
  "base64",
  "base32",
  "basenc",
  "od",
  "hexdump",
  "hd",
  "strings",
  "cut",
  "paste",
  "join",
  "comm",
  "diff",
  "diff3",
  "cmp",
  "column",
  "fold",
  "fmt",
  "pr",
  "expand",
  "unexpand",
  "tr",
  "rev",
  "grep",
  "egrep",
  "fgrep",
  "zgrep",
  "zegrep",
  "zfgrep",
  "bzgrep",
  "xzgrep",
  "zcat",
  "bzcat",
  "xzcat",
  "zstdcat",
  "lz4cat",
  "look",
  "which",
  "whereis",
  "type",
  "whoami",
  "id",
  "groups",
  "uname",
  "uptime",
  "cal",
  "ncal",
  "printenv",
  "locale",
  "getconf",
  "nproc",
  "arch",
  "tty",
  "lsb_release",
  "jq",
  "gojq",
  "jaq",
  "seq",
  "numfmt",
  "expr",
  "factor",
  "apropos",
  "whatis",
  "help",
  "getent",
  "locate",
  "plocate",
  "mlocate",
  "zdiff",
  "wdiff",
  "tsort",
];

const files = new Map<string, ReadEntry>(READS.map((name) => [name, true as ReadEntry]));

const spec = (name: string, s: ReadSpec) => files.set(name, s);

// ripgrep runs a preprocessor program per file with --pre.
spec("rg", { deny: ["--pre", "--pre-glob"], valued: ["-e", "-f", "-g", "-t", "-T", "-m", "-A", "-B", "-C"] });
spec("ag", { deny: ["--pager"] });
spec("ack", { deny: ["--pager"] });
// file compiles a magic database into FILE.mgc with -C.
spec("file", { deny: ["-C", "--compile"], valued: ["-m", "-f", "-F", "-e", "-P"] });
// sort writes its result with -o and starts a compressor with --compress-program.
spec("sort", {
  deny: ["-o", "--output", "--compress-program"],
  valued: ["-k", "-t", "-S", "-T", "--key", "--field-separator", "--buffer-size", "--temporary-directory"],
  valuedLetters: "ktST",
});
spec("uniq", { check: atMost(1, ["-f", "-s", "-w"]), valued: ["-f", "-s", "-w"] });
spec("shuf", { deny: ["-o", "--output", "--random-source"], valuedLetters: "nio" });
spec("xxd", { deny: ["-r", "-revert"], check: atMost(1, ["-c", "-g", "-l", "-s", "-o"]) });
spec("tree", { deny: ["-o", "--output", "-R"], valued: ["-L", "-P", "-I", "--charset"] });
spec("yq", { deny: ["-i", "--inplace", "--split-exp", "-s", "--from-file"] });
spec("info", { deny: ["-o", "--output", "--dribble", "--restore"] });
// hostname NAME sets the host name; -F/--file and -b set it from a file.
spec("hostname", { deny: ["-F", "--file", "-b", "--boot"], check: atMost(0) });
// date -s sets the clock; an operand that is not a +FORMAT sets it too (`date 010203042025`).
spec("date", {
  deny: ["-s", "--set"],
  valued: ["-d", "--date", "-f", "--file", "-r", "--reference"],
  valuedLetters: "dfr",
  check: (args) =>
    operands(args, ["-d", "--date", "-f", "--file", "-r", "--reference"]).every((w) =>
      w.value.startsWith("+"),
    ),
});
// find: actions that delete or write a file. -exec/-ok carry a command the classifier judges on its own.
spec("find", {
  words: true,
  deny: ["-delete", "-fprint", "-fprint0", "-fprintf", "-fls", "-exec", "-execdir", "-ok", "-okdir"],
});
spec("awk", {
  deny: ["-f", "--file", "-i", "--include", "-l", "--load", "-E", "--exec"],
  check: awkReadsOnly,
});
for (const name of ["gawk", "mawk", "nawk", "busybox-awk"]) files.set(name, files.get("awk")!);
// sed: -i edits in place; the script's w/W/e commands and s///w, s///e write or run.
spec("sed", {
  deny: ["-i", "--in-place", "-f", "--file", "-s"],
  valued: ["-e", "--expression", "-l", "--line-length"],
  check: sedReadsOnly,
});
spec("tar", {
  // Listing only: -t/--list without an extraction, creation, update or a program to run.
  deny: [
    "-x",
    "--extract",
    "--get",
    "-c",
    "--create",
    "-r",
    "--append",
    "-u",
    "--update",
    "-A",
    "--catenate",
    "--delete",
    "-I",
    "--use-compress-program",
    "--to-command",
    "--checkpoint-action",
    "--info-script",
    "--new-volume-script",
    "-F",
    "--rmt-command",
    "--rsh-command",
    "-C",
    "--directory",
  ],
  valued: ["-f", "--file"],
  valuedLetters: "f",
  check: (args) => args.some((w) => /^-[A-Za-z]*t|^--list$/.test(w.value) || /^t[a-z]*$/.test(w.value)),
});
spec("unzip", { check: (args) => args.some((w) => /^-[A-Za-z]*[lvtZ]/.test(w.value)) });
spec("zipinfo", {});
for (const name of ["gzip", "xz", "bzip2", "zstd", "lz4"]) {
  // Only the forms that print or test: to stdout (-c, also with -d), list (-l) or test (-t); without one of them
  // the input is replaced by its (de)compressed form.
  spec(name, {
    deny: ["-o", "--output", "--rm"],
    check: (args) => args.some((w) => /^-[A-Za-z0-9]*[clt]|^--(?:stdout|to-stdout|list|test)$/.test(w.value)),
  });
}

// hash -p NAME binds a command name to any file; -r and -d only forget. tldr -u downloads its pages.
spec("hash", { deny: ["-p"] });
// history lists; -c and -d delete entries, -w/-a write the history file, -r/-n read one into the list.
spec("history", { deny: ["-c", "-d", "-w", "-a", "-r", "-n", "-s"] });
spec("tldr", { deny: ["-u", "--update", "--clear-cache"] });
// man runs a pager or a browser named by an option.
spec("man", {
  deny: ["-P", "--pager", "-H", "--html", "-X", "--gxditview", "-T", "--troff-device", "-t", "--troff"],
});
// Shell builtins that move around, wait or set the shell's own options.
for (const name of [
  "cd",
  "pushd",
  "popd",
  "dirs",
  "exit",
  "return",
  "break",
  "continue",
  "wait",
  "jobs",
  "times",
  "getopts",
  "shift",
  ":",
  "sleep",
  "umask",
  "set",
  "shopt",
  "true",
  "false",
]) {
  files.set(name, true);
}
// Declarations: the variables they set must not change what runs (PATH, LD_*, PAGER …); -n makes a reference.
const declared = (args: readonly Word[]) =>
  args.every((w) => {
    // -n makes a name reference, -i an integer variable whose assignments bash evaluates as arithmetic.
    if (w.value.startsWith("-") || w.value.startsWith("+")) return !/[ni]/.test(w.value);
    const eq = w.value.indexOf("=");
    const name = eq < 0 ? w.value : w.value.slice(0, eq);
    if (w.dynamic && eq < 0) return false;
    return safeVariable(name.replace(/\+$/, ""), eq < 0 ? null : { ...w, value: w.value.slice(eq + 1) });
  });
for (const name of ["export", "declare", "typeset", "local", "readonly", "unset"])
  spec(name, { check: declared });
const READ_VALUED = ["-d", "-n", "-N", "-p", "-t", "-u", "-i", "-a"];
spec("read", {
  valued: READ_VALUED,
  check: (args) => operands(args, READ_VALUED).every((w) => !w.dynamic && safeVariable(w.value, null)),
});
spec("printf", { deny: ["-v"] });

export const FILE_PROGRAMS: ReadonlyMap<string, ReadEntry> = files;
