/**
 * Programs whose later input runs commands: shells, REPLs, debuggers, database
 * and other consoles, editors and pagers with a shell escape. Starting one on a
 * terminal (shell_spawn, ssh_spawn) hands the caller a command line that the
 * classifier only sees a line at a time afterwards, so the start itself is at
 * least Tier 2 (basis `interactive_program`). Pure: words in, a verdict out.
 *
 * The reading errs towards "interactive": a word list it cannot place (an
 * option it does not know that takes a value) may make a one-shot command look
 * interactive, never the other way round for the forms named here.
 */

/** How a console is started for one piece of work rather than for a session. */
interface ConsoleSpec {
  /** Options that run the given code, statement or file and exit (`-c`, `--eval`). */
  oneShot?: readonly string[];
  /** Options that keep it interactive whatever else is given (`python -i`). */
  stay?: readonly string[];
  /** Options whose value is the next word. */
  values?: readonly string[];
  /** Operands it takes before the next one is a script, a statement or a command to run once. */
  operands: number;
  /** Only these options make it a console (`ghc --interactive`). */
  only?: readonly string[];
  /** The one-shot option's value is shell text, read again (`bash -c 'exec bash'`). */
  shellText?: boolean;
  /** Modules whose `-m` starts a REPL or a debugger (`python -m asyncio`). */
  replModules?: readonly string[];
}

const SHELL: ConsoleSpec = {
  oneShot: ["-c", "--command", "-Command", "-File", "-EncodedCommand"],
  stay: ["-s", "-i"],
  values: ["-o", "-O", "+O", "--rcfile", "--init-file"],
  operands: 0,
  shellText: true,
};
const INTERPRETER: ConsoleSpec = {
  oneShot: ["-c", "-e", "-E", "-m", "-r", "-p", "--eval", "--print", "--command", "-x", "--execute"],
  stay: ["-i", "--interactive", "-a", "-d", "-de0", "--repl"],
  values: ["-W", "-X", "-I", "-M", "--require", "--import", "--loader", "-l", "-C", "--project"],
  operands: 0,
  replModules: ["asyncio", "code", "pdb", "IPython", "idlelib", "ptpython", "bpython"],
};
const CLIENT: ConsoleSpec = {
  oneShot: [
    "-c",
    "-e",
    "-f",
    "-q",
    "-Q",
    "-x",
    "--command",
    "--execute",
    "--file",
    "--eval",
    "--query",
    "-l",
  ],
  values: [
    "-h",
    "-p",
    "-U",
    "-u",
    "-d",
    "-D",
    "-P",
    "-S",
    "-H",
    "-a",
    "-n",
    "--host",
    "--port",
    "--user",
    "--username",
    "--dbname",
    "--database",
    "--password",
    "--socket",
    "-cmd",
    "-init",
    "-separator",
    "-nullvalue",
  ],
  operands: Number.POSITIVE_INFINITY,
};
const ALWAYS: ConsoleSpec = { operands: Number.POSITIVE_INFINITY };

