/**
 * Programs whose later input runs commands: shells, REPLs, debuggers, database
 * and other consoles, editors and pagers with a shell escape, logins on other
 * machines. Starting one on a terminal (shell_spawn, ssh_spawn) hands the
 * caller a command line that the classifier only sees a line at a time
 * afterwards, so the start itself is at least Tier 2 (basis
 * `interactive_program`, ADR 0034). The classifier asks, for each simple
 * command it finds when it judges a terminal's command (ClassifyOptions
 * `terminal`), after its own parser, wrappers and carriers have found the
 * command: this module only knows the programs and their options.
 *
 * It errs towards "interactive": an option it does not know that takes a
 * value may make a one-shot command look interactive, never the other way
 * round for the forms named here.
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
  /** Modules whose `-m` starts a REPL or a debugger (`python -m asyncio`). */
  replModules?: readonly string[];
}

const SHELL: ConsoleSpec = {
  oneShot: ["-c", "--command", "-Command", "-File", "-EncodedCommand"],
  stay: ["-s", "-i"],
  values: ["-o", "-O", "+O", "--rcfile", "--init-file"],
  operands: 0,
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
    ["telnet", "mosh", "rlogin", "tmux", "byobu", "screen", "login", "newgrp"].map((n) => [n, ALWAYS]),
  ),
  // script records a shell unless -c gives it a command
  script: { oneShot: ["-c", "--command"], values: ["-E", "-I", "-O", "-B", "-T", "-t", "-m"], operands: 1 },
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

const VERSIONED = /^(python|pypy|ipython|ruby|perl|php|lua|tclsh|wish|guile|node)[0-9.]*$/;

/**
 * Wrappers that start a shell when no command follows them (`su`, `sudo -i`,
 * `chroot DIR`, `ssh host`): the flags that make them do so, or "always".
 */
const BARE_SHELL: Readonly<Record<string, "always" | readonly string[]>> = {
  su: "always",
  runuser: "always",
  sg: "always",
  newgrp: "always",
  chroot: "always",
  nsenter: "always",
  unshare: "always",
  firejail: "always",
  ssh: "always",
  rsh: "always",
  sudo: ["-i", "-s", "--login", "--shell"],
  doas: ["-s"],
};

/** A wrapper the classifier found with nothing to run after it: does it start a shell? */
export function startsBareShell(name: string, args: readonly string[]): boolean {
  const flags = Object.hasOwn(BARE_SHELL, name) ? BARE_SHELL[name] : undefined;
  if (flags === undefined) return false;
  // ssh -G/-V/-N/-W/-O print, forward or control and start no shell.
  if (name === "ssh" && args.some((a) => /^-[A-Za-z]*[GVNWO]/.test(a) || a === "-s")) return false;
  if (flags === "always") return true;
  return args.some(
    (a) =>
      flags.includes(a) || (/^-[A-Za-z]+$/.test(a) && flags.some((f) => f.length === 2 && a.includes(f[1]!))),
  );
}

/**
 * Whether `name args` (one simple command, after the classifier unwrapped it)
 * starts a program whose later input runs commands.
 */
export function startsConsole(word: string, args: readonly string[]): boolean {
  const name = baseName(word);
  if (ATTACHERS.has(name)) return attaches(args);
  const logins = Object.hasOwn(LOGINS, name) ? LOGINS[name] : undefined;
  if (logins) return logins.includes("") || logins.includes(args.find((a) => !a.startsWith("-")) ?? "");
  const spec = Object.hasOwn(CONSOLES, name) ? CONSOLES[name] : undefined;
  return spec !== undefined && isConsole(spec, args);
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

function attaches(args: readonly string[]): boolean {
  const verb = args.find((a) => !a.startsWith("-"));
  if (verb === undefined || !ATTACH_VERBS.has(verb)) return false;
  return args.some((a) => ATTACH_FLAGS.has(optionName(a)) || /^-[A-Za-z]*i[A-Za-z]*$/.test(a));
}

function isConsole(spec: ConsoleSpec, args: readonly string[]): boolean {
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
