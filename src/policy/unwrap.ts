import { type Hit, hit } from "./rules/args.js";
import { dynamicWord, joinWords, literalWord, type Word } from "./words.js";

/**
 * Commands that run another command: the inner argv (or script text) is what
 * matters. A wrapper answers with its own tier (privilege escalation is Tier 2
 * by itself) and what to classify next; null means "not a wrapper in this
 * form", and the rule tables decide.
 */
export interface Unwrapped {
  base: Hit | null;
  /** argvs to classify next. */
  inners: Word[][];
  /** Script text to parse again (`su -c`, `watch`, `ssh host cmd`, `env -S`). */
  scripts: Word[];
  /** The inner command runs once per input item (xargs, find -exec, parallel). */
  perItem: boolean;
  /** The wrapper reads stdin itself, so the inner command does not see it. */
  stdinConsumed: boolean;
}

type Wrapper = (args: Word[]) => Unwrapped | null;

const PRIV = hit(2, "privilege_escalation");

function result(partial: Partial<Unwrapped>): Unwrapped {
  return { base: null, inners: [], scripts: [], perItem: false, stdinConsumed: false, ...partial };
}

function argv(rest: Word[]): Word[][] {
  return rest.length > 0 ? [rest] : [];
}

/**
 * Index of the first operand after POSIX-style options (options stop at the
 * first operand). `valued` lists options whose value is the next word;
 * `letters` are short options that take a value inside a cluster (`-uroot`).
 */
function skipOptions(words: Word[], valued: ReadonlySet<string>, letters = "", assignments = false): number {
  let i = 0;
  while (i < words.length) {
    const w = words[i]!;
    const v = w.value;
    if (w.dynamic) return i;
    if (v === "--") return i + 1;
    if (valued.has(v)) {
      i += 2;
      continue;
    }
    if (v.startsWith("--")) {
      i++;
      continue;
    }
    if (v.startsWith("-") && v.length > 1) {
      const body = v.slice(1);
      for (let k = 0; k < body.length; k++) {
        if (letters.includes(body[k]!)) {
          if (k === body.length - 1) i++;
          break;
        }
      }
      i++;
      continue;
    }
    if (assignments && /^[A-Za-z_][A-Za-z0-9_]*=/.test(v)) {
      i++;
      continue;
    }
    return i;
  }
  return i;
}

function set(...values: string[]): ReadonlySet<string> {
  return new Set(values);
}

const SUDO_VALUED = set("--user", "--group", "--host", "--prompt", "--close-from", "--chdir", "--role", "--type", "--other-user", "--command-timeout");

const sudo: Wrapper = (args) => {
  const start = skipOptions(args, SUDO_VALUED, "ughpCDrtUT", true);
  return result({ base: PRIV, inners: argv(args.slice(start)) });
};

const doas: Wrapper = (args) => result({ base: PRIV, inners: argv(args.slice(skipOptions(args, set(), "Cu"))) });

const pkexec: Wrapper = (args) => result({ base: PRIV, inners: argv(args.slice(skipOptions(args, set("--user")))) });

/** su / runuser / sg: `-c STRING` (or `--command=STRING`) is a script; anything else is an interactive shell. */
function suLike(base: Hit | null, valued: ReadonlySet<string>, valuedLetters: string): Wrapper {
  return (args) => {
    const scripts: Word[] = [];
    for (let i = 0; i < args.length; i++) {
      const w = args[i]!;
      const v = w.value;
      if (v === "--" && base === PRIV) return result({ base, inners: argv(args.slice(i + 1)), scripts });
      if (v.startsWith("--command=")) scripts.push({ ...w, value: v.slice(10) });
      else if (v === "-c" || v === "--command" || /^-[a-zA-Z]*c$/.test(v)) {
        const next = args[i + 1];
        if (next !== undefined) scripts.push(next);
        i++;
      } else if (valued.has(v) || (v.length === 2 && valuedLetters.includes(v[1]!))) i++;
    }
    return result({ base, scripts });
  };
}

