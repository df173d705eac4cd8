export {
  BrokerStartRefused,
  type RunningBroker,
  startInfraBroker,
  startupLines,
} from "./daemon.js";
export { loadProfiles } from "./profiles.js";
export { createRemote, type RemoteOptions } from "./remote.js";
