/**
 * What the Python classifier knows about the standard library and a few
 * common packages: which calls run commands, delete, write, load code or
 * talk to the network, and which calls of a dangerous module are known to be
 * safe. Names are fully qualified (`os.system`, `pathlib.Path().unlink` for a
 * method of a path object, `?.unlink` for a method of an unknown object).
 */

/** What a call does, and so how its arguments are read. */
export type PyAction =
  | "shell" // arg 0 is a shell command line
  | "subprocess" // arg 0 (or args=) is a command line (str) or an argv (list)
  | "exec" // os.exec*: path, then argv
  | "spawn" // os.spawn*: mode, path, then argv
  | "posix_spawn" // os.posix_spawn(path, argv, env)
  | "exec_args" // asyncio.create_subprocess_exec(program, *args)
  | "rmtree" // recursive delete of arg 0
  | "delete" // delete one file: arg 0, or the receiver path
  | "rmdir" // remove one directory: arg 0, or the receiver path
  | "open" // open(path, mode): a write when the mode writes
  | "os_open" // os.open(path, flags)
  | "write" // write the receiver path (write_text, write_bytes)
  | "move" // rename/replace/move: arg 0 → arg 1 (or receiver → arg 0)
  | "copy" // copy arg 0 → arg 1
  | "chmod" // os.chmod(path, mode) / Path.chmod(mode)
  | "chown"
  | "symlink" // os.symlink(src, dst) / Path.symlink_to(src)
  | "link"
  | "truncate" // os.truncate(path, length)
  | "kill" // os.kill(pid, sig)
  | "sql" // cursor.execute(sql): arg 0 is SQL text
  | "fork" // os.fork: only a signal inside a loop
  | "code" // eval / exec / compile: arg 0 is Python source
  | "import" // __import__ / importlib.import_module: arg 0 names a module
  | "getattr" // getattr(obj, name)
  | "introspect" // globals(), vars(), locals(): a way around name resolution
  | "opaque" // loads or runs code the classifier cannot see
  | "network"; // talks to the network

const entries = (action: PyAction, names: string[]): [string, PyAction][] => names.map((n) => [n, action]);

const OS_EXEC = ["execv", "execve", "execvp", "execvpe", "execl", "execle", "execlp", "execlpe"];
const OS_SPAWN = ["spawnv", "spawnve", "spawnvp", "spawnvpe", "spawnl", "spawnle", "spawnlp", "spawnlpe"];
const SUBPROCESS = ["run", "call", "check_call", "check_output", "Popen", "getoutput", "getstatusoutput"];

/** Fully qualified calls with a known effect. */
export const PY_CALLS: ReadonlyMap<string, PyAction> = new Map<string, PyAction>([
  ...entries("shell", ["os.system", "os.popen", "posix.system", "platform.popen", "commands.getoutput"]),
  ...entries("shell", ["commands.getstatusoutput", "asyncio.create_subprocess_shell"]),
  ...entries(
    "subprocess",
    SUBPROCESS.map((n) => `subprocess.${n}`),
  ),
  ...entries("subprocess", ["pty.spawn", "os.popen2", "os.popen3", "os.popen4"]),
  ...entries("shell", ["pexpect.spawn", "pexpect.run", "pexpect.popen_spawn.PopenSpawn", "invoke.run"]),
  ...entries("shell", ["fabric.api.local", "fabric.api.run", "fabric.api.sudo"]),
  ...entries(
    "exec",
    OS_EXEC.map((n) => `os.${n}`),
  ),
  ...entries(
    "exec",
    OS_EXEC.map((n) => `posix.${n}`),
  ),
  ...entries(
    "spawn",
    OS_SPAWN.map((n) => `os.${n}`),
  ),
  ...entries("posix_spawn", ["os.posix_spawn", "os.posix_spawnp"]),
  ...entries("exec_args", ["asyncio.create_subprocess_exec"]),
  ...entries("rmtree", ["shutil.rmtree"]),
  ...entries("delete", ["os.remove", "os.unlink", "posix.remove", "posix.unlink", "pathlib.Path.unlink"]),
  ...entries("delete", ["pathlib.Path().unlink"]),
  ...entries("rmdir", ["os.rmdir", "os.removedirs", "pathlib.Path.rmdir", "pathlib.Path().rmdir"]),
  ...entries("open", ["builtins.open", "io.open", "codecs.open", "gzip.open", "bz2.open", "lzma.open"]),
  ...entries("open", ["io.FileIO", "_io.open", "_io.FileIO", "os.fdopen"]),
  ...entries("open", ["pathlib.Path().open", "pathlib.Path.open"]),
  ...entries("os_open", ["os.open"]),
  ...entries("write", ["pathlib.Path().write_text", "pathlib.Path().write_bytes"]),
  ...entries("move", ["os.rename", "os.replace", "os.renames", "shutil.move"]),
  ...entries("move", ["pathlib.Path().rename", "pathlib.Path().replace"]),
  ...entries("copy", ["shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.copytree"]),
  ...entries("chmod", ["os.chmod", "os.lchmod", "pathlib.Path().chmod", "pathlib.Path().lchmod"]),
  ...entries("chown", ["os.chown", "os.lchown", "os.fchown", "shutil.chown"]),
  ...entries("symlink", ["os.symlink", "pathlib.Path().symlink_to"]),
  ...entries("link", ["os.link", "pathlib.Path().hardlink_to"]),
  ...entries("truncate", ["os.truncate"]),
  ...entries("kill", ["os.kill", "os.killpg"]),
  ...entries("fork", ["os.fork", "os.forkpty", "pty.fork"]),
  ...entries("code", ["builtins.eval", "builtins.exec", "builtins.compile", "builtins.execfile"]),
  ...entries("import", ["builtins.__import__", "importlib.import_module", "importlib.__import__"]),
  ...entries("getattr", ["builtins.getattr"]),
  ...entries("introspect", ["builtins.globals", "builtins.vars", "builtins.locals"]),
  ...entries("opaque", ["pickle.load", "pickle.loads", "marshal.load", "marshal.loads", "dill.load"]),
  ...entries("opaque", ["dill.loads", "shelve.open", "runpy.run_path", "runpy.run_module"]),
  ...entries("opaque", ["code.interact", "os.startfile", "builtins.breakpoint", "pdb.run"]),
]);