const env: Wrapper = (args) => {
  const scripts: Word[] = [];
  let i = 0;
  while (i < args.length) {
    const w = args[i]!;
    const v = w.value;
    if (w.dynamic) break;
    if (v === "--") {
      i++;
      break;
    }
    if (v === "-S" || v === "--split-string") {
      const s = args[i + 1];
      if (s !== undefined) scripts.push(s);
      return result({ scripts, inners: argv(args.slice(i + 2)) });
    }
    if (v.startsWith("--split-string=") || (v.startsWith("-S") && v.length > 2)) {
      scripts.push({ ...w, value: v.slice(v.startsWith("-S") ? 2 : 15) });
      return result({ scripts, inners: argv(args.slice(i + 1)) });
    }
    if (v === "-u" || v === "-C" || v === "--unset" || v === "--chdir" || v === "-P") {
      i += 2;
      continue;
    }
    if (v.startsWith("-") || /^[A-Za-z_][A-Za-z0-9_]*=/.test(v)) {
      i++;
      continue;
    }
    break;
  }
  return result({ inners: argv(args.slice(i)) });
};

function simple(valued: ReadonlySet<string>, letters = "", operandsBefore = 0, base: Hit | null = null): Wrapper {
  return (args) => {
    const start = skipOptions(args, valued, letters) + operandsBefore;
    return result({ base, inners: argv(args.slice(start)) });
  };
}

const timeout = simple(set("-s", "--signal", "-k", "--kill-after"), "sk", 1);

/** xargs feeds stdin items as extra arguments: the inner command gets one unknown argument more. */
const xargs: Wrapper = (args) => {
  const start = skipOptions(args, set("-E", "-I", "-L", "-n", "-P", "-s", "-d", "-a", "--arg-file", "--delimiter", "--max-args", "--max-lines", "--max-procs", "--max-chars", "--process-slot-var"), "EILnPsda");
  const inner = args.slice(start);
  if (inner.length === 0) return result({ stdinConsumed: true });
  return result({ inners: [[...inner, dynamicWord("{xargs input}")]], perItem: true, stdinConsumed: true });
};

/** find: `-delete` removes every match; `-exec`/`-execdir`/`-ok`/`-okdir` run a command per match. */
const find: Wrapper = (args) => {
  const inners: Word[][] = [];
  let base: Hit | null = null;
  for (let i = 0; i < args.length; i++) {
    const v = args[i]!.value;
    if (v === "-delete") base = hit(3, "file_destruction");
    if (v === "-exec" || v === "-execdir" || v === "-ok" || v === "-okdir") {
      let j = i + 1;
      while (j < args.length && args[j]!.value !== ";" && args[j]!.value !== "+") j++;
      if (j > i + 1) inners.push(args.slice(i + 1, j));
      i = j;
    }
  }
  if (base === null && inners.length === 0) return null;
  return result({ base, inners, perItem: true });
};

/** watch runs its arguments through `sh -c` joined by spaces, unless -x/--exec. */
const watch: Wrapper = (args) => {
  const valued = set("-n", "--interval", "-q", "--equexit");
  let execMode = false;
  let i = 0;
  for (; i < args.length; i++) {
    const v = args[i]!.value;
    if (v === "--") {
      i++;
      break;
    }
    if (v === "-x" || v === "--exec") execMode = true;
    else if (valued.has(v)) i++;
    else if (!(v.startsWith("-") && v.length > 1)) break;
  }
  const rest = args.slice(i);
  if (rest.length === 0) return result({});
  return execMode ? result({ inners: [rest] }) : result({ scripts: [joinAll(rest)] });
};

/** ssh: after the options and the destination, the remaining words are a command line for the remote shell. */
const ssh: Wrapper = (args) => {
  const start = skipOptions(args, set(), "BbcDEeFIiJLlmOoPpQRSWw");
  const rest = args.slice(start + 1);
  if (args.some((w) => w.value === "-s")) return result({});
  return rest.length === 0 ? result({}) : result({ scripts: [joinAll(rest)] });
};

