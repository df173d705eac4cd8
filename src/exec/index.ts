export { buildEnv, DEFAULT_PATH } from "./env.js";
export { createLauncherRunner, type LauncherRunner, type LauncherRunnerDeps } from "./launcher-runner.js";
export { createProcessRunner, DEFAULT_KILL_GRACE_MS, type ProcessRunnerDeps } from "./process-runner.js";
export { splitShellWords } from "./shell-words.js";
export type { ProcessOutcome, ProcessRequest, ProcessRunner } from "./types.js";
