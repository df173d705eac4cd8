/** What a terminal reports to whoever drives it (the session registry). */
export interface TerminalEvents {
  /** Terminal output, in arrival order. */
  data(chunk: Uint8Array): void;
  /** The child (or remote channel) is gone; null when its exit status is unknown. Called at most once. */
  exit(exitCode: number | null): void;
}

type Held = { kind: "data"; chunk: Uint8Array } | { kind: "exit"; code: number | null };

/** A terminal's outgoing events, held in order until a listener attaches. */
export interface TerminalEventHold {
  data(chunk: Uint8Array): void;
  exit(code: number | null): void;
  /** Attach the listener and deliver what was held, in order. */
  start(events: TerminalEvents): void;
  /** Drop everything from now on (the terminal was torn down). */
  stop(): void;
}

/**
 * A terminal starts producing output before the registry has attached to
 * it. `copyHeld` is for producers that reuse their read buffer: a held chunk
 * is then copied, since the buffer will have been overwritten by the time it
 * is delivered. Delivered chunks are valid only during the call.
 */
export function holdTerminalEvents(copyHeld: boolean): TerminalEventHold {
  let events: TerminalEvents | null = null;
  let stopped = false;
  const held: Held[] = [];
  const deliver = (item: Held): void => {
    if (stopped) return;
    if (!events) {
      held.push(
        item.kind === "data" && copyHeld ? { kind: "data", chunk: new Uint8Array(item.chunk) } : item,
      );
      return;
    }
    if (item.kind === "data") events.data(item.chunk);
    else events.exit(item.code);
  };
  return {
    data: (chunk) => deliver({ kind: "data", chunk }),
    exit: (code) => deliver({ kind: "exit", code }),
    start(listener) {
      events = listener;
      for (const item of held.splice(0)) deliver(item);
    },
    stop() {
      stopped = true;
      held.length = 0;
    },
  };
}