/** `docker exec [opts] CONTAINER cmd ...`, `kubectl exec POD -- cmd ...`. */
const containerExec = (valued: ReadonlySet<string>, letters: string): Wrapper => {
  return (args) => {
    const sub = args[0]?.value;
    if (sub !== "exec") return null;
    const rest = args.slice(1);
    const dd = rest.findIndex((w) => w.value === "--");
    if (dd >= 0) return result({ inners: argv(rest.slice(dd + 1)) });
    const start = skipOptions(rest, valued, letters);
    return result({ inners: argv(rest.slice(start + 1)) });
  };
};

/** GNU parallel: the command is the words before `:::` (or one string to be parsed). */
const parallel: Wrapper = (args) => {
  const start = skipOptions(args, set("-j", "--jobs", "-S", "--sshlogin", "--joblog", "-a", "--arg-file", "--delay", "--timeout"), "jSa");
  let end = start;
  while (end < args.length && !args[end]!.value.startsWith(":::")) end++;
  const cmd = args.slice(start, end);
  if (cmd.length === 0) return result({ stdinConsumed: true });
  if (cmd.length === 1 && /\s/.test(cmd[0]!.value)) return result({ scripts: cmd, perItem: true });
  return result({ inners: [[...cmd, dynamicWord("{parallel input}")]], perItem: true, stdinConsumed: end >= args.length });
};

const flock: Wrapper = (args) => {
  const scripts: Word[] = [];
  let i = 0;
  for (; i < args.length; i++) {
    const v = args[i]!.value;
    if (v === "-c" || v === "--command") {
      const s = args[i + 1];
      if (s !== undefined) scripts.push(s);
      return result({ scripts });
    }
    if (v === "-w" || v === "--timeout" || v === "-E" || v === "--conflict-exit-code") i++;
    else if (!v.startsWith("-")) break;
  }
  return result({ inners: argv(args.slice(i + 1)) });
};

const script: Wrapper = (args) => {
  for (let i = 0; i < args.length; i++) {
    const v = args[i]!.value;
    if (v === "-c" || v === "--command") return result({ scripts: args[i + 1] ? [args[i + 1]!] : [] });
    if (v.startsWith("--command=")) return result({ scripts: [{ ...args[i]!, value: v.slice(10) }] });
  }
  return null;
};

const command: Wrapper = (args) => {
  if (args.some((w) => w.value === "-v" || w.value === "-V")) return result({});
  return result({ inners: argv(args.slice(skipOptions(args, set()))) });
};

export function joinAll(words: Word[]): Word {
  let out: Word | null = null;
  for (const w of words) out = out === null ? w : joinWords(joinWords(out, literalWord(" ")), w);
  return out ?? literalWord("");
}

const NONE = set();

