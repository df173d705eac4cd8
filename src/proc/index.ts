export { becomeChildSubreaper, peerCredentials, reapChild } from "./libc.js";
export { signalGroup, signalPid, signalSession, toExitCode } from "./signal.js";
export { isSameProcess, type ProcInfo, parseStat, readProc } from "./stat.js";
export { readSupplementaryGroups } from "./status.js";
export { type CommandTracker, createSubreaper, type Subreaper, type SubreaperOptions } from "./subreaper.js";
export { allChildren, childrenByScan, descendants, mainThreadChildren, sessionMembers } from "./tree.js";