const CONSOLES: Readonly<Record<string, ConsoleSpec>> = {
  // shells
  ...Object.fromEntries(
    [
      "sh",
      "bash",
      "rbash",
      "dash",
      "ash",
      "zsh",
      "ksh",
      "mksh",
      "pdksh",
      "oksh",
      "yash",
      "fish",
      "tcsh",
      "csh",
      "elvish",
      "nu",
      "xonsh",
      "pwsh",
      "powershell",
      "osh",
      "ion",
      "rc",
      "es",
    ].map((name) => [name, SHELL]),
  ),
  // interpreters with a REPL, or that read their program from the terminal
  ...Object.fromEntries(
    [
      "python",
      "pypy",
      "ipython",
      "bpython",
      "ptpython",
      "node",
      "nodejs",
      "deno",
      "bun",
      "irb",
      "pry",
      "ruby",
      "perl",
      "php",
      "lua",
      "luajit",
      "R",
      "julia",
      "ghci",
      "scala",
      "clojure",
      "clj",
      "racket",
      "guile",
      "sbcl",
      "clisp",
      "ecl",
      "csi",
      "ocaml",
      "utop",
      "erl",
      "iex",
      "swift",
      "kotlinc",
      "jshell",
      "groovysh",
      "tclsh",
      "wish",
      "expect",
      "octave",
      "sage",
      "gp",
      "dc",
      "pyspark",
      "spark-shell",
    ].map((name) => [name, INTERPRETER]),
  ),
  ghc: { operands: Number.POSITIVE_INFINITY, only: ["--interactive"] },
  // database and service consoles
  ...Object.fromEntries(
    [
      "psql",
      "pgcli",
      "mysql",
      "mariadb",
      "mycli",
      "mongo",
      "mongosh",
      "cqlsh",
      "clickhouse-client",
      "influx",
      "sqlcmd",
      "isql",
      "usql",
      "vsql",
      "snowsql",
      "trino",
      "beeline",
      "hive",
      "spark-sql",
      "cypher-shell",
      "sqlplus",
      "ftp",
      "sftp",
      "lftp",
      "smbclient",
      "bconsole",
    ].map((name) => [name, CLIENT]),
  ),
  nsupdate: { ...CLIENT, operands: 0 },
  sqlite3: { ...CLIENT, operands: 1 },
  duckdb: { ...CLIENT, operands: 1 },
  litecli: { ...CLIENT, operands: 1 },
  "redis-cli": { ...CLIENT, oneShot: ["--eval"], operands: 0 },
  "valkey-cli": { ...CLIENT, oneShot: ["--eval"], operands: 0 },
  // debuggers
  gdb: {
    oneShot: ["-batch", "--batch"],
    values: ["-ex", "-x", "-p", "--pid"],
    operands: Number.POSITIVE_INFINITY,
  },
  lldb: { oneShot: ["--batch", "-b"], values: ["-o", "-s", "-p"], operands: Number.POSITIVE_INFINITY },
  ...Object.fromEntries(["cgdb", "jdb", "dlv", "pdb", "r2", "radare2", "bashdb"].map((n) => [n, ALWAYS])),
  // remote and container terminals, multiplexers
  ...Object.fromEntries(
    ["telnet", "mosh", "rlogin", "tmux", "byobu", "login", "newgrp"].map((n) => [n, ALWAYS]),
  ),
  // editors, pagers and file managers with a shell escape (`:!`, `!`)
  ...Object.fromEntries(
    [
      "vi",
      "vim",
      "nvim",
      "view",
      "vimdiff",
      "ex",
      "ed",
      "emacs",
      "less",
      "more",
      "most",
      "man",
      "mc",
      "ranger",
      "vifm",
      "nnn",
      "mutt",
      "neomutt",
    ].map((n) => [n, ALWAYS]),
  ),
};

/** How a program that runs another program is read (`sudo`, `env`, `timeout 5`, `ssh host`). */
interface WrapperSpec {
  values?: readonly string[];
  /** Operands the wrapper consumes before the command (timeout's duration, chroot's directory, ssh's host). */
  operands?: number;
  /** Options whose value is shell text the wrapper runs (`su -c`, `flock -c`, `env -S`). */
  text?: readonly string[];
  /** With no command after it: it starts a shell (chroot, su), or does so only with one of these flags (sudo -i). */
  bare: "shell" | "none" | readonly string[];
  /** The command after it is handed to a shell as text (ssh's remote command). */
  joins?: boolean;
  /** Options with which it runs nothing (`command -v`). */
  inert?: readonly string[];
}