/**
 * Methods recognised on an object the classifier could not type. Only names
 * that no common type uses for something harmless: `remove`, `replace`,
 * `kill` and `truncate` are left out (lists, strings, Popen objects, open
 * files).
 */
export const UNKNOWN_METHODS: ReadonlyMap<string, PyAction> = new Map<string, PyAction>([
  ["unlink", "delete"],
  ["rmdir", "rmdir"],
  ["rmtree", "rmtree"],
  ["removedirs", "rmdir"],
  ["write_text", "write"],
  ["write_bytes", "write"],
  ["symlink_to", "symlink"],
  ["hardlink_to", "link"],
  ["chmod", "chmod"],
  ["lchmod", "chmod"],
  ["chown", "chown"],
  ["lchown", "chown"],
  ["system", "shell"],
  ["popen", "shell"],
  ["getoutput", "shell"],
  ["getstatusoutput", "shell"],
  ["check_output", "subprocess"],
  ["check_call", "subprocess"],
  ["Popen", "subprocess"],
  ["posix_spawn", "posix_spawn"],
  ["posix_spawnp", "posix_spawn"],
  ["create_subprocess_shell", "shell"],
  ["create_subprocess_exec", "exec_args"],
  // DB-API cursors and connections: what they run is SQL
  ["execute", "sql"],
  ["executemany", "sql"],
  ["executescript", "sql"],
  ...OS_EXEC.map((n): [string, PyAction] => [n, "exec"]),
  ...OS_SPAWN.map((n): [string, PyAction] => [n, "spawn"]),
]);

/**
 * Modules whose use can change the system or run code. A program that
 * imports one of them and calls a name the classifier cannot resolve to a
 * known-safe function is opaque.
 */
export const DANGEROUS_MODULES = new Set([
  "os",
  "posix",
  "nt",
  "shutil",
  "subprocess",
  "pty",
  "pathlib",
  "commands",
  "ctypes",
  "cffi",
  "importlib",
  "builtins",
  "__builtin__",
  "pickle",
  "marshal",
  "dill",
  "shelve",
  "runpy",
  "code",
  "codeop",
  // packages that run commands by attribute name or string
  "sh",
  "plumbum",
  "pexpect",
  "invoke",
  "fabric",
  "sarge",
  "envoy",
  "delegator",
  "_io",
]);

/** Modules whose calls reach the network: what comes back can steer the program. */
export const NETWORK_MODULES = new Set([
  "socket",
  "ssl",
  "urllib",
  "urllib2",
  "urllib3",
  "http",
  "requests",
  "httpx",
  "aiohttp",
  "ftplib",
  "smtplib",
  "poplib",
  "imaplib",
  "telnetlib",
  "paramiko",
  "xmlrpc",
  "websocket",
  "websockets",
  "pycurl",
]);

