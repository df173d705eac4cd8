import type { Redirect } from "../script.js";
import type { Word } from "../words.js";
import { isHelpForm, type ReadEntry, satisfies } from "./spec.js";
import { READ_ONLY_PROGRAMS } from "./table.js";
import { safeVariable } from "./variables.js";

export { safeVariable } from "./variables.js";

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
  const entry = entryOf(name);
  if (entry === undefined) {
    const first = args[0]?.value;
    return HELP_TRUSTED.has(name) && (first === "--help" || first === "--version") && args.length === 1;
  }
  if (isHelpForm(args) || helpTail(args)) return true;
  return satisfies(entry, args, stdinEmpty);
}

/**
 * `git reset -h`, `az group delete -h`, `aws ec2 terminate-instances help`: a help request after a
 * plain subcommand path (at most two subcommand-shaped words) and nothing after it; a Tier-3 act with its
 * object named (`kubectl delete ns prod --help`) keeps its tier.
 */
function helpTail(args: readonly Word[]): boolean {
  const last = args[args.length - 1];
  if (last === undefined || args.length > 3 || !/^(?:-h|--help|-help|help)$/.test(last.value)) return false;
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
  return v === "--version" || v === "--help" || (v === "-V" && /^python/.test(name));
}

/**
 * Wrappers that only wait, time, bound or re-prioritise the command they run:
 * they are proven when their own options are, and the command they carry is
 * proven on its own. Anything else that runs a command (sudo, ssh, nohup,
 * flock, strace -o …) is not proven, whatever it carries.
 */
const TRANSPARENT = new Map<string, (args: readonly Word[]) => boolean>([
  // GNU time: `-o FILE` (also in a cluster, or abbreviated `--o…`) writes its report to a file.
  ["time", (args) => !optionsBefore(args).some((w) => /^-[a-z]*o|^--o/.test(w.value))],
  ["timeout", () => true],
  ["nice", () => true],
  ["ionice", () => true],
  ["stdbuf", () => true],
  ["watch", () => true],
  ["command", () => true],
  ["builtin", () => true],
  ["env", (args) => envOptionsProven(args)],
  ["xargs", (args) => !args.some((w) => /^(?:-p|--interactive|--open-tty|-o)$/.test(w.value))],
  ["find", (args) => !args.some((w) => FIND_WRITES.has(w.value))],
  ["docker", containerExecProven],
  ["podman", containerExecProven],
  ["nerdctl", containerExecProven],
  ["kubectl", containerExecProven],
  ["oc", containerExecProven],
  ["ssh", sshProven],
  ["nsenter", nsenterProven],
  ["ansible", ansibleProven],
  ["salt", saltProven],
  ["salt-ssh", saltProven],
  ["pdsh", () => true],
  ["clush", (args) => !args.some((w) => /^(?:-c|--copy|--rcopy|--dest)(?:=|$)/.test(w.value))],
  ["pssh", () => true],
  ["parallel-ssh", () => true],
  ["dsh", () => true],
]);

/**
 * `nsenter -t PID -n ss -tlnp`: the command runs in another process's namespaces and is proven on
 * its own; entering namespaces changes nothing. Options that change the user, the root or the
 * working directory are not proven.
 */
function nsenterProven(args: readonly Word[]): boolean {
  for (let i = 0; i < args.length; i++) {
    const v = args[i]!.value;
    if (v === "-t" || v === "--target") {
      i++;
      continue;
    }
    if (/^-[nmuipCT]+$|^--(?:net|mount|uts|ipc|pid|cgroup|time|target=\d+)$/.test(v)) continue;
    return !v.startsWith("-");
  }
  return true;
}

/** ansible modules whose effect is the command line they carry, or a report. */
const ANSIBLE_PROVEN_MODULES =
  /^(?:(?:ansible\.builtin\.)?(?:command|shell|raw|ping|setup|gather_facts|debug|stat|getent|package_facts|service_facts))$/;

/**
 * `ansible HOSTS -m shell -a CMD`: the command module's line is proven on its own; ping, setup
 * and the other reporting modules change nothing. Privilege (`-b`) keeps its own tier, and any
 * other module is not proven.
 */
function ansibleProven(args: readonly Word[]): boolean {
  let module = "command";
  for (let i = 0; i < args.length; i++) {
    const v = args[i]!.value;
    if (/^(?:-b|--become|-K|--ask-become-pass|--become-user|--become-method)(?:=|$)/.test(v)) return false;
    if (v === "-m" || v === "--module-name") module = args[i + 1]?.value ?? "";
    else if (v.startsWith("--module-name=")) module = v.slice(14);
    else if (/^-m./.test(v)) module = v.slice(2);
  }
  return ANSIBLE_PROVEN_MODULES.test(module);
}