const WRAPPERS: Readonly<Record<string, WrapperSpec>> = {
  env: { values: ["-u", "-C", "--unset", "--chdir"], text: ["-S", "--split-string"], bare: "none" },
  sudo: {
    values: [
      "-u",
      "-g",
      "-h",
      "-p",
      "-C",
      "-D",
      "-r",
      "-t",
      "-U",
      "-T",
      "-R",
      "--user",
      "--group",
      "--chdir",
    ],
    bare: ["-i", "-s", "--login", "--shell"],
  },
  doas: { values: ["-u", "-C"], bare: ["-s"] },
  su: {
    values: ["-s", "-g", "-G", "-w", "--shell", "--group"],
    text: ["-c", "--command"],
    operands: 1,
    bare: "shell",
  },
  runuser: {
    values: ["-u", "-s", "-g", "-G", "--user", "--shell"],
    text: ["-c", "--command"],
    bare: "shell",
  },
  sg: { text: ["-c"], operands: 1, bare: "shell" },
  nice: { values: ["-n", "--adjustment"], bare: "none" },
  ionice: { values: ["-c", "-n", "-p", "-P", "-u"], bare: "none" },
  nohup: { bare: "none" },
  stdbuf: { values: ["-i", "-o", "-e"], bare: "none" },
  timeout: { values: ["-s", "-k", "--signal", "--kill-after"], operands: 1, bare: "none" },
  time: { values: ["-f", "-o", "--format", "--output"], bare: "none" },
  exec: { values: ["-a"], bare: "none" },
  command: { bare: "none", inert: ["-v", "-V"] },
  busybox: { bare: "none" },
  builtin: { bare: "none" },
  setsid: { bare: "none" },
  taskset: { values: ["-c", "--cpu-list"], operands: 1, bare: "none" },
  chrt: { operands: 1, bare: "none" },
  cgexec: { values: ["-g"], bare: "none" },
  flock: {
    values: ["-w", "-E", "--timeout", "--conflict-exit-code"],
    text: ["-c", "--command"],
    operands: 1,
    bare: "none",
  },
  strace: {
    values: ["-o", "-e", "-p", "-s", "-u", "-E", "-a", "-P", "-b", "-I", "-O", "-S", "-X"],
    bare: "none",
  },
  ltrace: { values: ["-o", "-e", "-p", "-s", "-u", "-a", "-l", "-n"], bare: "none" },
  valgrind: { bare: "none" },
  faketime: { operands: 1, bare: "none" },
  unbuffer: { bare: "none" },
  rlwrap: { values: ["-a", "-f", "-H", "-l", "-P", "-S", "-z"], bare: "none" },
  proxychains: { values: ["-f"], bare: "none" },
  proxychains4: { values: ["-f"], bare: "none" },
  torsocks: { bare: "none" },
  tsocks: { bare: "none" },
  eatmydata: { bare: "none" },
  catchsegv: { bare: "none" },
  "xvfb-run": { bare: "none" },
  "dbus-run-session": { bare: "none" },
  "systemd-run": { values: ["-u", "-p", "-E", "-M", "--unit", "--property", "--setenv"], bare: "none" },
  firejail: { bare: "shell" },
  chroot: { operands: 1, bare: "shell" },
  nsenter: { values: ["-t", "-S", "-G", "--target"], bare: "shell" },
  unshare: { bare: "shell" },
  script: {
    values: ["-E", "-I", "-O", "-B", "-T", "-t", "-m"],
    text: ["-c", "--command"],
    operands: 1,
    bare: "shell",
  },
  screen: { values: ["-S", "-c", "-e", "-p", "-T", "-t"], bare: "shell" },
  watch: { values: ["-n", "-d", "--interval"], bare: "none" },
  xargs: { values: ["-I", "-L", "-n", "-P", "-s", "-d", "-E", "-a"], bare: "none" },
  ssh: {
    values: [
      "-b",
      "-c",
      "-D",
      "-E",
      "-e",
      "-F",
      "-I",
      "-i",
      "-J",
      "-L",
      "-l",
      "-m",
      "-O",
      "-o",
      "-p",
      "-Q",
      "-R",
      "-S",
      "-W",
      "-w",
      "-B",
    ],
    operands: 1,
    bare: "shell",
    joins: true,
  },
  rsh: { values: ["-l"], operands: 1, bare: "shell", joins: true },
  eval: { bare: "none", joins: true },
};

