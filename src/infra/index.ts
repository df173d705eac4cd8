export {
  BrokerStartRefused,
  type InfraBrokerDeps,
  type InfraBrokerOptions,
  type RunningBroker,
  startInfraBroker,
  startupLines,
} from "./daemon.js";
export { RECEIPTS_FILE } from "./receipts.js";
export type { Principal, Profile, ProfileSet } from "./types.js";
