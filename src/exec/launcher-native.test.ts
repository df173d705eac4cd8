import { spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runnerWithLauncher } from "../../test/helpers/launcher.js";
import { LAUNCHER_KINDS, newLaunchers } from "../../test/helpers/processes.js";
import { rejection, shellRequests } from "../../test/helpers/requests.js";
import { buildEnv } from "./env.js";
import type { LauncherRunner } from "./launcher-runner.js";
import { nativeLauncherPath } from "./native-link.js";

/**
 * The native launcher (native/, ADR 0031) where the C library fails it, where pids are reused, and
 * with orphans exiting on their own. It is started through a wrapper script given as
 * RELAY_LAUNCHER_BINARY, so the server's side is the real one; the launcher built is the one
 * RELAY_LAUNCHER_BINARY named when the suite started (the sanitized build in .ci/run).
 */
const BINARY = nativeLauncherPath(import.meta.url);
const NATIVE = LAUNCHER_KINDS.includes("native") && BINARY !== null;
const { sh } = shellRequests(buildEnv(process.env, ""));
const dir = mkdtempSync(join(tmpdir(), "relay-native-"));

/** A runner whose launcher is started by this wrapper script. */
function wrapped(name: string, script: string): LauncherRunner {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${script}\n`);
  chmodSync(path, 0o755);
  return runnerWithLauncher(path);
}

/**
 * Preloaded into the launcher: each call below fails (as under ENOMEM) while the file named by
 * RELAY_FAIL_FILE holds its name, and does what libc does otherwise. fcntl fails F_SETFL only:
 * "fcntl" on the pipes of a command, "fcntl_stdin" on the launcher's own stdin at start-up.
 */
const SHIM = `#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failing(const char *name) {
  const char *path = getenv("RELAY_FAIL_FILE");
  char buf[64] = {0};
  int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  return n > 0 && strcmp(buf, name) == 0;
}

#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

int posix_spawn_file_actions_init(posix_spawn_file_actions_t *fa) {
  return failing("file_actions_init") ? ENOMEM : REAL(posix_spawn_file_actions_init)(fa);
}
int posix_spawnattr_init(posix_spawnattr_t *a) {
  return failing("spawnattr_init") ? ENOMEM : REAL(posix_spawnattr_init)(a);
}
int posix_spawn_file_actions_addopen(posix_spawn_file_actions_t *fa, int fd, const char *p, int f, mode_t m) {
  return failing("addopen") ? ENOMEM : REAL(posix_spawn_file_actions_addopen)(fa, fd, p, f, m);
}
int posix_spawn_file_actions_adddup2(posix_spawn_file_actions_t *fa, int fd, int to) {
  return failing("adddup2") ? ENOMEM : REAL(posix_spawn_file_actions_adddup2)(fa, fd, to);
}
int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *fa, int from) {
  return failing("addclosefrom_np") ? ENOMEM : REAL(posix_spawn_file_actions_addclosefrom_np)(fa, from);
}
int posix_spawn_file_actions_addchdir_np(posix_spawn_file_actions_t *fa, const char *p) {
  return failing("addchdir_np") ? ENOMEM : REAL(posix_spawn_file_actions_addchdir_np)(fa, p);
}
int posix_spawnattr_setsigdefault(posix_spawnattr_t *a, const sigset_t *s) {
  return failing("setsigdefault") ? ENOMEM : REAL(posix_spawnattr_setsigdefault)(a, s);
}
int posix_spawnattr_setsigmask(posix_spawnattr_t *a, const sigset_t *s) {
  return failing("setsigmask") ? ENOMEM : REAL(posix_spawnattr_setsigmask)(a, s);
}
int posix_spawnattr_setflags(posix_spawnattr_t *a, short f) {
  return failing("setflags") ? ENOMEM : REAL(posix_spawnattr_setflags)(a, f);
}
int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void *arg = va_arg(ap, void *);
  va_end(ap);
  if (cmd == F_SETFL && failing(fd == 0 ? "fcntl_stdin" : "fcntl")) {
    errno = EINVAL;
    return -1;
  }
  return REAL(fcntl)(fd, cmd, arg);
}
`;

/** The shim built here, or null without a compiler. */
function buildShim(): string | null {
  const source = join(dir, "fail-shim.c");
  const library = join(dir, "fail-shim.so");
  writeFileSync(source, SHIM);
  const built = spawnSync(process.env.CC || "cc", ["-shared", "-fPIC", "-o", library, source, "-ldl"], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  return built.status === 0 ? library : null;
}

/** Whether unprivileged user and pid namespaces are available here (unshare -Urpf). */
function unshareWorks(): string | null {
  const which = spawnSync("sh", ["-c", "command -v unshare"], { encoding: "utf8" });
  const path = which.stdout.trim();
  if (which.status !== 0 || path === "") return null;
  const probe = spawnSync(path, ["-Urpf", "--mount-proc", "true"], { stdio: "ignore" });
  return probe.status === 0 ? path : null;
}

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!NATIVE)("the native launcher when the C library fails it", () => {
  const shim = buildShim();
  const failFile = join(dir, "fail");
  const fail = (name: string) => writeFileSync(failFile, name);

  it
    .skipIf(shim === null)
    .each([
      ["file_actions_init"],
      ["spawnattr_init"],
      ["addopen"],
      ["adddup2"],
      ["addclosefrom_np"],
      ["addchdir_np"],
      ["setsigdefault"],
      ["setsigmask"],
      ["setflags"],
      ["fcntl"],
    ])("reports a failed %s as the spawn's error, starts nothing and keeps no descriptor", async (step) => {
    fail("");
    const runner = wrapped(
      `shim-${step}`,
      `RELAY_FAIL_FILE='${failFile}' LD_PRELOAD='${shim}' exec '${BINARY}'`,
    );
    try {
      const marker = join(dir, `ran-${step}`);
      const [launcher] = await newLaunchers(() => runner.run(sh("true", { cwd: dir })));
      const fds = () => readdirSync(`/proc/${launcher}/fd`).sort();
      const before = fds();
      fail(step);
      const err = await rejection(runner.run(sh(`touch '${marker}'`, { cwd: dir })));
      expect(err.message).toBe(
        `cannot start /bin/sh: spawn /bin/sh ${step === "fcntl" ? "EINVAL" : "ENOMEM"}`,
      );
      expect(existsSync(marker)).toBe(false);
      fail("");
      expect((await runner.run(sh("pwd", { cwd: dir }))).output).toBe(`${dir}\n`);
      expect(fds()).toEqual(before);
    } finally {
      runner.close();
    }
  });

  it.skipIf(shim === null)("exits with status 71 when its stdin cannot be made non-blocking", async () => {
    fail("fcntl_stdin");
    const runner = wrapped(
      "shim-stdin",
      `RELAY_FAIL_FILE='${failFile}' LD_PRELOAD='${shim}' exec '${BINARY}'`,
    );
    try {
      const err = await rejection(runner.run(sh("true")));
      expect(err.message).toBe("process launcher exited (code 71) before the process finished");
    } finally {
      fail("");
      runner.close();
    }
  });
});

describe.skipIf(!NATIVE)("the native launcher's children", () => {
  it("reaps an orphan that exits on its own at once, not at the next command's end", async () => {
    const runner = wrapped("plain", `exec '${BINARY}'`);
    try {
      // The orphan (its parent, the subshell, is gone) exits while the command still runs; the
      // command then lists what the launcher, its parent, still has as children.
      const outcome = await runner.run(
        sh(
          `(sleep 0.1 &); sleep 0.6
