import type { Redirect } from "../shell/script.js";
import type { Word } from "../shell/words.js";
import { provenDryRun } from "./dry-runs.js";
import { isHelpForm, type ReadEntry, satisfies } from "./spec.js";
import { READ_ONLY_PROGRAMS } from "./table.js";

export { safeVariable } from "./variables.js";
export { transparentWrapper } from "./wrapper-proofs.js";

/**
 * The Tier-0 proof of one simple command and of the shell parts around it
 * (ADR 0033). Everything here answers "proven to only read" or "not proven";
 * it never raises a tier. The rule tables and opaque-execution checks run
 * as before, and a call is Tier 0 only when all of its parts are proven and
 * none of them raised it.
 */

/**
 * Programs whose help or version form is trusted although their other forms
 * change things: `--help` or `--version` as the first argument makes them
 * print and exit before they act (GNU getopt handles it while parsing).
 */
const HELP_TRUSTED = new Set([
  "rm",
  "mv",
  "cp",
  "ln",
  "mkdir",
  "rmdir",
  "touch",
  "chmod",
  "chown",
  "chgrp",
  "dd",
  "shred",
  "truncate",
  "install",
  "tee",
  "useradd",
  "userdel",
  "usermod",
  "groupadd",
  "groupdel",
  "passwd",
  "mount",
  "umount",
  "rsync",
  "tar",
  "gzip",
  "gunzip",
  "xz",
  "zstd",
  "bzip2",
  "unzip",
  "zip",
  "curl",
  "wget",
  "scp",
  "sftp",
  "ssh",
  "apt",
  "apt-get",
  "dnf",
  "yum",
  "pip",
  "pip3",
  "npm",
  "terraform",
  "ansible",
  "ansible-playbook",
  "make",
  "sed",
  "crontab",
  "iptables",
  "nft",
  "mkfs",
  "wipefs",
  "fdisk",
  "parted",
  "lvremove",
  "vgremove",
  "kill",
  "pkill",
  "killall",
  "shutdown",
  "reboot",
]);

/** `--help` or `--version` alone, to a program whose option parser prints and exits before it acts. */
export function trustedHelpForm(name: string, args: readonly Word[]): boolean {
  const first = args[0]?.value;
  if (args.length !== 1) return false;
  // mke2fs and mkfs.xfs print their version for -V and exit before opening any device.
  if (first === "-V" && /^(?:mke2fs|mkfs\.(?:ext[234]|xfs))$/.test(name)) return true;
  return HELP_TRUSTED.has(name) && (first === "--help" || first === "--version");
}

/** Look a program up by its lower-cased base name (`pip3` and `pip` are both listed where both exist). */
function entryOf(name: string): ReadEntry | undefined {
  return READ_ONLY_PROGRAMS.get(name);
}

/** Device files whose opening or reading has no effect beyond the read. */
const QUIET_DEVICE =
  /^\/dev\/(?:null|zero|u?random|full|stdin|stdout|stderr|fd\/\d+|(?:sd|hd|vd|xvd)[a-z]+\d*|nvme\d+(?:n\d+(?:p\d+)?)?|mmcblk\d+(?:p\d+)?|dm-\d+|md\d+|loop\d+|mapper\/[\w.-]+|disk\/by-[\w-]+\/[\w.:@-]+|shm(?:\/.*)?|mqueue|hugepages|pts\/?\d*|\/?)$/;

/** A word that names a file whose opening does something besides being read (a watchdog, a tape, a kernel queue). */
function touchyPath(w: Word): boolean {
  const v = w.value;
  if (v.startsWith("/dev/")) return !QUIET_DEVICE.test(v);
  return v === "/proc/kmsg" || v.startsWith("/proc/sysrq");
}

/**
 * Whether one simple command (already unwrapped) is proven to only read.
 * `windows` adds the cmd.exe switch syntax: `/X` words may be options there
 * (`sort /o FILE` writes), so they are not proven.
 */
