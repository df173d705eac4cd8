import { type Hit, hit } from "../rules/args.js";
import { DYNAMIC, literalWord, type Word } from "../shell/words.js";
import { afterDashes, firstOperand, has, LOCAL_CARRIERS, optionWord } from "./carriers-local.js";
import { argv, joinAll, PRIV, result, set, type Wrapper } from "./parsers.js";

/**
 * Carried commands: tools whose argument is a command for another host, a
 * container, a namespace or an environment. The command they carry is
 * classified as if typed here, so the call is never below it. Remote
 * fan-out tools (pdsh, clush, pssh, dsh, mussh, knife ssh, fab) send a
 * command line to a shell on each host; configuration-management tools
 * (ansible, salt) name a module whose effect is mapped onto the shell
 * command that does the same (`service name=sshd state=stopped` is
 * `systemctl stop sshd`).
 */

const INFRA = hit(2, "infrastructure_change");

const lit = (...values: string[]): Word[] => values.map((v) => literalWord(v));

/** `key=value` pairs of a module argument string (`path=/x state=absent`). */
function keyValues(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of text.split(/\s+/)) {
    const eq = part.indexOf("=");
    if (eq > 0) out.set(part.slice(0, eq).toLowerCase(), part.slice(eq + 1).replace(/^["']|["']$/g, ""));
  }
  return out;
}

/** What a configuration-management module does, as a shell argv, a fixed verdict, or nothing. */
type ModuleEffect = { argv: Word[] } | { hit: Hit } | null;

/** Modules (ansible) and function groups (salt) that only read or report. */
const READ_MODULES = new Set(
  (
    "ping setup gather_facts debug stat slurp find getent package_facts service_facts wait_for assert " +
    "set_fact fail meta uri command_facts ls items get list status show version doc info grains pillar test sys config"
  ).split(" "),
);
/** Function names (salt `pkg.list_pkgs`, `disk.usage`) that only read. */
const READ_FUNCTION =
  /^(?:list|ls|get|show|status|info|items|item|version|ping|doc|usage|interfaces|uptime|which|exists|file_exists|search|stats|check|read|available|latest_version|upgrade_available)/;
const PACKAGE_MODULES = new Set(
  "apt yum dnf package pip npm gem apk pacman zypper snap homebrew pkg".split(" "),
);

/** Map a module (ansible `-m file`, salt `file.remove`) and its arguments onto the command that does the same. */
function moduleEffect(module: string, kv: Map<string, string>, operands: string[]): ModuleEffect {
  const [group, fn] = module.includes(".")
    ? [module.slice(0, module.indexOf(".")), module.slice(module.indexOf(".") + 1)]
    : [module, ""];
  const state = kv.get("state") ?? "";
  const name = kv.get("name") ?? kv.get("path") ?? kv.get("dest") ?? operands[0] ?? DYNAMIC;
  if (READ_MODULES.has(group) || READ_FUNCTION.test(fn)) return null;
  if (group === "file" && (state === "absent" || fn === "remove" || fn === "rmdir" || fn === "delete"))
    return { argv: lit("rm", "-rf", name) };
  if (group === "user" || group === "group") {
    if (state === "absent" || fn === "delete")
      return { argv: lit(group === "user" ? "userdel" : "groupdel", name) };
    return { hit: hit(2, "account_change") };
  }
  if (/^(?:service|systemd|sysvinit|systemd_service)$/.test(group)) {
    const verb =
      fn !== ""
        ? fn
        : state === "stopped"
          ? "stop"
          : state === "restarted"
            ? "restart"
            : kv.get("enabled") === "no" || kv.get("enabled") === "false"
              ? "disable"
              : "start";
    return { argv: lit("systemctl", verb, name) };
  }
  if (PACKAGE_MODULES.has(group)) {
    const removing = state === "absent" || /^(?:remove|purge|uninstall)/.test(fn);
    return { argv: lit("apt-get", removing ? "remove" : "install", name) };
  }
  if (group === "reboot" || (group === "system" && /^(?:reboot|shutdown|poweroff|halt)$/.test(fn)))
    return { argv: lit(fn === "" ? "reboot" : fn) };
  if (group === "script" || fn === "script") return { hit: hit(2, "script_file") };
  if (/^(?:copy|template|lineinfile|blockinfile|replace|ini_file)$/.test(group))
    return { hit: hit(2, "config_change") };
  return { hit: INFRA };
}

/** Modules whose argument is a command line. */
const COMMAND_MODULES = new Set(["command", "shell", "raw", "win_shell", "win_command"]);

/** Check mode (`-C`, `--check`), a syntax check or a listing changes nothing. */
function ansibleDry(args: Word[]): boolean {
  return args.some((w) => {
    const v = w.value;
    if (/^--(?:check|syntax-check|list-hosts|list-tasks|list-tags)$/.test(v)) return true;
    return /^-[a-zA-Z]+$/.test(v) && v.includes("C") && !/[aBefilMmPtTuc].*C/.test(v);
  });
}

/** `ansible HOSTS -m MODULE -a ARGS`: the module's effect; without -m the module is `command`. */
const ansible: Wrapper = (args) => {
  if (ansibleDry(args)) return result({});
  const base = has(args, "-b", "--become") ? PRIV : null;
  const module = (optionWord(args, "-m", "--module-name")?.value ?? "command")
    .toLowerCase()
    .replace(/^.*\./, "");
  const moduleArgs = optionWord(args, "-a", "--args");
  if (COMMAND_MODULES.has(module)) return result({ base, scripts: moduleArgs === null ? [] : [moduleArgs] });
  const effect = moduleEffect(module, keyValues(moduleArgs?.value ?? ""), []);
  if (effect === null) return result({ base });
  if ("hit" in effect)
    return result({ base: base !== null && base.tier >= effect.hit.tier ? base : effect.hit });
  return result({ base, inners: [effect.argv] });
};

/** ansible-playbook runs the plays of a file: a change to every host it names, unless it only checks. */
const ansiblePlaybook: Wrapper = (args) =>
  ansibleDry(args) || args.length === 0 || has(args, "--help", "-h", "--version")
    ? result({})
    : result({ base: INFRA });

const SALT_VALUED = set(
  ..."-t --timeout -b --batch --batch-size --out --out-file -l --log-level --log-file -c --config-dir".split(
    " ",
  ),
  ..."--return --subset -a --auth --eauth --priv --roster --roster-file -i --id".split(" "),
);

/**
 * `salt TARGET FUNCTION ARGS…` (salt-ssh too), `salt-call FUNCTION ARGS…`:
 * `cmd.run`/`cmd.shell` carry a command line; `state.*` with `test=True`
 * only reports; other functions are mapped like ansible modules.
 */
function saltLike(targeted: boolean): Wrapper {
  return (args) => {
    const start = firstOperand(args, SALT_VALUED, "tblca");
    const ops = args.slice(start + (targeted ? 1 : 0));
    const fnWord = ops[0];
    if (fnWord === undefined) return result({});
    if (fnWord.dynamic) return result({ base: hit(3, "dynamic_command") });
    const fn = fnWord.value.toLowerCase();
    const rest = ops.slice(1);
    // Keyword arguments are one word without blanks (`runas=app`); `'FOO=1 rm x'` is a command.
    const positional = rest.filter((w) => !/^\w+=\S*$/.test(w.value));
    const kv = keyValues(rest.map((w) => w.value).join(" "));
    if (/^true$/i.test(kv.get("test") ?? "") && fn.startsWith("state.")) return result({});
    if (/^cmd\.(?:run|shell|run_all|run_stdout|run_stderr|run_bg|powershell)$/.test(fn)) {
      const cmdKw = rest.find((w) => w.value.startsWith("cmd="));
      const line = cmdKw !== undefined ? { ...cmdKw, value: cmdKw.value.slice(4) } : positional[0];
      return result({ scripts: line === undefined ? [] : [line] });
    }
    if (/^cmd\.(?:script|script_retcode|exec_code|exec_code_all)$/.test(fn))
      return result({ base: hit(2, "script_file") });
    if (fn.startsWith("state.")) return result({ base: INFRA });
    const effect = moduleEffect(
      fn,
      kv,
      positional.map((w) => w.value),
    );
    if (effect === null) return result({});
    return "hit" in effect ? result({ base: effect.hit }) : result({ inners: [effect.argv] });
  };
}

/** A fan-out tool: options, then (for most) a command line that each host's shell runs. */
function fanout(valued: ReadonlySet<string>, letters: string): Wrapper {
  return (args) => {
    const rest = args.slice(firstOperand(args, valued, letters));
    return rest.length === 0 ? result({}) : result({ scripts: [joinAll(rest)] });
  };
}

/** clush: `-c/--copy/--rcopy` copies files instead of running a command. */
const clush: Wrapper = (args) =>
  has(args, "-c", "--copy", "--rcopy")
    ? result({ base: hit(2, "filesystem_change") })
    : fanout(
        set("-w", "-x", "-g", "-X", "-l", "-f", "-t", "-u", "-R", "-o", "-O", "--hostfile", "--worker"),
        "wxgXlftuRoO",
      )(args);

/** mussh: `-c CMD` runs a command on every host, `-C FILE` a local script. */
const mussh: Wrapper = (args) => {
  if (has(args, "-C")) return result({ base: hit(2, "script_file") });
  const cmd = optionWord(args, "-c", null);
  return cmd === null ? null : result({ scripts: [cmd] });
};

const KNIFE_VALUED = set(
  ..."-x --ssh-user -a --attribute -i --ssh-identity-file -p --ssh-port -P --ssh-password -G --ssh-gateway".split(
    " ",
  ),
  ..."-C --concurrency --ssh-timeout -c --config -E --environment -u --user -k --key -s --server-url".split(
    " ",
  ),
);

/** `knife ssh QUERY COMMAND`: the second operand is a command line for every node found. */
const knife: Wrapper = (args) => {
  if (args[0]?.value !== "ssh") return null;
  const ops: Word[] = [];
  for (let i = 1; i < args.length; i++) {
    const v = args[i]!.value;
    if (KNIFE_VALUED.has(v)) i++;
    else if (!(v.startsWith("-") && v.length > 1)) ops.push(args[i]!);
  }
  return result({ scripts: ops[1] === undefined ? [] : [ops[1]] });
};

/** Fabric: `fab -H hosts -- CMD` runs CMD on each host; `fab TASK` runs a fabfile's Python. */
const fab: Wrapper = (args) => {
  const carried = afterDashes(args);
  if (carried !== null) return carried.length === 0 ? result({}) : result({ scripts: [joinAll(carried)] });
  if (has(args, "-l", "--list", "-h", "--help", "-V", "--version")) return result({});
  const task = firstOperand(
    args,
    set("-H", "--hosts", "-i", "-f", "--fabfile", "-u", "--user", "-S"),
    "HifuS",
  );
  return task < args.length ? result({ base: hit(2, "script_file") }) : result({});
};

const CONSUL_EXEC_VALUED = set(
  ..."-node -service -tag -wait -wait-repl -http-addr -token -token-file -datacenter -prefix".split(" "),
  ..."-ca-file -ca-path -client-cert -client-key -namespace -partition -tls-server-name".split(" "),
);

/** `consul exec CMD`: the shell of every node the call selects runs CMD, a change there whatever it is. */
const consul: Wrapper = (args) => {
  if (args[0]?.value !== "exec") return null;
  const rest = args.slice(1);
  const command = rest.slice(firstOperand(rest, CONSUL_EXEC_VALUED));
  return result({ base: hit(2, "remote_change"), scripts: command.length > 0 ? [joinAll(command)] : [] });
};

/** `etcdctl watch KEY -- CMD…`: CMD runs on every change of the key. */
const etcdctl: Wrapper = (args) => {
  const dashes = args.findIndex((w) => w.value === "--");
  if (dashes < 0 || !args.slice(0, dashes).some((w) => w.value === "watch")) return null;
  return result({ inners: argv(args.slice(dashes + 1)), perItem: true });
};

export const CARRIERS: ReadonlyMap<string, Wrapper> = new Map<string, Wrapper>([
  ["consul", consul],
  ["etcdctl", etcdctl],
  ["ansible", ansible],
  ["ansible-playbook", ansiblePlaybook],
  ["salt", saltLike(true)],
  ["salt-ssh", saltLike(true)],
  ["salt-call", saltLike(false)],
  ["pdsh", fanout(set("-w", "-x", "-g", "-X", "-l", "-R", "-t", "-u", "-f", "-F"), "wxgXlRtufF")],
  ["clush", clush],
  [
    "dsh",
    fanout(
      set(
        "-m",
        "--machine",
        "-g",
        "--group",
        "-r",
        "--remoteshell",
        "-o",
        "--remoteshellopt",
        "-f",
        "--file",
        "-F",
        "--forklimit",
      ),
      "mgroF",
    ),
  ],
  [
    "pssh",
    fanout(
      set("-h", "-H", "-l", "-p", "-o", "-e", "-t", "-O", "-x", "-X", "--hosts", "--host", "--user", "--par"),
      "hHlpoetOxX",
    ),
  ],
  [
    "parallel-ssh",
    fanout(
      set("-h", "-H", "-l", "-p", "-o", "-e", "-t", "-O", "-x", "-X", "--hosts", "--host", "--user", "--par"),
      "hHlpoetOxX",
    ),
  ],
  ["mussh", mussh],
  ["knife", knife],
  ["fab", fab],
  ...LOCAL_CARRIERS,
]);
