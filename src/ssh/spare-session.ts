import type { Client, ClientChannel } from "ssh2";

/**
 * One session channel opened ahead of time per connection, so the next
 * `exec` costs one round trip (the request) instead of two (open, then
 * request). A session channel runs nothing until it gets a request, so a
 * spare is only a slot on the server; ADR 0032 gives the rules:
 *
 * - at most one spare per connection, opened once a command has been
 *   accepted (while it runs, so off the next call's path);
 * - the next exec takes the spare, or the one still opening, before it
 *   would open a channel of its own: an exec never needs a slot a spare holds;
 * - any other session user (a terminal, SFTP) drops the spare before it
 *   opens its own, so the server's session limit sees no more than before;
 * - a spare the server closes, or that fails its request, is forgotten and
 *   the exec goes on a fresh channel: a spare can never change an outcome.
 *
 * ssh2 has no public call for "open a session, send the request later": its
 * `exec` does both. This module uses four of its internals (the channel
 * table, the protocol's session and exec packets, a channel's reply queue);
 * where they are missing, everything goes through `client.exec` as before.
 */

/** The parts of an ssh2 1.x Client this module reaches into. */
interface ClientInternals {
  _sock?: { writable?: boolean };
  _chanMgr?: { add(handler: unknown): number };
  _protocol?: {
    session(localId: number, window: number, packetSize: number): void;
    exec(remoteId: number, command: string, wantReply: boolean): void;
  };
}

/** The parts of an ssh2 1.x ClientChannel this module reaches into. */
interface ChannelInternals {
  outgoing: { id: number; state: string };
  _callbacks: Array<(failed: unknown) => void>;
  subtype?: string;
  allowHalfOpen: boolean;
}

/** ssh2's own window and packet size for the channels it opens. */
const WINDOW_BYTES = 2 * 1024 * 1024;
const PACKET_BYTES = 32 * 1024;

interface Slot {
  /** A confirmed spare, waiting, and the listener that forgets it if the server closes it. */
  ready: ClientChannel | null;
  forget: () => void;
  /** A spare whose open is in flight; whoever claims it owns what arrives. */
  opening: Promise<ClientChannel | null> | null;
  /** How many execs ran on a spare (for tests and the docs' figures). */
  taken: number;
}

const slots = new WeakMap<Client, Slot>();

function slotOf(client: Client): Slot {
  let slot = slots.get(client);
  if (!slot) {
    slot = { ready: null, forget: () => undefined, opening: null, taken: 0 };
    slots.set(client, slot);
  }
  return slot;
}

function internalsOf(client: Client): Required<ClientInternals> | null {
  const c = client as unknown as ClientInternals;
  if (typeof c._chanMgr?.add !== "function" || typeof c._protocol?.session !== "function") return null;
  if (typeof c._protocol.exec !== "function") return null;
  return c as Required<ClientInternals>;
}

const isOpen = (channel: ClientChannel): boolean =>
  (channel as unknown as ChannelInternals).outgoing?.state === "open";

/** Close a channel nobody will use; it may already be going. */
function discard(channel: ClientChannel): void {
  try {
    channel.close();
  } catch {
    // The connection is gone: so is the channel.
  }
}

/** Open a session channel and send nothing on it. Resolves null when it cannot be had. */
function openBare(client: Client): Promise<ClientChannel | null> {
  const internals = internalsOf(client);
  if (!internals) return Promise.resolve(null);
  return new Promise((resolve) => {
    // ssh2 calls this on the open confirmation (with the channel) or on the failure.
    const handler = (err: unknown, channel: ClientChannel) => {
      if (err) {
        resolve(null);
        return;
      }
      // Heard from the start, even between its arrival and whoever takes it; the command adds its own.
      channel.on("error", () => undefined);
      resolve(channel);
    };
    (handler as unknown as { type: string }).type = "session";
    try {
      const localId = internals._chanMgr.add(handler);
      if (localId === -1) {
        resolve(null);
        return;
      }
      internals._protocol.session(localId, WINDOW_BYTES, PACKET_BYTES);
    } catch {
      // ssh2 throws when the connection is already gone.
      resolve(null);
    }
  });
}

function park(slot: Slot, channel: ClientChannel): void {
  const forget = () => {
    if (slot.ready !== channel) return;
    slot.ready = null;
    discard(channel);
  };
  slot.ready = channel;
  slot.forget = forget;
  // The server may close an idle session (OpenSSH's ChannelTimeout); an error must never go unheard.
  channel.on("close", forget);
  channel.on("error", forget);
  // ssh2 reports a server's close only once the stream has ended, which a paused stream never does.
  // Nothing can arrive before the exec request is answered, and `attach` runs in that answer.
  channel.resume();
}