for p in $(cat /proc/$PPID/task/$PPID/children); do
  [ "$p" = "$$" ] || echo "child $p $(cut -d' ' -f3 /proc/$p/stat)"
done`,
        ),
      );
      expect(outcome.output).toBe("");
    } finally {
      runner.close();
    }
  });

  it("answers a command that writes nothing and reads an empty stdin", async () => {
    // Buffers that stay empty: nothing may be copied from or to them (the sanitized build checks).
    const runner = wrapped("plain-empty", `exec '${BINARY}'`);
    try {
      expect(await runner.run(sh("exit 3", { stdin: "" }))).toMatchObject({ exitCode: 3, output: "" });
    } finally {
      runner.close();
    }
  });
});

const UNSHARE = NATIVE ? unshareWorks() : null;

describe.skipIf(UNSHARE === null)("the native launcher's group kill when pids are reused (ADR 0031)", () => {
  it("never reaches a new group that took the number of a command's reaped leader", async () => {
    // A pid namespace of its own, where ns_last_pid says which pid the next process gets.
    const runner = wrapped("namespaced", `exec '${UNSHARE}' -Urpf --mount-proc -- '${BINARY}'`);
    const leaderFile = join(dir, "leader");
    rmSync(leaderFile, { force: true });
    try {
      // A times out: TERM kills its leader; a process of its own session ignores TERM and holds
      // the pipes, so the group kill at the end of the grace comes after the leader's death.
      const a = runner.run(
        sh(
          `echo $$ > '${leaderFile}.tmp'; mv '${leaderFile}.tmp' '${leaderFile}'
setsid sh -c 'trap "" TERM; sleep 3' &
wait`,
          { timeoutMs: 300, killGraceMs: 500 },
        ),
      );
      // B waits until A's leader is reaped, then makes the next pid the leader's number and starts
      // a new session (and group) with it, and looks whether it lives through A's end.
      const b = runner.run(
        sh(`while [ ! -s '${leaderFile}' ]; do sleep 0.01; done
L=$(cat '${leaderFile}')
while [ -e /proc/$L ]; do sleep 0.005; done
echo $((L - 1)) > /proc/sys/kernel/ns_last_pid
setsid sleep 5 &
P=$!
sleep 1.2
[ "$P" = "$L" ] && echo "reused" || echo "not reused: $P for $L"
kill -0 $P 2>/dev/null && echo alive || echo killed`),
      );
      expect((await a).timedOut).toBe(true);
      expect((await b).output).toBe("reused\nalive\n");
    } finally {
      runner.close();
    }
  });
});

const SANITIZED = process.env.RELAY_LAUNCHER_BINARY?.endsWith("relay-launcher-asan") === true;

describe.skipIf(!NATIVE || !SANITIZED)("the native launcher under the sanitizers", () => {
  it("is the build with AddressSanitizer and UndefinedBehaviorSanitizer, aborting on a report", () => {
    const binary = readFileSync(BINARY as string);
    expect(binary.includes("__asan_init")).toBe(true);
    expect(binary.includes("__ubsan_handle_")).toBe(true);
    expect(binary.includes("halt_on_error=1:abort_on_error=1")).toBe(true);
  });
});