export function provenArgv(
  name: string,
  args: readonly Word[],
  windows: boolean,
  stdinEmpty = true,
): boolean {
  if (args.some(touchyPath)) return false;
  if (windows && args.some((w) => /^\/[A-Za-z?]{1,2}(?::.*)?$/.test(w.value))) return false;
  if (!windows && provenDryRun(name, args)) return true;
  const entry = entryOf(name);
  if (entry === undefined) {
    return trustedHelpForm(name, args);
  }
  if (isHelpForm(args) || helpTail(name, args)) return true;
  return satisfies(entry, args, stdinEmpty);
}

/**
 * CLIs whose command paths run three words deep (`gcloud compute instances delete`) and whose
 * parsers print help for `--help` wherever it stands.
 */
const DEEP_COMMANDS = new Map([
  ["gcloud", 3],
  ["vault", 3],
]);

/**
 * `git reset -h`, `az group delete -h`, `aws ec2 terminate-instances help`: a help request after a
 * plain subcommand path (at most two subcommand-shaped words) and nothing after it; a Tier-3 act with its
 * object named (`kubectl delete ns prod --help`) keeps its tier.
 */
function helpTail(name: string, args: readonly Word[]): boolean {
  const last = args[args.length - 1];
  if (last === undefined || args.length > 1 + (DEEP_COMMANDS.get(name) ?? 2)) return false;
  if (!/^(?:-h|--help|-help|help)$/.test(last.value)) return false;
  return args.slice(0, -1).every((w) => !w.dynamic && !w.glob && /^[a-z][a-z0-9:_-]*$/.test(w.value));
}

/**
 * `sh -c 'TEXT'`, `bash -ec 'TEXT'`: the shell runs the text it is given, which is parsed and
 * proven on its own. Only -c and options that make it stricter or louder (-e, -u, -x, -v, -o
 * pipefail) are allowed; -i and -l read start-up files, which may run anything.
 */
export function shellCommandOnly(args: readonly Word[]): boolean {
  let sawC = false;
  for (let i = 0; i < args.length; i++) {
    const v = args[i]!.value;
    if (args[i]!.dynamic) return false;
    if (v === "-o" || v === "+o") {
      if (!/^(?:pipefail|errexit|nounset|xtrace|verbose)$/.test(args[i + 1]?.value ?? "")) return false;
      i++;
      continue;
    }
    if (/^[-+][euxvc]+$/.test(v)) {
      sawC ||= v.includes("c");
      if (v.includes("c")) return sawC && i + 1 < args.length;
      continue;
    }
    return false;
  }
  return false;
}

/**
 * A shell or interpreter asked only for its version or help (`python3 --version`, `bash --help`)
 * prints and exits. `-h` is not taken for shells (`bash -h` sets an option and reads stdin).
 */
export function interpreterInfoOnly(name: string, args: readonly Word[]): boolean {
  if (args.length !== 1) return false;
  const v = args[0]!.value;
  return v === "--version" || v === "--help" || VERSION_LETTER.get(name.replace(/[0-9.]+$/, "")) === v;
}

/** The interpreters' own short version flags, each alone on the line: they print and exit. */
const VERSION_LETTER = new Map([
  ["python", "-V"],
  ["node", "-v"],
  ["nodejs", "-v"],
  ["perl", "-v"],
  ["php", "-v"],
]);

/** A command run once per input item gets words nobody has seen: only programs no option changes qualify. */
export function provenPerItem(name: string): boolean {
  return entryOf(name) === true;
}

/**
 * Whether a redirection can join a read: output only to /dev/null (or
 * duplicated onto a descriptor), input from a file that is not a device with
 * side effects, and here-docs/here-strings (data on stdin). A redirection into
 * a file writes it; `<>` opens it for writing.
 */
export function provenRedirect(r: Redirect): boolean {
  const target = r.target;
  switch (r.op) {
    case ">&":
    case "<&":
      // A descriptor duplication or close (`2>&1`, `>&2`, `<&-`); a file name after `>&` writes that file.
      return target !== null && !target.dynamic && /^(?:\d+|-)$/.test(target.value);
    case "<":
      return (
        target !== null && !target.procSub && !touchyPath(target) && !target.value.startsWith("/dev/tcp")
      );
    case "<<":
    case "<<-":
    case "<<<":
      return true;
    case ">":
    case ">>":
    case ">|":
    case "&>":
    case "&>>":
      return target !== null && !target.dynamic && target.value === "/dev/null";
    default:
      return false;
  }
}
