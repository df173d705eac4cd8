export {
  BrokerStartRefused,
  type InfraBrokerDeps,
  type RunningBroker,
  startInfraBroker,
  startupLines,
} from "./daemon.js";
export type { Principal, Profile, ProfileSet } from "./types.js";
