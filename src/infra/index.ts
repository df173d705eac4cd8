export {
  BrokerStartRefused,
  type InfraBrokerDeps,
  type RunningBroker,
  startInfraBroker,
  startupLines,
} from "./daemon.js";
export { loadProfiles } from "./profiles.js";
export { createRemote, type RemoteOptions } from "./remote.js";
export type { Principal, Profile, ProfileSet } from "./types.js";
