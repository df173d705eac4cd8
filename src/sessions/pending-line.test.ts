import { afterEach, describe, expect, it } from "vitest";
import { errorOf, registryHarness } from "../../test/helpers/registry.js";
import { assembleLine, EMPTY_LINE } from "./terminal-line.js";

const { setup, cleanup } = registryHarness();
afterEach(cleanup);
const bytes = (text: string) => new TextEncoder().encode(text);

describe("a session's pending line", () => {
  it("moves on only with a send that reached the terminal", async () => {
    const { registry, open } = setup();
    const s = await open();
    expect(registry.pendingLine(s.id, "")).toEqual(EMPTY_LINE);
    const piece = assembleLine(registry.pendingLine(s.id, ""), "r", false);
    registry.send(s.id, "", bytes("r"), piece.rest);
    expect(registry.pendingLine(s.id, "")).toEqual({ text: "r", opacity: "" });
    // A send without a line (not a session_send) leaves it as it was.
    registry.send(s.id, "", bytes("x"));
    expect(registry.pendingLine(s.id, "")).toEqual({ text: "r", opacity: "" });
    const done = assembleLine(registry.pendingLine(s.id, ""), "m -rf /tmp/x", true);
    expect(done.text).toBe("rm -rf /tmp/x");
    registry.send(s.id, "", bytes("m -rf /tmp/x\n"), done.rest);
    expect(registry.pendingLine(s.id, "")).toEqual(EMPTY_LINE);
  });

  it("a send that fails changes nothing", async () => {
    const { registry, open } = setup();
    const s = await open("A");
    registry.send(s.id, "A", bytes("r"), { text: "r", opacity: "" });
    expect(await errorOf(() => registry.send(s.id, "B", bytes("m"), { text: "rm", opacity: "" }))).toBe(
      `SessionError: session ${s.id} belongs to another client`,
    );
    expect(registry.pendingLine(s.id, "A")).toEqual({ text: "r", opacity: "" });
  });

  it("is never shown to another client, nor for an unknown or ended session", async () => {
    const { registry, open } = setup();
    const s = await open("A");
    registry.send(s.id, "A", bytes("secret"), { text: "secret", opacity: "" });
    expect(registry.pendingLine(s.id, "B")).toEqual(EMPTY_LINE);
    expect(registry.pendingLine(s.id, "")).toEqual(EMPTY_LINE);
    expect(registry.pendingLine("sh-unknown", "A")).toEqual(EMPTY_LINE);
    s.transport.events?.exit(0);
    expect(registry.pendingLine(s.id, "A")).toEqual(EMPTY_LINE);
  });
});