/** Programs that attach the terminal to a process in a container or machine: `-i` hands it the input. */
const ATTACHERS = new Set(["docker", "podman", "nerdctl", "kubectl", "oc", "lxc", "incus", "crictl"]);
const ATTACH_VERBS = new Set(["exec", "run", "attach", "start", "debug", "shell"]);
const ATTACH_FLAGS = new Set(["-i", "-it", "-ti", "--interactive", "--stdin", "--tty", "-t"]);
/** `machinectl shell`, `vagrant ssh`, `toolbox enter`: a login on something else. */
const LOGINS: Readonly<Record<string, readonly string[]>> = {
  machinectl: ["shell", "login"],
  vagrant: ["ssh"],
  toolbox: ["enter", "run"],
  distrobox: ["enter"],
  "lxc-attach": [""],
  "lxc-console": [""],
};

const MAX_DEPTH = 16;
const VERSIONED = /^(python|pypy|ipython|ruby|perl|php|lua|tclsh|wish|guile|node)[0-9.]*$/;

/**
 * The first command in shell text that starts a program whose later input runs
 * commands, as it was written (for the basis part), or null when there is none.
 */
export function findInteractiveProgram(text: string): string | null {
  return inText(text, 0);
}

function inText(text: string, depth: number): string | null {
  if (depth > MAX_DEPTH) return text.slice(0, 120);
  for (const words of simpleCommands(text)) {
    if (isInteractive(words, depth)) return words.join(" ").slice(0, 120);
  }
  return null;
}

function baseName(word: string): string {
  const name = word.slice(word.lastIndexOf("/") + 1);
  return VERSIONED.test(name) ? name.replace(/[0-9.]+$/, "") : name;
}

/** A word's option name: `--x=1` → `--x`; anything else as written. */
function optionName(word: string): string {
  const eq = word.indexOf("=");
  return word.startsWith("--") && eq > 0 ? word.slice(0, eq) : word;
}

/** Each option a word stands for: `-lc` is `-l` and `-c` as well as itself, unless it is a known option (`-cmd`). */
function optionsOf(word: string, known: ReadonlySet<string>): string[] {
  const name = optionName(word);
  if (known.has(name)) return [name];
  if (/^-[A-Za-z0-9]{2,}$/.test(name)) return [name, ...[...name.slice(1)].map((c) => `-${c}`)];
  return [name];
}

function isInteractive(words: readonly string[], depth: number): boolean {
  let rest = words;
  while (rest[0] !== undefined && /^[A-Za-z_][A-Za-z0-9_]*=/.test(rest[0])) rest = rest.slice(1);
  for (let hop = 0; hop < MAX_DEPTH; hop++) {
    const first = rest[0];
    if (first === undefined) return false;
    const name = baseName(first);
    const args = rest.slice(1);
    const wrapper = Object.hasOwn(WRAPPERS, name) ? WRAPPERS[name] : undefined;
    if (wrapper) {
      const next = unwrap(wrapper, args, depth);
      if (typeof next === "boolean") return next;
      rest = next;
      continue;
    }
    if (ATTACHERS.has(name)) return attaches(args);
    const logins = Object.hasOwn(LOGINS, name) ? LOGINS[name] : undefined;
    if (logins) return logins.includes("") || logins.includes(args.find((a) => !a.startsWith("-")) ?? "");
    const spec = Object.hasOwn(CONSOLES, name) ? CONSOLES[name] : undefined;
    return spec ? isConsole(spec, args, depth) : false;
  }
  return true;
}

