import { type Hit, hit } from "../rules/args.js";
import { KUBE_VALUED } from "../rules/infra.js";
import type { Word } from "../shell/words.js";
import { argv, joinAll, PRIV, result, set, simple, ssh, suLike, type Wrapper } from "./parsers.js";

/**
 * Carried commands that run on this host in another context: a container
 * (`docker exec`, `kubectl exec`, `lxc exec`, `docker run IMAGE cmd`), a
 * network namespace, another user, a language environment or secret store
 * (`conda run`, `aws-vault exec -- cmd`), a terminal multiplexer's pane. The
 * carried argv or command line is classified as if typed here.
 */

const CONTAINER = hit(2, "container_change");

/** Index of the first operand after options; `valued` options take the next word, `letters` inside a cluster. */
export function firstOperand(words: Word[], valued: ReadonlySet<string>, letters = ""): number {
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    const v = w.value;
    if (w.dynamic) return i;
    if (v === "--") return i + 1;
    if (valued.has(v)) {
      i++;
      continue;
    }
    if (v.startsWith("--")) continue;
    if (v.startsWith("-") && v.length > 1) {
      const at = [...v.slice(1)].findIndex((l) => letters.includes(l));
      if (at === v.length - 2) i++;
      continue;
    }
    return i;
  }
  return words.length;
}

/** The value of `-x V`, `-xV`, `--long V` or `--long=V`. */
export function optionWord(words: Word[], short: string | null, long: string | null): Word | null {
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    const v = w.value;
    if (v === "--") return null;
    if ((v === short || v === long) && words[i + 1] !== undefined) return words[i + 1]!;
    if (long !== null && v.startsWith(`${long}=`)) return { ...w, value: v.slice(long.length + 1) };
    if (short !== null && v.startsWith(short) && v.length > short.length && !v.startsWith("--"))
      return { ...w, value: v.slice(short.length) };
  }
  return null;
}

export function has(words: Word[], ...flags: string[]): boolean {
  return words.some((w) => flags.includes(w.value));
}

/** Words after the first `--`, or null. */
export function afterDashes(words: Word[]): Word[] | null {
  const dd = words.findIndex((w) => w.value === "--");
  return dd < 0 ? null : words.slice(dd + 1);
}

/**
 * `docker exec C cmd`, `kubectl -n ns exec P -- cmd`, `lxc exec C -- cmd`, `docker run IMAGE cmd`,
 * `kubectl run P --image=x -- cmd`, `docker compose exec SVC cmd`: global options, then the verb.
 */
function containerCarrier(
  global: ReadonlySet<string>,
  verbs: Readonly<
    Record<string, { valued: ReadonlySet<string>; letters: string; base: Hit | null; dashesOnly?: boolean }>
  >,
): Wrapper {
  const self: Wrapper = (args) => {
    const at = firstOperand(args, global, "");
    let sub = args[at]?.value;
    let rest = args.slice(at + 1);
    if (sub === "compose" || sub === "container") {
      const inner = firstOperand(
        rest,
        set("-f", "--file", "-p", "--project-name", "--profile", "--env-file", "--project-directory"),
      );
      sub = rest[inner]?.value;
      rest = rest.slice(inner + 1);
    }
    const spec = sub === undefined ? undefined : verbs[sub];
    if (spec === undefined) return null;
    const dashed = afterDashes(rest);
    if (dashed !== null) return result({ base: spec.base, inners: argv(dashed) });
    if (spec.dashesOnly === true) return result({ base: spec.base });
    const start = firstOperand(rest, spec.valued, spec.letters);
    return result({ base: spec.base, inners: argv(rest.slice(start + 1)) });
  };
  return self;
}

