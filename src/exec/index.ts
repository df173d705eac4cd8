export { buildEnv, DEFAULT_PATH, envOverlay } from "./env.js";
export { createLauncherRunner, defaultLauncherKind, type LauncherRunner } from "./launcher-runner.js";
/** The INFRA-1 broker daemon runs ssh and rsync through a runner of its own. */
export { createProcessRunner } from "./process-runner.js";
export { splitShellWords } from "./shell-words.js";
export type { ProcessOutcome, ProcessRequest, ProcessRunner } from "./types.js";
