import { hit } from "../rules/args.js";
import type { Word } from "../shell/words.js";
import { CARRIERS } from "./carriers.js";
import {
  argv,
  command,
  doas,
  env,
  find,
  flock,
  leadingOptions,
  NONE,
  PRIV,
  parallel,
  pkexec,
  result,
  script,
  set,
  simple,
  ssh,
  sudo,
  suLike,
  timeout,
  type Unwrapped,
  type Wrapper,
  watch,
  xargs,
} from "./parsers.js";

export { joinAll, type Unwrapped } from "./parsers.js";

/**
 * Commands that run another command: the inner argv (or script text) is what
 * matters. A wrapper answers with its own tier (privilege escalation is Tier 2
 * by itself) and what to classify next; null means "not a wrapper in this
 * form", and the rule tables decide.
 */

const WRAPPERS = new Map<string, Wrapper>([
  ["sudo", sudo],
  ["doas", doas],
  ["pkexec", pkexec],
  [
    "run0",
    simple(
      set(
        "-u",
        "--user",
        "-g",
        "--group",
        "-D",
        "--chdir",
        "--description",
        "--slice",
        "--setenv",
        "--nice",
        "--property",
      ),
      "ugD",
      0,
      PRIV,
    ),
  ],
  [
    "su",
    suLike(
      PRIV,
      set("-s", "--shell", "-g", "--group", "-G", "--supp-group", "-w", "--whitelist-environment"),
      "sgGw",
    ),
  ],
  ["sg", suLike(null, NONE, "")],
  [
    "machinectl",
    (args) => (args[0]?.value === "shell" ? result({ base: PRIV, inners: argv(args.slice(2)) }) : null),
  ],
  [
    // macOS: `launchctl asuser UID CMD…` and `bsexec PID CMD…` run CMD in another user's or process's context.
    "launchctl",
    (args) =>
      /^(?:asuser|bsexec)$/.test(args[0]?.value ?? "")
        ? result({ base: PRIV, inners: argv(args.slice(2)) })
        : null,
  ],
  ["env", env],
  ["nice", simple(set("-n", "--adjustment"), "n")],
  ["nohup", simple(NONE)],
  ["timeout", timeout],
  ["stdbuf", simple(set("-i", "-o", "-e", "--input", "--output", "--error"), "ioe")],
  [
    "ionice",
    (args) =>
      leadingOptions(args, set("-c", "-n", "--class", "--classdata"), "cn").some((w) =>
        /^-[^-]*[pP]/.test(w.value),
      )
        ? null
        : simple(set("-c", "-n", "--class", "--classdata"), "cn")(args),
  ],
  ["chroot", simple(set("--userspec", "--groups"), "", 1)],
  [
    "chrt",
    (args) =>
      leadingOptions(args, NONE, "T").some((w) => /^-[a-z]*p/.test(w.value))
        ? null
        : simple(NONE, "T", 1)(args),
  ],
  [
    "taskset",
    (args) =>
      leadingOptions(args, NONE).some((w) => /^-[a-z]*p/.test(w.value)) ? null : simple(NONE, "", 1)(args),
  ],
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
  [
    "strace",
    simple(
      set("-o", "-e", "-p", "-s", "-u", "-a", "-E", "-I", "-X", "-P", "-b", "-O", "-S"),
      "oepsuaEIXPbOS",
    ),
  ],
  ["ltrace", simple(set("-o", "-e", "-p", "-s", "-u", "-a", "-n", "-l", "-x", "-E"), "oepsuanlxE")],
  ["faketime", simple(set("-m", "-f"), "", 1)],
  ["unbuffer", simple(NONE)],
  ["busybox", simple(NONE)],
  ["toybox", simple(NONE)],
  [
    "systemd-run",
    simple(
      set(
        "-u",
        "--unit",
        "-p",
        "--property",
        "-E",
        "--setenv",
        "--uid",
        "--gid",
        "-M",
        "--machine",
        "-H",
        "--host",
        "--description",
        "--slice",
        "--on-active",
        "--on-boot",
        "--on-startup",
        "--on-unit-active",
        "--on-unit-inactive",
        "--on-calendar",
        "--timer-property",
        "--working-directory",
        "--nice",
      ),
      "upEMH",
      0,
      hit(2, "service_change"),
    ),
  ],
  ["su-exec", simple(NONE, "", 1, PRIV)],
  ["gosu", simple(NONE, "", 1, PRIV)],
  ["setpriv", simple(NONE, "", 0, PRIV)],
  ["flock", flock],
  ["script", script],
  ["parallel", parallel],
  ["ssh", ssh],
]);

// Carried commands (remote fan-out, containers, configuration management, runners): carriers.ts.
for (const [name, carrier] of CARRIERS) {
  if (WRAPPERS.has(name)) throw new Error(`wrapper table: ${name} defined twice`);
  WRAPPERS.set(name, carrier);
}

export function unwrap(name: string, args: Word[]): Unwrapped | null {
  const w = WRAPPERS.get(name);
  return w === undefined ? null : w(args);
}