const EXEC_OPTS = {
  valued: set(
    "-u",
    "--user",
    "-w",
    "--workdir",
    "-e",
    "--env",
    "--env-file",
    "--detach-keys",
    "--index",
    "-c",
    "--container",
    "--cwd",
    "--group",
    "--mode",
    "--project",
  ),
  letters: "uwec",
  base: null,
};
const RUN_VALUED = set(
  ..."-a --attach --add-host --annotation --blkio-weight --cap-add --cap-drop --cgroup-parent --cgroupns --cidfile".split(
    " ",
  ),
  ..."--cpu-period --cpu-quota --cpu-shares -c --cpus --cpuset-cpus --cpuset-mems --device --dns --dns-option".split(
    " ",
  ),
  ..."--dns-search --domainname --entrypoint -e --env --env-file --expose --gpus --group-add --health-cmd".split(
    " ",
  ),
  ..."-h --hostname --ip --ip6 --ipc --isolation -l --label --label-file --link --log-driver --log-opt".split(
    " ",
  ),
  ..."--mac-address -m --memory --memory-swap --mount --name --network --net --network-alias --pid --pids-limit".split(
    " ",
  ),
  ..."--platform -p --publish --pull --restart --runtime --security-opt --shm-size --stop-signal --stop-timeout".split(
    " ",
  ),
  ..."--storage-opt --sysctl --tmpfs --ulimit -u --user --userns --uts -v --volume --volumes-from -w --workdir".split(
    " ",
  ),
);
const RUN_OPTS = { valued: RUN_VALUED, letters: "acehlmpuvw", base: CONTAINER };
const DOCKER_GLOBAL = set("-H", "--host", "-c", "--context", "--config", "-l", "--log-level");
const KUBE_GLOBAL = KUBE_VALUED;

const dockerLike = containerCarrier(DOCKER_GLOBAL, { exec: EXEC_OPTS, run: RUN_OPTS });
const kubeLike = containerCarrier(KUBE_GLOBAL, {
  exec: EXEC_OPTS,
  run: { ...EXEC_OPTS, base: CONTAINER, dashesOnly: true },
  debug: { ...EXEC_OPTS, base: CONTAINER, dashesOnly: true },
});
const lxcLike = containerCarrier(set("--project"), { exec: { ...EXEC_OPTS, base: CONTAINER } });
const composeLike = containerCarrier(set("-f", "--file", "-p", "--project-name", "--profile", "--env-file"), {
  exec: { ...EXEC_OPTS, letters: "uwe" },
  run: { ...RUN_OPTS, letters: "uwelpv" },
});

/** `ip netns exec NS cmd`: the command runs in that network namespace. */
const ipNetns: Wrapper = (args) =>
  /^netns?$/.test(args[0]?.value ?? "") && args[1]?.value === "exec"
    ? result({ inners: argv(args.slice(3)) })
    : null;

/** runuser: with `-u USER` the command follows the options directly; otherwise like su. */
const RUNUSER_VALUED = set("-u", "--user", "-s", "--shell", "-g", "--group", "-G", "--supp-group", "-w");
const runuserSu = suLike(PRIV, RUNUSER_VALUED, "usgGw");
const runuser: Wrapper = (args) => {
  // Its own options only: a `-l` after the command is the command's.
  const own = args.slice(0, firstOperand(args, RUNUSER_VALUED, "usgGw"));
  if (!has(own, "-u", "--user") || has(own, "-c", "--command", "-l", "--login", "-")) return runuserSu(args);
  return result({ base: PRIV, inners: argv(args.slice(firstOperand(args, RUNUSER_VALUED, "usgGw"))) });
};

/** A command given as one option's value (`vagrant ssh -c CMD`, `nix-shell --run CMD`, `gcloud compute ssh --command=CMD`). */
function optionScript(
  short: string | null,
  long: string,
  when: (args: Word[]) => boolean = () => true,
): Wrapper {
  return (args) => {
    if (!when(args)) return null;
    const s = optionWord(args, short, long);
    return s === null ? null : result({ scripts: [s] });
  };
}

/** `autossh -M PORT …` is ssh with a monitor port. */
const autossh: Wrapper = (args) => {
  const m = args.findIndex((w) => w.value === "-M");
  return ssh(m < 0 ? args : [...args.slice(0, m), ...args.slice(m + 2)]);
};

