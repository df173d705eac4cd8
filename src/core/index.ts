export { type Clock, isoTimestamp, systemClock } from "./clock.js";
export { describeError, RelayError } from "./errors.js";
export { cryptoIds, type Ids } from "./ids.js";
export { isTier, maxTier, type Tier, TIER_NAMES, type TierName, tierName } from "./tier.js";
export { clamp, decodeUtf8, type Truncated, truncateUtf8, utf8Length } from "./truncate.js";
export { type Logger, silentLogger } from "./logger.js";
export { canonicalJson, compactJson, JsonNumberText } from "./canonical-json.js";