/** The wrapped command's words, or the verdict when the wrapper decides it (a shell, or nothing to run). */
function unwrap(spec: WrapperSpec, args: readonly string[], depth: number): readonly string[] | boolean {
  const values = new Set(spec.values ?? []);
  const texts = new Set(spec.text ?? []);
  const known = new Set([...values, ...texts, ...(spec.inert ?? [])]);
  const seen = new Set<string>();
  let i = 0;
  let operands = 0;
  while (i < args.length) {
    const word = args[i] as string;
    if (word === "--") {
      i += 1;
      break;
    }
    // `su -` is a login, not an operand.
    if (word.startsWith("-")) {
      const names = optionsOf(word, known);
      if (names.some((n) => spec.inert?.includes(n))) return false;
      for (const n of names) seen.add(n);
      const text = names.find((n) => texts.has(n));
      if (text !== undefined) {
        const eq = word.indexOf("=");
        const value = eq > 0 && word.startsWith("--") ? word.slice(eq + 1) : args[i + 1];
        return value !== undefined && inText(value, depth + 1) !== null;
      }
      i += names.some((n) => values.has(n)) && !word.includes("=") ? 2 : 1;
      continue;
    }
    if (operands < (spec.operands ?? 0)) {
      operands += 1;
      i += 1;
      continue;
    }
    break;
  }
  // env and sudo take assignments before the command.
  while (args[i] !== undefined && /^[A-Za-z_][A-Za-z0-9_]*=/.test(args[i] as string)) i += 1;
  const command = args.slice(i);
  if (command.length === 0) {
    if (spec.bare === "shell") return true;
    if (spec.bare === "none") return false;
    return spec.bare.some((flag) => seen.has(flag));
  }
  if (spec.joins) return inText(command.join(" "), depth + 1) !== null;
  return command;
}

function attaches(args: readonly string[]): boolean {
  const verb = args.find((a) => !a.startsWith("-"));
  if (verb === undefined || !ATTACH_VERBS.has(verb)) return false;
  return args.some((a) => ATTACH_FLAGS.has(optionName(a)) || /^-[A-Za-z]*i[A-Za-z]*$/.test(a));
}

function isConsole(spec: ConsoleSpec, args: readonly string[], depth: number): boolean {
  const oneShot = new Set(spec.oneShot ?? []);
  const stay = new Set(spec.stay ?? []);
  const values = new Set(spec.values ?? []);
  const known = new Set([...oneShot, ...stay, ...values, ...(spec.only ?? [])]);
  let staying = false;
  let once = false;
  let wanted = spec.only === undefined;
  let operands = 0;
  for (let i = 0; i < args.length; i++) {
    const word = args[i] as string;
    if (word === "--" || word === "-") {
      // `-` reads the program from the terminal; `--` ends the options, operands follow.
      if (word === "-") staying = true;
      continue;
    }
    if ((word.startsWith("-") || word.startsWith("+")) && word.length > 1) {
      const names = optionsOf(word, known);
      if (spec.only?.some((o) => names.includes(o))) wanted = true;
      if (names.some((n) => stay.has(n))) staying = true;
      const shot = names.find((n) => oneShot.has(n));
      if (shot !== undefined) {
        once = true;
        const eq = word.indexOf("=");
        const inline = eq > 0 && word.startsWith("--");
        const value = inline ? word.slice(eq + 1) : args[i + 1];
        if (value !== undefined && shot === "-m" && spec.replModules?.includes(value)) return true;
        // `bash -c 'exec bash'`: a shell's one-shot program is itself read.
        if (value !== undefined && spec.shellText && inText(value, depth + 1) !== null) return true;
        if (!inline) i += 1;
        continue;
      }
      if (names.some((n) => values.has(n)) && !word.includes("=")) i += 1;
      continue;
    }
    operands += 1;
    if (operands > spec.operands) once = true;
  }
  if (!wanted) return false;
  return staying || !once;
}

/**
 * The simple commands of shell text as word lists, quotes removed: split at
 * `;`, `&`, `|`, newlines and parentheses, with command substitutions read as
 * commands of their own. Redirection targets are dropped. Approximate on
 * purpose (no grammar, no expansion): it only has to find program names.
 */
export function simpleCommands(text: string): string[][] {
  const out: string[][] = [];
  readList(text, 0, "", 0, out);
  return out;
}