/** `nix develop -c CMD…`, `nix shell PKG --command CMD…`: everything after the option is the argv. */
const nixCommand: Wrapper = (args) => {
  if (args[0]?.value !== "develop" && args[0]?.value !== "shell") return null;
  const c = args.findIndex((w) => w.value === "-c" || w.value === "--command");
  return c < 0 ? null : result({ inners: argv(args.slice(c + 1)) });
};

/** A runner subcommand (`conda run`, `poetry run`, `bundle exec`) followed by options and the argv. */
function runVerb(verbs: readonly string[], valued: ReadonlySet<string>, letters = ""): Wrapper {
  return (args) => {
    if (!verbs.includes(args[0]?.value ?? "")) return null;
    const rest = args.slice(1);
    return result({ inners: argv(rest.slice(firstOperand(rest, valued, letters))) });
  };
}

/** Only the words after `--` are the command (`aws-vault exec prof -- cmd`, `mosh host -- cmd`). */
function dashesCarrier(verbs: readonly string[] | null): Wrapper {
  return (args) => {
    if (verbs !== null && !verbs.includes(args[0]?.value ?? "")) return null;
    const carried = afterDashes(args);
    return carried === null ? null : result({ inners: argv(carried) });
  };
}

/** tmux: keys sent to a pane, or the shell command of a new session, window or pane. */
const tmux: Wrapper = (args) => {
  const verb = args[0]?.value;
  const rest = args.slice(1);
  const start = firstOperand(
    rest,
    set("-t", "-s", "-n", "-c", "-e", "-F", "-x", "-y", "-l", "-N", "-f"),
    "tsnceFxylNf",
  );
  const ops = rest.slice(start).filter((w) => !/^(?:Enter|C-m|KPEnter|C-j|Escape|Space|Tab)$/.test(w.value));
  if (ops.length === 0) return null;
  if (verb === "send-keys" || verb === "send" || verb === "run-shell" || verb === "run")
    return result({ scripts: [joinAll(ops)] });
  if (
    /^(?:new-session|new|new-window|neww|split-window|splitw|respawn-pane|respawnp|respawn-window)$/.test(
      verb ?? "",
    )
  )
    return result({ scripts: [joinAll(ops)] });
  return null;
};

/** screen: `-X stuff TEXT` types TEXT into a window; otherwise the argv after the options runs in it. */
const screen: Wrapper = (args) => {
  const SCREEN_VALUED = set("-S", "-c", "-e", "-h", "-p", "-T", "-s", "-t", "-X");
  // screen's own options come before the command it starts; a `-r` or `-X` after it is the command's.
  const own = args.slice(0, firstOperand(args, SCREEN_VALUED, "Scehp"));
  const x = own.findIndex((w) => w.value === "-X");
  if (x >= 0) {
    const text = args[x + 1]?.value === "stuff" ? args[x + 2] : undefined;
    return text === undefined
      ? result({})
      : result({ scripts: [{ ...text, value: text.value.replace(/(?:\\n|\\r|\^M)/g, "\n") }] });
  }
  if (has(own, "-r", "-R", "-x", "-ls", "-list", "-wipe")) return null;
  return result({
    inners: argv(
      args.slice(firstOperand(args, set("-S", "-c", "-e", "-h", "-p", "-T", "-s", "-t"), "Scehp")),
    ),
  });
};

