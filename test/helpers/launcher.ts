import { createLauncherRunner, type LauncherRunner } from "../../src/exec/index.js";

/**
 * A runner of the native kind whose launcher is the program at `path` (a stand-in or another
 * build): RELAY_LAUNCHER_BINARY names it while the runner is made, which is when it is read.
 */
export function runnerWithLauncher(path: string): LauncherRunner {
  const saved = process.env.RELAY_LAUNCHER_BINARY;
  process.env.RELAY_LAUNCHER_BINARY = path;
  try {
    return createLauncherRunner({ kind: "native" });
  } finally {
    if (saved === undefined) delete process.env.RELAY_LAUNCHER_BINARY;
    else process.env.RELAY_LAUNCHER_BINARY = saved;
  }
}