const WRAPPERS = new Map<string, Wrapper>([
  ["sudo", sudo],
  ["doas", doas],
  ["pkexec", pkexec],
  ["run0", simple(set("-u", "--user", "-g", "--group", "-D", "--chdir", "--description", "--slice", "--setenv", "--nice", "--property"), "ugD", 0, PRIV)],
  ["su", suLike(PRIV, set("-s", "--shell", "-g", "--group", "-G", "--supp-group", "-w", "--whitelist-environment"), "sgGw")],
  ["runuser", suLike(PRIV, set("-u", "--user", "-s", "--shell", "-g", "--group", "-G", "--supp-group", "-w"), "usgGw")],
  ["sg", suLike(null, NONE, "")],
  ["machinectl", (args) => (args[0]?.value === "shell" ? result({ base: PRIV, inners: argv(args.slice(2)) }) : null)],
  ["env", env],
  ["nice", simple(set("-n", "--adjustment"), "n")],
  ["nohup", simple(NONE)],
  ["timeout", timeout],
  ["stdbuf", simple(set("-i", "-o", "-e", "--input", "--output", "--error"), "ioe")],
  ["ionice", (args) => (args.some((w) => w.value === "-p" || w.value === "-P") ? null : simple(set("-c", "-n", "--class", "--classdata"), "cn")(args))],
  ["chroot", simple(set("--userspec", "--groups"), "", 1)],
  ["chrt", (args) => (args.some((w) => /^-[a-z]*p/.test(w.value)) ? null : simple(NONE, "T", 1)(args))],
  ["taskset", (args) => (args.some((w) => /^-[a-z]*p/.test(w.value)) ? null : simple(NONE, "", 1)(args))],
  ["numactl", simple(set("-C", "-N", "-m", "-i", "-p", "-P"), "CNmipP")],
  ["cgexec", simple(set("-g"), "g")],
  ["setsid", simple(NONE)],
  ["unshare", simple(set("-S", "--setuid", "-G", "--setgid", "-R", "--root", "-w", "--wd"), "SGRw")],
  ["nsenter", simple(set("-t", "--target", "-S", "--setuid", "-G", "--setgid", "-r", "-w"), "tSG")],
  ["xargs", xargs],
  ["find", find],
  ["watch", watch],
  ["time", simple(set("-f", "--format", "-o", "--output"), "fo")],
  ["command", command],
  ["builtin", simple(NONE)],
  ["exec", simple(set("-a"), "a")],
  ["caffeinate", simple(set("-w", "-t"), "wt")],
  ["eatmydata", simple(NONE)],
  ["fakeroot", simple(set("-l", "--lib", "--faked", "-s", "-i"), "lsi")],
  ["proxychains", simple(set("-f"), "f")],
  ["proxychains4", simple(set("-f"), "f")],
  ["torsocks", simple(set("-u", "-p", "-a", "-P"), "upaP")],
  ["tsocks", simple(NONE)],
  ["firejail", simple(NONE)],
  ["catchsegv", simple(NONE)],
  ["valgrind", simple(NONE)],
  ["strace", simple(set("-o", "-e", "-p", "-s", "-u", "-a", "-E", "-I", "-X", "-P", "-b", "-O", "-S"), "oepsuaEIXPbOS")],
  ["ltrace", simple(set("-o", "-e", "-p", "-s", "-u", "-a", "-n", "-l", "-x", "-E"), "oepsuanlxE")],
  ["faketime", simple(set("-m", "-f"), "", 1)],
  ["unbuffer", simple(NONE)],
  ["busybox", simple(NONE)],
  ["toybox", simple(NONE)],
  ["systemd-run", simple(set("-u", "--unit", "-p", "--property", "-E", "--setenv", "--uid", "--gid", "-M", "--machine", "-H", "--host", "--description", "--slice", "--on-active", "--on-boot", "--on-startup", "--on-unit-active", "--on-unit-inactive", "--on-calendar", "--timer-property", "--working-directory", "--nice"), "upEMH", 0, hit(2, "service_change"))],
  ["su-exec", simple(NONE, "", 1, PRIV)],
  ["gosu", simple(NONE, "", 1, PRIV)],
  ["setpriv", simple(NONE, "", 0, PRIV)],
  ["flock", flock],
  ["script", script],
  ["parallel", parallel],
  ["ssh", ssh],
  ["docker", containerExec(set("-u", "--user", "-w", "--workdir", "-e", "--env", "--env-file", "--detach-keys"), "uwe")],
  ["podman", containerExec(set("-u", "--user", "-w", "--workdir", "-e", "--env", "--env-file", "--detach-keys"), "uwe")],
  ["kubectl", containerExec(set("-c", "--container", "-n", "--namespace", "-f", "--filename"), "cnf")],
]);

export function unwrap(name: string, args: Word[]): Unwrapped | null {
  const w = WRAPPERS.get(name);
  return w === undefined ? null : w(args);
}