/** salt functions that run the command they carry, or only report. */
const SALT_PROVEN =
  /^(?:cmd\.(?:run|shell|run_all|run_stdout)|test\.(?:ping|version)|grains\.(?:items|item|get|ls)|pillar\.(?:get|items|item)|disk\.(?:usage|inodeusage)|status\.\w+|pkg\.(?:list_pkgs|version)|service\.(?:status|available|get_all)|network\.(?:interfaces|ip_addrs)|sys\.doc)$/;

function saltProven(args: readonly Word[]): boolean {
  return args.some((w) => !w.dynamic && SALT_PROVEN.test(w.value));
}

/** Options of a client before its verb whose value is the next word. */
const CLIENT_VALUED = new Set([
  "-H",
  "--host",
  "-c",
  "--context",
  "-l",
  "--log-level",
  "-n",
  "--namespace",
  "--cluster",
  "--user",
  "-s",
  "--server",
]);

/**
 * `docker exec C cmd`, `kubectl exec P -- cmd`: the command runs in a container as it would run
 * here, and is proven on its own. Not proven: another client configuration (`--config`,
 * `--kubeconfig`), an environment passed in (`-e LD_PRELOAD=…`), or any verb but exec (`run`
 * creates a container).
 */
function containerExecProven(args: readonly Word[]): boolean {
  let i = 0;
  for (; i < args.length; i++) {
    const v = args[i]!.value;
    if (args[i]!.dynamic || v === "--config" || v.startsWith("--config=") || v.startsWith("--kubeconfig"))
      return false;
    if (CLIENT_VALUED.has(v)) i++;
    else if (!v.startsWith("-")) break;
  }
  let verb = args[i]?.value;
  if (verb === "container" || verb === "compose") verb = args[++i]?.value;
  if (verb !== "exec") return false;
  return !args
    .slice(i + 1)
    .some(
      (w) =>
        /^(?:-e|--env|--env-file|--privileged)(?:=|$)|^-[A-Za-z]*e$/.test(w.value) ||
        (w.dynamic && w.value.startsWith("-")),
    );
}

/**
 * `ssh HOST cmd`: the remote command is proven on its own, as it is for ssh_exec (without a
 * command the remote shell runs whatever arrives on stdin, which is not proven). The client's
 * own options must not forward ports, open a master or a tunnel, run a local or proxy command,
 * read another configuration or write a log: only these are allowed.
 */
function sshProven(args: readonly Word[]): boolean {
  for (let i = 0; i < args.length; i++) {
    const w = args[i]!;
    const v = w.value;
    if (w.dynamic) return false;
    // The host, then the command; without one the remote shell reads its commands from stdin.
    if (!v.startsWith("-")) return i + 1 < args.length;
    // -G prints the configuration it would use and -V the version; neither connects.
    if (v === "-G" || v === "-V") return true;
    if (/^-[46qtTnCvxaK]+$/.test(v)) continue;
    if (/^-[pli]$/.test(v)) {
      i++;
      continue;
    }
    if (/^-[pli]./.test(v)) continue;
    if (v === "-o" || v.startsWith("-o")) {
      const option = v === "-o" ? (args[++i]?.value ?? "") : v.slice(2);
      if (!SAFE_SSH_OPTION.test(option)) return false;
      continue;
    }
    return false;
  }
  return true;
}

/** `-o` settings that change nothing but how the connection is made or checked. */
const SAFE_SSH_OPTION =
  /^(?:BatchMode|ConnectTimeout|ConnectionAttempts|ServerAliveInterval|ServerAliveCountMax|LogLevel|Port|User|Compression|AddressFamily|StrictHostKeyChecking=yes|PasswordAuthentication|PubkeyAuthentication|IdentitiesOnly|PreferredAuthentications|RequestTTY)(?:=|\s|$)/i;

/** The option words before a wrapper's command (its first operand). */
function optionsBefore(args: readonly Word[]): readonly Word[] {
  const end = args.findIndex((w) => !w.value.startsWith("-") || w.value === "--");
  return end < 0 ? args : args.slice(0, end);
}

/** find's actions that write a file or delete; `-exec`/`-ok` carry a command proven on its own. */
const FIND_WRITES = new Set(["-delete", "-fprint", "-fprint0", "-fprintf", "-fls"]);

function envOptionsProven(args: readonly Word[]): boolean {
  for (const w of args) {
    const v = w.value;
    if (v === "-S" || v.startsWith("--split-string") || v.startsWith("-S")) return false;
    const eq = v.indexOf("=");
    if (!v.startsWith("-") && eq > 0 && /^[A-Za-z_]\w*$/.test(v.slice(0, eq))) {
      if (!safeVariable(v.slice(0, eq), { ...w, value: v.slice(eq + 1) })) return false;
      continue;
    }
    if (!v.startsWith("-")) return true;
  }
  return true;
}

/**
 * Whether a wrapper is transparent to the proof: it only runs its command
 * under a bound or a measurement. `perItem` commands receive words from their
 * input, so the command they run must be one no option turns into a write.
 */
export function transparentWrapper(name: string, args: readonly Word[]): boolean {
  const check = TRANSPARENT.get(name);
  return check?.(args) === true;
}

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
