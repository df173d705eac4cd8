export { signalGroup, signalSession, toExitCode } from "./signal.js";
export { readProc } from "./stat.js";
export { type CommandTracker, createSubreaper, type Subreaper } from "./subreaper.js";
export { mainThreadChildren, sessionMembers } from "./tree.js";