/**
 * Open a spare unless one waits or is opening (or ssh2's internals are not
 * as expected). Deferred to the next turn: called from ssh2's reply handler,
 * it lets the rest of that read be handled first.
 */
export function keepSpare(client: Client): void {
  setImmediate(() => {
    const internals = internalsOf(client);
    const slot = slotOf(client);
    if (!internals || slot.ready || slot.opening) return;
    const opening = openBare(client);
    slot.opening = opening;
    opening
      .then((channel) => {
        if (slot.opening !== opening) return; // claimed while opening: the claimer has it
        slot.opening = null;
        if (channel) park(slot, channel);
      })
      .catch(() => {
        // A spare that could not be opened or parked is no spare: the next command opens its own.
        if (slot.opening === opening) slot.opening = null;
      });
  });
}

/** Take the spare if there is one (waiting for one in flight). */
async function claim(client: Client): Promise<ClientChannel | null> {
  const slot = slots.get(client);
  if (!slot) return null;
  const ready = slot.ready;
  if (ready) {
    slot.ready = null;
    ready.off("close", slot.forget).off("error", slot.forget);
    return isOpen(ready) ? ready : null;
  }
  const opening = slot.opening;
  if (!opening) return null;
  slot.opening = null;
  const channel = await opening;
  return channel && isOpen(channel) ? channel : null;
}

/** How long a session user waits for the server to confirm the spare is closed. */
const DROP_WAIT_MS = 2000;

/**
 * Before another session channel (a terminal, SFTP) is opened: close the
 * spare and wait until the server has answered the close, so the slot is free
 * again (a server at its session limit refuses an open that arrives before).
 */
export async function dropSpare(client: Client): Promise<void> {
  const channel = await claim(client);
  if (!channel) return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, DROP_WAIT_MS);
    channel.once("close", () => {
      clearTimeout(timer);
      resolve();
    });
    // ssh2 reports the close only once the stream has ended.
    channel.resume();
    discard(channel);
  });
}

/**
 * Send `exec` on an open session channel. On success `attach` runs inside
 * ssh2's reply handler, before the packets that follow the reply in the same
 * read (the exit status can): a listener added one microtask later would
 * miss them. Resolves false when the server refuses or the channel closes.
 */
function requestExec(
  client: Client,
  channel: ClientChannel,
  command: string,
  attach: (channel: ClientChannel) => void,
): Promise<boolean> {
  const internals = internalsOf(client);
  const ch = channel as unknown as ChannelInternals;
  if (!internals) return Promise.resolve(false);
  // Until `attach` adds the real listeners, an error must not go unheard.
  const quiet = () => undefined;
  channel.on("error", quiet);
  return new Promise((resolve) => {
    ch._callbacks.push((failed) => {
      channel.off("error", quiet);
      if (failed) {
        resolve(false);
        return;
      }
      // What ssh2's own exec sets on success.
      ch.subtype = "exec";
      ch.allowHalfOpen = true;
      attach(channel);
      resolve(true);
    });
    try {
      internals._protocol.exec(ch.outgoing.id, command, true);
    } catch {
      resolve(false);
    }
  });
}

/**
 * Run `command` on the connection: on the spare when there is one, else (or
 * when the spare fails) on a fresh channel through ssh2's `exec`. `attach`
 * gets the channel synchronously when the server accepts the request, before
 * any of the command's packets can be seen.
 */
export async function execOnConnection(
  client: Client,
  command: string,
  attach: (channel: ClientChannel) => void,
): Promise<void> {
  const spare = await claim(client);
  // A connection that can no longer write gets ssh2's own "Not connected" from `exec` below.
  if (spare && (client as unknown as ClientInternals)._sock?.writable !== true) discard(spare);
  else if (spare) {
    if (await requestExec(client, spare, command, attach)) {
      slotOf(client).taken++;
      // The next command's session opens while this one runs.
      keepSpare(client);
      return;
    }
    discard(spare);
  }
  await new Promise<void>((resolve, reject) => {
    client.exec(command, (err, channel) => {
      if (err) {
        reject(err);
        return;
      }
      attach(channel);
      resolve();
      keepSpare(client);
    });
  });
}

/** For tests: whether a spare waits on this connection, and how many execs used one. */
export function spareStatus(client: Client): { state: "ready" | "opening" | "none"; taken: number } {
  const slot = slots.get(client);
  if (!slot) return { state: "none", taken: 0 };
  return { state: slot.ready ? "ready" : slot.opening ? "opening" : "none", taken: slot.taken };
}
