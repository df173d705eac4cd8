export { isAppendOnly, peerCredentials, readXattr, waitChild } from "./libc.js";
export { signalGroup, signalSession, toExitCode } from "./signal.js";
export { readProc } from "./stat.js";
export { readSupplementaryGroups } from "./status.js";
export { type CommandTracker, createSubreaper, type Subreaper } from "./subreaper.js";
export { mainThreadChildren, sessionMembers } from "./tree.js";
