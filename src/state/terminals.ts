import type { Clock, Logger } from "../core/index.js";
import type { PgState } from "./pg.js";

/** A terminal as the shared directory lists it: where it is, not what is in it. */
interface TerminalEntry {
  id: string;
  /** The relay whose process holds its PTY. */
  instance: string;
  kind: string;
  title: string;
  /** The client that started it; "" for one no client owns. */
  owner: string;
  /** Epoch milliseconds. */
  startedAt: number;
}

interface ListedTerminal extends TerminalEntry {
  /** Whether its relay's heartbeat is recent: false means the relay stopped and the terminal with it. */
  relayUp: boolean;
}

/** How often a relay says it is alive, and after how many missed beats the others count it gone. */
const HEARTBEAT_MS = 5000;
const MISSED_BEATS = 3;
/** Listed at most, per caller: a directory is for finding terminals, not a full dump. */
const MAX_LISTED = 256;

/**
 * The shared directory of terminals (docs/scaling.md): each relay writes a row when it starts a
 * terminal and deletes it when the terminal goes, and beats its heart every few seconds. Nothing in
 * it decides anything: a failure to write is logged and the terminal works on; a failure to read
 * lists only this relay's own.
 */
export interface TerminalDirectory {
  /** Register this relay (its rows from a previous life are dropped) and start the heartbeat. */
  start(): Promise<void>;
  announce(entry: Omit<TerminalEntry, "instance">): void;
  withdraw(id: string): void;
  /** Terminals of other relays that `owner` may see (its own and unowned ones), newest first. */
  elsewhere(owner: string): Promise<ListedTerminal[]>;
  /** Stop the heartbeat and remove this relay's rows. */
  close(): Promise<void>;
}

export function createTerminalDirectory(
  state: PgState,
  deps: { clock: Clock; logger: Logger },
): TerminalDirectory {
  const { instance } = state;
  const { clock, logger } = deps;
  let timer: NodeJS.Timeout | null = null;

  /** Run and forget: the directory only describes, so its failures are logged, never thrown. */
  const quietly = (what: string, work: () => Promise<unknown>): Promise<void> =>
    work().then(
      () => undefined,
      (err: unknown) => {
        logger.warn(
          { detail: state.classify(err)?.detail ?? String(err) },
          `terminal directory: ${what} failed`,
        );
      },
    );

  const beat = () =>
    quietly("heartbeat", () =>
      state.pool.query(
        `INSERT INTO relay_instances (instance, started_at, last_seen_at) VALUES ($1, $2, $2)
           ON CONFLICT (instance) DO UPDATE SET last_seen_at = EXCLUDED.last_seen_at`,
        [instance, clock.now()],
      ),
    );

  return {
    async start() {
      await quietly("start", async () => {
        await state.pool.query("DELETE FROM relay_terminals WHERE instance = $1", [instance]);
        await state.pool.query(
          `INSERT INTO relay_instances (instance, started_at, last_seen_at) VALUES ($1, $2, $2)
             ON CONFLICT (instance) DO UPDATE SET started_at = EXCLUDED.started_at, last_seen_at = EXCLUDED.last_seen_at`,
          [instance, clock.now()],
        );
      });
      timer = setInterval(() => void beat(), HEARTBEAT_MS);
      timer.unref();
    },
    announce(entry) {
      void quietly("announce", () =>
        state.pool.query(
          `INSERT INTO relay_terminals (id, instance, kind, title, owner, started_at)
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING`,
          [entry.id, instance, entry.kind, entry.title.slice(0, 512), entry.owner, entry.startedAt],
        ),
      );
    },
    withdraw(id) {
      void quietly("withdraw", () =>
        state.pool.query("DELETE FROM relay_terminals WHERE id = $1 AND instance = $2", [id, instance]),
      );
    },
    async elsewhere(owner) {
      try {
        const found = await state.pool.query<{
          id: string;
          instance: string;
          kind: string;
          title: string;
          owner: string;
          started_at: number;
          last_seen_at: number | null;
        }>(
          `SELECT t.id, t.instance, t.kind, t.title, t.owner, t.started_at, i.last_seen_at
             FROM relay_terminals t LEFT JOIN relay_instances i ON i.instance = t.instance
             WHERE t.instance <> $1 AND (t.owner = $2 OR t.owner = '')
             ORDER BY t.started_at DESC LIMIT ${MAX_LISTED}`,
          [instance, owner],
        );
        const fresh = clock.now() - HEARTBEAT_MS * MISSED_BEATS;
        return found.rows.map((row) => ({
          id: row.id,
          instance: row.instance,
          kind: row.kind,
          title: row.title,
          owner: row.owner,
          startedAt: Number(row.started_at),
          relayUp: row.last_seen_at !== null && Number(row.last_seen_at) >= fresh,
        }));
      } catch (err) {
        logger.warn(
          { detail: state.classify(err)?.detail ?? String(err) },
          "terminal directory: listing failed",
        );
        return [];
      }
    },
    async close() {
      if (timer) clearInterval(timer);
      timer = null;
      await quietly("close", async () => {
        await state.pool.query("DELETE FROM relay_terminals WHERE instance = $1", [instance]);
        await state.pool.query("DELETE FROM relay_instances WHERE instance = $1", [instance]);
      });
    },
  };
}
