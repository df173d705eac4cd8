import type { Word } from "../shell/words.js";
import { leadingOptions, set, sudoListsOnly } from "../wrappers/parsers.js";
import { safeVariable } from "./variables.js";

/**
 * Wrappers and carriers in the Tier-0 proof (ADR 0033): which of them only
 * bound, time or carry a command that is then proven on its own, and with
 * which of their own options.
 */

const TIME_VALUED = set("-f", "--format", "-o", "--output");

/**
 * Wrappers that only wait, time, bound or re-prioritise the command they run:
 * they are proven when their own options are, and the command they carry is
 * proven on its own. Anything else that runs a command (sudo, ssh, nohup,
 * flock, strace -o …) is not proven, whatever it carries.
 */
const TRANSPARENT = new Map<string, (args: readonly Word[]) => boolean>([
  // GNU time: `-o FILE` (also in a cluster, or abbreviated `--o…`) writes its report to a file.
  ["time", (args) => !leadingOptions(args, TIME_VALUED, "fo").some((w) => /^-[a-z]*o|^--o/.test(w.value))],
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
  // Listing what sudo allows (or its version) runs nothing and gains no privilege.
  ["sudo", sudoListsOnly],
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
