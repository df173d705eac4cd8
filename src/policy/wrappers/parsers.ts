import { type Hit, hit } from "../rules/args.js";
import { dynamicWord, joinWords, literalWord, type Word } from "../shell/words.js";

/**
 * The individual wrapper parsers: each knows one command's options well
 * enough to find the command (or script text) it runs.
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

export type Wrapper = (args: Word[]) => Unwrapped | null;

export const PRIV = hit(2, "privilege_escalation");

export function result(partial: Partial<Unwrapped>): Unwrapped {
  return { base: null, inners: [], scripts: [], perItem: false, stdinConsumed: false, ...partial };
}

export function argv(rest: Word[]): Word[][] {
  return rest.length > 0 ? [rest] : [];
}

/**
 * Index of the first operand after POSIX-style options (options stop at the
 * first operand). `valued` lists options whose value is the next word;
 * `letters` are short options that take a value inside a cluster (`-uroot`).
 */
function skipOptions(
  words: readonly Word[],
  valued: ReadonlySet<string>,
  letters = "",
  assignments = false,
): number {
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

/**
 * The option words before a wrapper's command (its first operand): a flag that changes what the
 * wrapper does counts only there, never among the command's own arguments (`ionice rm -rf /x -p 5`
 * runs rm; `ionice -p 5` only prints).
 */
export function leadingOptions(words: readonly Word[], valued: ReadonlySet<string>, letters = ""): Word[] {
  return words.slice(0, skipOptions(words, valued, letters));
}

export function set(...values: string[]): ReadonlySet<string> {
  return new Set(values);
}

const SUDO_VALUED = set(
  "--user",
  "--group",
  "--host",
  "--prompt",
  "--close-from",
  "--chdir",
  "--role",
  "--type",
  "--other-user",
  "--command-timeout",
);

/**
 * `sudo -l [COMMAND]`, `sudo -V`, `sudo -h`: sudo lists what the policy lets a user run (a command
 * given with -l is only checked, never run), or prints its version or help, and gains no privilege.
 * Only the options that go with listing are allowed, so nothing else can make it act.
 */
export function sudoListsOnly(args: readonly Word[]): boolean {
  if (args.length === 1 && /^(?:-V|--version|-h|--help)$/.test(args[0]!.value)) return true;
  let lists = false;
  for (let i = 0; i < args.length; i++) {
    const w = args[i]!;
    if (w.dynamic || w.glob) return false;
    const v = w.value;
    if (v === "--") return lists;
    if (!v.startsWith("-")) return lists;
    if (v === "-U" || v === "-u" || v === "--other-user" || v === "--user") {
      i++;
      continue;
    }
    if (/^--(?:other-user|user)=\S+$/.test(v) || v === "--non-interactive") continue;
    if (v === "--list") {
      lists = true;
      continue;
    }
    if (!/^-[ln]+$/.test(v)) return false;
    lists ||= v.includes("l");
  }
  return lists;
}

export const sudo: Wrapper = (args) => {
  if (sudoListsOnly(args)) return result({});
  const start = skipOptions(args, SUDO_VALUED, "ughpCDrtUT", true);
  return result({ base: PRIV, inners: argv(args.slice(start)) });
};

export const doas: Wrapper = (args) =>
  result({ base: PRIV, inners: argv(args.slice(skipOptions(args, set(), "Cu"))) });

export const pkexec: Wrapper = (args) =>
  result({ base: PRIV, inners: argv(args.slice(skipOptions(args, set("--user")))) });

/** su / runuser / sg: `-c STRING` (or `--command=STRING`) is a script; anything else is an interactive shell. */
export function suLike(base: Hit | null, valued: ReadonlySet<string>, valuedLetters: string): Wrapper {
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

export const env: Wrapper = (args) => {
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

export function simple(
  valued: ReadonlySet<string>,
  letters = "",
  operandsBefore = 0,
  base: Hit | null = null,
): Wrapper {
  return (args) => {
    const start = skipOptions(args, valued, letters) + operandsBefore;
    return result({ base, inners: argv(args.slice(start)) });
  };
}

export const timeout = simple(set("-s", "--signal", "-k", "--kill-after"), "sk", 1);

/** xargs feeds stdin items as extra arguments: the inner command gets one unknown argument more. */
export const xargs: Wrapper = (args) => {
  const start = skipOptions(
    args,
    set(
      "-E",
      "-I",
      "-L",
      "-n",
      "-P",
      "-s",
      "-d",
      "-a",
      "--arg-file",
      "--delimiter",
      "--max-args",
      "--max-lines",
      "--max-procs",
      "--max-chars",
      "--process-slot-var",
    ),
    "EILnPsda",
  );
  const inner = args.slice(start);
  if (inner.length === 0) return result({ stdinConsumed: true });
  return result({ inners: [[...inner, dynamicWord("{xargs input}")]], perItem: true, stdinConsumed: true });
};

/** find: `-delete` removes every match; `-exec`/`-execdir`/`-ok`/`-okdir` run a command per match. */
export const find: Wrapper = (args) => {
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
export const watch: Wrapper = (args) => {
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
export const ssh: Wrapper = (args) => {
  const start = skipOptions(args, set(), "BbcDEeFIiJLlmOoPpQRSWw");
  const rest = args.slice(start + 1);
  // -s names a subsystem, but only as ssh's own option: a `-s` after the host is the command's.
  if (
    args.slice(0, start).some((w) => /^-[^-]*s/.test(w.value) && !/^-[BbcDEeFIiJLlmOoPpQRSWw]/.test(w.value))
  )
    return result({});
  return rest.length === 0 ? result({}) : result({ scripts: [joinAll(rest)] });
};

/** GNU parallel: the command is the words before `:::` (or one string to be parsed). */
export const parallel: Wrapper = (args) => {
  const start = skipOptions(
    args,
    set("-j", "--jobs", "-S", "--sshlogin", "--joblog", "-a", "--arg-file", "--delay", "--timeout"),
    "jSa",
  );
  let end = start;
  while (end < args.length && !args[end]!.value.startsWith(":::")) end++;
  const cmd = args.slice(start, end);
  if (cmd.length === 0) return result({ stdinConsumed: true });
  if (cmd.length === 1 && /\s/.test(cmd[0]!.value)) return result({ scripts: cmd, perItem: true });
  return result({
    inners: [[...cmd, dynamicWord("{parallel input}")]],
    perItem: true,
    stdinConsumed: end >= args.length,
  });
};

export const flock: Wrapper = (args) => {
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
  const after = args[i + 1]?.value;
  if ((after === "-c" || after === "--command") && args[i + 2] !== undefined)
    return result({ scripts: [args[i + 2]!] });
  return result({ inners: argv(args.slice(i + 1)) });
};

export const script: Wrapper = (args) => {
  for (let i = 0; i < args.length; i++) {
    const v = args[i]!.value;
    if (v === "-c" || v === "--command") return result({ scripts: args[i + 1] ? [args[i + 1]!] : [] });
    if (v.startsWith("--command=")) return result({ scripts: [{ ...args[i]!, value: v.slice(10) }] });
  }
  return null;
};

/**
 * `command [-pVv] NAME ARGS`: with -v or -V among its own options it only prints how NAME would be
 * found; a -v after NAME is NAME's (`command rm -rf /x -v` runs rm).
 */
export const command: Wrapper = (args) => {
  const start = skipOptions(args, set());
  if (args.slice(0, start).some((w) => /^-[pvV]*[vV]/.test(w.value))) return result({});
  return result({ inners: argv(args.slice(start)) });
};

export function joinAll(words: Word[]): Word {
  let out: Word | null = null;
  for (const w of words) out = out === null ? w : joinWords(joinWords(out, literalWord(" ")), w);
  return out ?? literalWord("");
}

export const NONE = set();