function readList(text: string, start: number, closer: string, depth: number, out: string[][]): number {
  const n = text.length;
  let words: string[] = [];
  let word = "";
  let inWord = false;
  let dropNext = false;
  const endWord = () => {
    if (inWord) {
      if (dropNext) dropNext = false;
      else words.push(word);
    }
    word = "";
    inWord = false;
  };
  const endCommand = () => {
    endWord();
    if (words.length > 0) out.push(words);
    words = [];
  };
  const nested = (at: number, close: string): number => {
    inWord = true;
    word += "$";
    return depth < MAX_DEPTH ? readList(text, at, close, depth + 1, out) : at;
  };
  let i = start;
  while (i < n) {
    const c = text[i] as string;
    if (closer !== "" && c === closer) {
      endCommand();
      return i + 1;
    }
    if (c === "\\") {
      if (text[i + 1] !== "\n") {
        inWord = true;
        word += text[i + 1] ?? "";
      }
      i += 2;
    } else if (c === " " || c === "\t" || c === "\r") {
      endWord();
      i += 1;
    } else if (";&|()\n{}".includes(c)) {
      endCommand();
      i += 1;
    } else if (c === "<" || c === ">") {
      if (inWord && /^\d+$/.test(word)) {
        word = "";
        inWord = false;
      } else endWord();
      i += 1;
      while (i < n && "<>&|-".includes(text[i] as string)) i += 1;
      if (text[i] !== "(") dropNext = true;
    } else if (c === "#" && !inWord) {
      const eol = text.indexOf("\n", i);
      i = eol === -1 ? n : eol;
    } else if (c === "'") {
      inWord = true;
      const end = text.indexOf("'", i + 1);
      word += text.slice(i + 1, end === -1 ? n : end);
      i = end === -1 ? n : end + 1;
    } else if (c === "$" && text[i + 1] === "(") {
      i = nested(i + 2, ")");
    } else if (c === "$" && text[i + 1] === "'") {
      inWord = true;
      const [body, next] = ansiC(text, i + 2);
      word += body;
      i = next;
    } else if (c === "`") {
      i = nested(i + 1, "`");
    } else if (c === '"') {
      inWord = true;
      i += 1;
      while (i < n && text[i] !== '"') {
        const d = text[i] as string;
        if (d === "\\" && i + 1 < n) {
          const e = text[i + 1] as string;
          if (e !== "\n") word += '\\"$`'.includes(e) ? e : d + e;
          i += 2;
        } else if (d === "$" && text[i + 1] === "(") {
          i = nested(i + 2, ")");
        } else if (d === "`") {
          i = nested(i + 1, "`");
        } else {
          word += d;
          i += 1;
        }
      }
      i += 1;
    } else {
      inWord = true;
      word += c;
      i += 1;
    }
  }
  endCommand();
  return n;
}

const ANSI_LETTERS: Readonly<Record<string, string>> = {
  a: "\x07",
  b: "\b",
  e: "\x1b",
  E: "\x1b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
  v: "\v",
};

/** The body of `$'...'` from `start` (after the quote), decoded, and the index after its end. */
function ansiC(text: string, start: number): [string, number] {
  let out = "";
  let i = start;
  while (i < text.length && text[i] !== "'") {
    if (text[i] !== "\\") {
      out += text[i];
      i += 1;
      continue;
    }
    const rest = text.slice(i + 1, i + 10);
    const code =
      /^x([0-9A-Fa-f]{1,2})/.exec(rest) ??
      /^u([0-9A-Fa-f]{1,4})/.exec(rest) ??
      /^U([0-9A-Fa-f]{1,8})/.exec(rest) ??
      /^([0-7]{1,3})/.exec(rest);
    if (code) {
      const radix = code[0].startsWith("x") || code[0].startsWith("u") || code[0].startsWith("U") ? 16 : 8;
      const point = Number.parseInt(code[1] as string, radix);
      out += point <= 0x10ffff ? String.fromCodePoint(point) : "";
      i += 1 + code[0].length;
    } else {
      const e = text[i + 1] ?? "";
      out += Object.hasOwn(ANSI_LETTERS, e) ? ANSI_LETTERS[e] : e;
      i += 2;
    }
  }
  return [out, i + 1];
}