/** Members of the dangerous and network modules known to only read or compute. */
export const SAFE_MEMBERS = new Set([
  ...[
    "getcwd",
    "getcwdb",
    "listdir",
    "scandir",
    "walk",
    "fwalk",
    "stat",
    "lstat",
    "fstat",
    "getenv",
    "getenvb",
    "getpid",
    "getppid",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "getgroups",
    "getlogin",
    "uname",
    "cpu_count",
    "getloadavg",
    "access",
    "fspath",
    "fsencode",
    "fsdecode",
    "strerror",
    "isatty",
    "get_terminal_size",
    "urandom",
    "times",
    "readlink",
    "get_exec_path",
    "makedirs",
    "mkdir",
    "chdir",
    "close",
    "read",
    "write",
    "pipe",
    "dup",
    "dup2",
    "fdopen",
    "wait",
    "waitpid",
    "waitstatus_to_exitcode",
    "WEXITSTATUS",
    "WIFEXITED",
    "utime",
    "fsync",
    "sync",
    "umask",
    "get_blocking",
    "set_blocking",
    "device_encoding",
    "terminal_size",
  ].map((n) => `os.${n}`),
  ...["which", "disk_usage", "get_terminal_size", "copyfileobj", "ignore_patterns"].map((n) => `shutil.${n}`),
  ...["get_archive_formats", "get_unpack_formats", "make_archive", "unpack_archive"].map(
    (n) => `shutil.${n}`,
  ),
  ...["list2cmdline", "CalledProcessError", "TimeoutExpired", "CompletedProcess", "SubprocessError"].map(
    (n) => `subprocess.${n}`,
  ),
  ...["Path", "PurePath", "PosixPath", "PurePosixPath", "WindowsPath", "PureWindowsPath"].map(
    (n) => `pathlib.${n}`,
  ),
  ...["cwd", "home"].map((n) => `pathlib.Path.${n}`),
  ...["gethostname", "getfqdn"].map((n) => `socket.${n}`),
  ...["dumps", "dump", "HIGHEST_PROTOCOL", "PicklingError"].map((n) => `pickle.${n}`),
  ...["dumps", "dump"].map((n) => `marshal.${n}`),
]);

/** Methods of a path object that only read, or create something new. */
export const SAFE_PATH_METHODS = new Set([
  "exists",
  "is_dir",
  "is_file",
  "is_symlink",
  "is_absolute",
  "is_relative_to",
  "iterdir",
  "glob",
  "rglob",
  "walk",
  "read_text",
  "read_bytes",
  "resolve",
  "absolute",
  "stat",
  "lstat",
  "joinpath",
  "with_name",
  "with_suffix",
  "with_stem",
  "relative_to",
  "expanduser",
  "samefile",
  "match",
  "full_match",
  "as_posix",
  "as_uri",
  "owner",
  "group",
  "readlink",
  "mkdir",
  "touch",
  "cwd",
  "home",
]);

/** Attributes that reach into interpreter internals: a way around every name the classifier resolves. */
export const INTROSPECTION = new Set([
  "__subclasses__",
  "__globals__",
  "__builtins__",
  "__dict__",
  "__getattribute__",
  "__code__",
  "__closure__",
  "__import__",
  "__loader__",
  "__bases__",
  "__mro__",
  "__base__",
  "func_globals",
  "f_globals",
  "f_locals",
  "gi_frame",
  "modules",
]);

/** Python builtins a bare name may call (anything else unbound is not a builtin). */
export const BUILTINS = new Set([
  ..."abs all any ascii bin bool bytearray bytes callable chr classmethod complex dict dir divmod".split(" "),
  ..."enumerate filter float format frozenset hasattr hash help hex id input int isinstance".split(" "),
  ..."issubclass iter len list map max memoryview min next object oct ord pow print property range".split(
    " ",
  ),
  ..."repr reversed round set slice sorted staticmethod str sum super tuple type zip aiter anext".split(" "),
  ..."setattr delattr open eval exec compile __import__ getattr globals vars locals breakpoint".split(" "),
  ..."execfile exit quit NotImplementedError Exception ValueError TypeError KeyError OSError".split(" "),
  ..."RuntimeError SystemExit FileNotFoundError IndexError AttributeError StopIteration".split(" "),
  ..."PermissionError IOError ImportError".split(" "),
]);

/** Calls that decode or decompress data, and calls that download it: what `exec` of their result runs. */
export const DECODERS =
  /\b(?:b64decode|b32decode|b16decode|b85decode|a85decode|decodebytes|decodestring|unhexlify|fromhex|decompress|codecs\s*\.\s*decode|rot13|rot_13|loads)\b/;
export const DOWNLOADS = /\b(?:urlopen|urlretrieve|requests\s*\.\s*get|httpx\s*\.\s*get|\.recv\s*\(|urllib)/;