export const LOCAL_CARRIERS: ReadonlyMap<string, Wrapper> = new Map<string, Wrapper>([
  ["docker", dockerLike],
  ["podman", dockerLike],
  ["nerdctl", dockerLike],
  ["docker-compose", composeLike],
  ["podman-compose", composeLike],
  [
    "crictl",
    containerCarrier(set("-r", "--runtime-endpoint", "-i", "--image-endpoint"), { exec: EXEC_OPTS }),
  ],
  ["kubectl", kubeLike],
  ["oc", kubeLike],
  ["lxc", lxcLike],
  ["incus", lxcLike],
  ["ip", ipNetns],
  ["runuser", runuser],
  ["sshpass", simple(set("-p", "-f", "-d", "-P"), "pfdP")],
  ["autossh", autossh],
  ["mosh", dashesCarrier(null)],
  ["vagrant", optionScript("-c", "--command", (a) => a[0]?.value === "ssh")],
  ["gcloud", optionScript(null, "--command", (a) => a.some((w) => w.value === "ssh"))],
  ["nix-shell", optionScript(null, "--run")],
  ["nix", nixCommand],
  ["conda", runVerb(["run"], set("-n", "--name", "-p", "--prefix", "--cwd"), "np")],
  ["mamba", runVerb(["run"], set("-n", "--name", "-p", "--prefix", "--cwd"), "np")],
  ["micromamba", runVerb(["run"], set("-n", "--name", "-p", "--prefix", "--cwd"), "np")],
  ["poetry", runVerb(["run"], set("-C", "--directory", "-P", "--project"), "CP")],
  ["pipenv", runVerb(["run"], set())],
  ["pdm", runVerb(["run"], set("-p", "--project"), "p")],
  ["hatch", runVerb(["run"], set("-e", "--env"), "e")],
  ["bundle", runVerb(["exec"], set("--gemfile"))],
  ["rbenv", runVerb(["exec"], set())],
  ["pyenv", runVerb(["exec"], set())],
  ["asdf", runVerb(["exec"], set())],
  ["mise", runVerb(["exec", "x"], set("-C", "--cd", "-j", "--jobs"), "Cj")],
  ["aws-vault", dashesCarrier(["exec"])],
  ["op", dashesCarrier(["run"])],
  ["doppler", dashesCarrier(["run"])],
  ["infisical", dashesCarrier(["run"])],
  ["chamber", dashesCarrier(["exec"])],
  ["direnv", (a) => (a[0]?.value === "exec" ? result({ inners: argv(a.slice(2)) }) : null)],
  ["envdir", simple(set(), "", 1)],
  ["setuidgid", simple(set(), "", 1, PRIV)],
  ["s6-setuidgid", simple(set(), "", 1, PRIV)],
  [
    "chpst",
    simple(
      set("-u", "-U", "-b", "-e", "-n", "-l", "-L", "-m", "-d", "-o", "-p", "-f", "-c", "-r", "-t"),
      "uUbenlLmdopfcrt",
    ),
  ],
  [
    "systemd-nspawn",
    simple(
      set(
        "-D",
        "--directory",
        "-M",
        "--machine",
        "-i",
        "--image",
        "-u",
        "--user",
        "-b",
        "--bind",
        "--bind-ro",
        "--chdir",
        "-E",
        "--setenv",
      ),
      "DMiuE",
    ),
  ],
  [
    "xvfb-run",
    simple(
      set(
        "-n",
        "--server-num",
        "-s",
        "--server-args",
        "-e",
        "--error-file",
        "-f",
        "--auth-file",
        "-p",
        "--xauth-protocol",
        "-w",
        "--wait",
      ),
      "nsefpw",
    ),
  ],
  ["dbus-run-session", simple(set())],
  ["tini", simple(set("-p", "-e"), "pe")],
  ["dumb-init", simple(set("-r", "--rewrite"), "r")],
  ["systemd-inhibit", simple(set("--what", "--who", "--why", "--mode"))],
  ["flatpak-spawn", simple(set("--directory", "--env", "--forward-fd"))],
  ["distrobox", dashesCarrier(["enter"])],
  ["toolbox", runVerb(["run"], set("-c", "--container", "-r", "--release", "-d", "--distro"), "crd")],
  ["ts", simple(set("-L", "-D", "-N"), "LDN")],
  ["nq", simple(set())],
  ["chronic", simple(set())],
  ["tmux", tmux],
  ["screen", screen],
]);
