import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { errorOf, FakeTransport, registryHarness } from "../../test/helpers/registry.js";

const { setup, cleanup, tempDir } = registryHarness();
afterEach(cleanup);

/** Recordings as the registry writes them: asciicast v2, 0600, input only when asked. */
describe("session recording", () => {
  it("records an asciicast v2 file, 0600, without input unless asked", async () => {
    const dir = tempDir("relay-rec-");
    const { registry, clock, open } = setup({ recordDir: join(dir, "rec") });
    const s = await open();
    expect(s.recording).toBe(join(dir, "rec", `${s.id}.cast`));
    expect(statSync(s.recording).mode & 0o777).toBe(0o600);
    clock.advance(1500);
    s.transport.emit(Uint8Array.from([0x61, 0xe2, 0x82]));
    s.transport.emit(Uint8Array.from([0xac]));
    registry.send(s.id, "", new TextEncoder().encode("secret\n"));
    registry.resize(s.id, "", 100, 30);
    s.transport.events?.exit(0);
    const lines = readFileSync(s.recording, "utf8").trimEnd().split("\n");
    const header = JSON.parse(lines[0] ?? "");
    expect(header).toMatchObject({ version: 2, width: 80, height: 24, command: "bash" });
    expect(header.timestamp).toBe(1_700_000_000);
    const events = lines.slice(1).map((l) => JSON.parse(l));
    expect(events).toEqual([
      [1.5, "o", "a"],
      [1.5, "o", "€"],
      [1.5, "r", "100x30"],
    ]);
    expect(readFileSync(s.recording, "utf8")).not.toContain("secret");
  });

  it("records input when RELAY_SHELL_SESSION_RECORD_INPUT is on", async () => {
    const dir = tempDir("relay-rec-");
    const { registry, open } = setup({ recordDir: dir, recordInput: true });
    const s = await open();
    registry.send(s.id, "", new TextEncoder().encode("ls\n"));
    const events = readFileSync(s.recording, "utf8")
      .trimEnd()
      .split("\n")
      .slice(1)
      .map((l) => JSON.parse(l));
    expect(events).toEqual([[0, "i", "ls\n"]]);
  });

  it("refuses the session (and closes its transport) when the recording cannot be opened", async () => {
    const dir = tempDir("relay-rec-");
    const blocker = join(dir, "file");
    writeFileSync(blocker, "not a directory");
    const { open } = setup({ recordDir: blocker });
    const transport = new FakeTransport();
    expect(await errorOf(() => open("", transport))).toMatch(
      /^SessionError: cannot open the session recording: /,
    );
    expect(transport.closed).toBe(1);
  });
});
