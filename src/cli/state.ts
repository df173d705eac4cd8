import { type ConfirmBroker, createConfirmBroker, createPgConfirmBroker } from "../broker/index.js";
import type { Settings } from "../config/index.js";
import { createPgCounters, openCountersDir, type PasskeyCounters } from "../consent/index.js";
import { type Clock, cryptoIds, type Logger } from "../core/index.js";
import { migrate, openPgState, type PgState } from "../state/index.js";

/** Connections one relay holds to the shared database: calls that need it wait for a free one. */
const RELAY_POOL = 16;
/** The operator's CLI makes one request at a time. */
const CLI_POOL = 2;

/**
 * The PostgreSQL state several relays share (docs/scaling.md), or null when the relay keeps its
 * state in its own files. The schema is brought up to date here, once, under the migration lock.
 * Throws, so that start-up fails with the reason, when the database cannot be reached or is
 * newer than this relay: a relay that started without it would hand out single-use grants no
 * other relay knows about.
 */
export async function openSharedState(
  settings: Pick<Settings, "stateUrl" | "instance">,
  options: { logger: Logger; role: "relay" | "cli" },
): Promise<PgState | null> {
  if (settings.stateUrl === "") return null;
  const opened = openPgState(settings.stateUrl, {
    instance: options.role === "cli" ? `${settings.instance || "relay"}-cli` : settings.instance,
    poolMax: options.role === "cli" ? CLI_POOL : RELAY_POOL,
    logger: options.logger,
  });
  if (!opened.ok) throw new Error(`RELAY_SHELL_STATE_URL: ${opened.error.detail}`);
  const migrated = await migrate(opened.value);
  if (!migrated.ok) {
    await opened.value.close();
    throw new Error(`the shared state at ${opened.value.target} cannot be used: ${migrated.error.detail}`);
  }
  return opened.value;
}

/**
 * The Tier-3 confirmation broker, only when a policy in force asks for it (ADR 0009, docs/policy.md). Several
 * relays share the tokens: armed through one, consumed once through any (ADR 0038).
 */
export function openBroker(
  settings: Settings,
  shared: PgState | null,
  clock: Clock,
  wanted: boolean,
): ConfirmBroker | null {
  if (!wanted) return null;
  const config = { ttlSeconds: settings.confirmTtl, rollback: settings.confirmRollback };
  return shared
    ? createPgConfirmBroker(shared, config, { clock, ids: cryptoIds })
    : createConfirmBroker(config, { clock, ids: cryptoIds });
}

/**
 * The passkeys' sign counters: in the database several relays share, or in the console's state
 * directory (0700, a 0600 file) for one relay. A counter is per authenticator, so logins and
 * approvals count in the same store: two stores would each see only part of the increments.
 */
export function openPasskeyCounters(
  settings: Settings,
  shared: PgState | null,
  clock: Clock,
): PasskeyCounters {
  return shared ? createPgCounters(shared, { clock }) : openCountersDir(settings.consoleStateDir);
}
