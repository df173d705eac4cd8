import { describe, expect, it } from "vitest";
import { holdTerminalEvents } from "./terminal-events.js";

function listener() {
  const seen: string[] = [];
  return {
    seen,
    events: {
      data: (chunk: Uint8Array) => seen.push(`data:${Buffer.from(chunk).toString()}`),
      exit: (code: number | null) => seen.push(`exit:${code}`),
    },
  };
}

describe("holdTerminalEvents", () => {
  it("holds events until start, then delivers them in order, and passes later ones straight on", () => {
    const hold = holdTerminalEvents(false);
    hold.data(Buffer.from("a"));
    hold.data(Buffer.from("b"));
    const { seen, events } = listener();
    hold.start(events);
    expect(seen).toEqual(["data:a", "data:b"]);
    hold.data(Buffer.from("c"));
    hold.exit(0);
    expect(seen).toEqual(["data:a", "data:b", "data:c", "exit:0"]);
  });

  it("with copyHeld, a held chunk survives its producer reusing the buffer", () => {
    const shared = Buffer.from("one");
    const copying = holdTerminalEvents(true);
    const viewing = holdTerminalEvents(false);
    copying.data(shared);
    viewing.data(shared);
    shared.write("two");
    const a = listener();
    const b = listener();
    copying.start(a.events);
    viewing.start(b.events);
    expect(a.seen).toEqual(["data:one"]);
    // Without the copy the held chunk is the producer's buffer, already overwritten.
    expect(b.seen).toEqual(["data:two"]);
  });

  it("after stop nothing is delivered, held or new", () => {
    const hold = holdTerminalEvents(true);
    hold.data(Buffer.from("x"));
    hold.stop();
    const { seen, events } = listener();
    hold.start(events);
    hold.exit(1);
    expect(seen).toEqual([]);
  });
});
