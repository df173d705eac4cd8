import { afterEach, describe, expect, it } from "vitest";
import { errorOf, FakeTransport, registryHarness } from "../../test/helpers/registry.js";
import { holderOf, TERMINAL_ID } from "./terminal-id.js";

const { setup, cleanup } = registryHarness();
afterEach(cleanup);

describe("session registry", () => {
  it("gives contract ids and reads output in order, then the ended sentinel", async () => {
    const { registry, open } = setup();
    const { id, transport } = await open();
    expect(id).toMatch(/^sh-[0-9a-f]{12}$/);
    transport.emit("hello ");
    transport.emit("world");
    expect((await registry.recv(id, "", { timeoutMs: 0, maxBytes: 256 })).text).toBe("hello world");
    transport.events?.exit(3);
    const end = await registry.recv(id, "", { timeoutMs: 0, maxBytes: 256 });
    expect(end).toMatchObject({ text: `\n[session ${id} ended, exit=3]`, ended: true, exitCode: 3 });
    expect(await errorOf(() => registry.send(id, "", new Uint8Array([1])))).toBe(
      `SessionError: session ${id} has ended`,
    );
  });

  it("names the relay that holds a terminal, and sends a call for another relay's terminal away with its name", async () => {
    const { registry, open } = setup({ instance: "relay-a" });
    const { id } = await open();
    expect(id).toMatch(/^sh-[0-9a-f]{12}@relay-a$/);
    expect(TERMINAL_ID.test(id)).toBe(true);
    expect(holderOf(id)).toBe("relay-a");
    expect((await registry.recv(id, "", { timeoutMs: 0, maxBytes: 16 })).text).toBe("");
    const elsewhere = id.replace("@relay-a", "@relay-b");
    const refused = await errorOf(() => registry.send(elsewhere, "", new Uint8Array([1])));
    expect(refused).toMatch(
      new RegExp(
        `^SessionError: session ${elsewhere} is held by relay relay-b, not by this one \\(relay-a\\)`,
      ),
    );
    expect(refused).toContain("If that relay stopped, the terminal ended with it; start a new one");
    // An id this relay could have made but did not is simply unknown.
    const unknown = id.replace(/-[0-9a-f]{12}@/, "-ffffffffffff@");
    expect(await errorOf(() => registry.send(unknown, "", new Uint8Array([1])))).toBe(
      `SessionError: unknown session: ${unknown}`,
    );
    for (const bad of [
      "sh-0123456789ab@",
      "sh-0123456789ab@Relay",
      "sh-0123456789ab@-a",
      "sh-0123456789ab@a@b",
    ]) {
      expect(TERMINAL_ID.test(bad), bad).toBe(false);
      expect(holderOf(bad)).toBe("");
    }
  });

  it("says 'ended' without a code when the exit status is unknown", async () => {
    const { registry, open } = setup();
    const { id, transport } = await open();
    transport.events?.exit(null);
    expect((await registry.recv(id, "", { timeoutMs: 0, maxBytes: 256 })).text).toBe(
      `\n[session ${id} ended]`,
    );
  });

  it("a waiting read wakes on output and never returns half a character", async () => {
    const { registry, open } = setup();
    const { id, transport } = await open();
    const pending = registry.recv(id, "", { timeoutMs: 5000, maxBytes: 256 });
    transport.emit(Uint8Array.from([0xe2, 0x82]));
    setTimeout(() => transport.emit(Uint8Array.from([0xac])), 20);
    expect((await pending).text).toBe("€");
  });

  it("cuts a read at max_bytes without splitting a character, and keeps the rest", async () => {
    const { registry, open } = setup();
    const { id, transport } = await open();
    const text = "€".repeat(200); // 600 bytes; 256 is not a multiple of 3
    transport.emit(text);
    const parts: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await registry.recv(id, "", { timeoutMs: 0, maxBytes: 256 });
      expect(Buffer.byteLength(r.text)).toBeLessThanOrEqual(256);
      parts.push(r.text);
    }
    expect(parts.join("")).toBe(text);
  });

  it("holds back a control sequence a read would cut, until the rest arrives", async () => {
    const { registry, open } = setup();
    const { id, transport } = await open();
    const recv = async () => (await registry.recv(id, "", { timeoutMs: 0, maxBytes: 256 })).text;
    transport.emit("before \u001b]52;c;aGVs");
    expect(await recv()).toBe("before ");
    expect(await recv()).toBe("");
    transport.emit("bG8=\u0007 after \u001b[3");
    expect(await recv()).toBe("\u001b]52;c;aGVsbG8=\u0007 after ");
    transport.emit("1mred");
    expect(await recv()).toBe("\u001b[31mred");
    // An 8-bit introducer (two bytes in UTF-8) is held the same way.
    transport.emit("x\u009d0;title");
    expect(await recv()).toBe("x");
    transport.emit("\u009c");
    expect(await recv()).toBe("\u009d0;title\u009c");
  });

  it("delivers a held sequence once the session ends, and one longer than a read", async () => {
    const { registry, open } = setup();
    const { id, transport } = await open();
    const recv = async () => (await registry.recv(id, "", { timeoutMs: 0, maxBytes: 256 })).text;
    transport.emit(`\u001b]0;${"t".repeat(300)}`);
    // Nothing but one open sequence, longer than max_bytes: delivered rather than held forever.
    expect(await recv()).toBe(`\u001b]0;${"t".repeat(252)}`);
    expect(await recv()).toBe("t".repeat(48));
    transport.emit("ok \u001b]0;never ends");
    expect(await recv()).toBe("ok ");
    transport.events?.exit(0);
    expect(await recv()).toBe("\u001b]0;never ends");
    expect(await recv()).toBe(`\n[session ${id} ended, exit=0]`);
  });

  it("binary output never decodes wider than max_bytes", async () => {
    const { registry, open } = setup();
    const { id, transport } = await open();
    transport.emit(new Uint8Array(1000).fill(0xff));
    let total = "";
    for (let i = 0; i < 20; i++) {
      const r = await registry.recv(id, "", { timeoutMs: 0, maxBytes: 256 });
      expect(Buffer.byteLength(r.text)).toBeLessThanOrEqual(256);
      total += r.text;
    }
    expect(total).toBe("\uFFFD".repeat(1000));
  });

  it("counts dropped bytes when nobody reads a flooding session", async () => {
    const { registry, open } = setup({ bufferBytes: 1024 });
    const { id, transport } = await open();
    for (let i = 0; i < 10; i++) transport.emit("x".repeat(1000));
    const [row] = registry.list("");
    expect(row).toMatchObject({ id, buffered: 1024, produced: 10_000, dropped: 10_000 - 1024 });
  });

  it("an empty read times out with an empty string", async () => {
    const { registry, open } = setup();
    const { id } = await open();
    const started = performance.now();
    const r = await registry.recv(id, "", { timeoutMs: 50, maxBytes: 256 });
    expect(r).toMatchObject({ text: "", ended: false });
    expect(performance.now() - started).toBeGreaterThanOrEqual(40);
  });

  it("refuses beyond the cap and closes the refused transport", async () => {
    const { registry, open } = setup({ maxSessions: 2 });
    await open();
    await open();
    const extra = new FakeTransport();
    expect(await errorOf(() => open("", extra))).toBe(
      "SessionError: session limit reached (2); close idle sessions first",
    );
    expect(extra.closed).toBe(1);
    expect(await errorOf(() => registry.assertCapacity())).toMatch(/session limit reached \(2\)/);
    expect(registry.size).toBe(2);
  });

  it("reaps idle sessions from the sweep, but never one with a waiting read", async () => {
    const { registry, clock, open } = setup({ idleTimeoutMs: 10_000 });
    const idle = await open();
    const busy = await open();
    const waiting = registry.recv(busy.id, "", { timeoutMs: 100, maxBytes: 256 });
    clock.advance(10_001);
    expect(registry.sweep()).toEqual([{ id: idle.id, reason: "idle" }]);
    expect(idle.transport.closed).toBe(1);
    // The waiter is not told the session ended: it simply times out (docs/wire-contract.md §2.6).
    expect(await waiting).toMatchObject({ text: "", ended: false });
    expect(await errorOf(() => registry.recv(idle.id, "", { timeoutMs: 0, maxBytes: 256 }))).toBe(
      `SessionError: unknown session: ${idle.id}`,
    );
    // The read refreshed last use, so the busy session is still there.
    expect(registry.sweep()).toEqual([]);
    expect(busy.transport.closed).toBe(0);
  });

  it("enforces the absolute lifetime even for a session in constant use", async () => {
    const { registry, clock, open } = setup({ idleTimeoutMs: 10_000, lifetimeMs: 30_000 });
    const s = await open();
    for (let t = 0; t < 29; t++) {
      clock.advance(1000);
      registry.send(s.id, "", new Uint8Array([0x61]));
      expect(registry.sweep()).toEqual([]);
    }
    const waiting = registry.recv(s.id, "", { timeoutMs: 5000, maxBytes: 256 });
    clock.advance(1000);
    expect(registry.sweep()).toEqual([{ id: s.id, reason: "lifetime" }]);
    // The waiting read learns that the session ended instead of hanging on.
    expect((await waiting).text).toBe(`\n[session ${s.id} ended, exit=-15]`);
  });

  it("removes an ended, fully read session after a short grace", async () => {
    const { registry, clock, open } = setup({ endedGraceMs: 5000 });
    const s = await open();
    s.transport.emit("bye");
    s.transport.events?.exit(0);
    clock.advance(6000);
    expect(registry.sweep()).toEqual([]); // unread output keeps it
    await registry.recv(s.id, "", { timeoutMs: 0, maxBytes: 256 });
    clock.advance(5001);
    expect(registry.sweep()).toEqual([{ id: s.id, reason: "ended" }]);
  });

  it("the background timer sweeps without any call", async () => {
    const { registry, clock } = setup({ idleTimeoutMs: 1000, sweepIntervalMs: 10 }, { sweeper: true });
    const transport = new FakeTransport();
    await registry.add({ kind: "local", title: "x", owner: "", cols: 1, rows: 1, transport });
    clock.advance(2000);
    await new Promise((done) => setTimeout(done, 60));
    expect(transport.closed).toBe(1);
    expect(registry.size).toBe(0);
  });

  it("binds a session to its creator and lists only what the caller may see", async () => {
    const { registry, open } = setup();
    const mine = await open("A");
    const shared = await open("");
    for (const work of [
      () => registry.send(mine.id, "B", new Uint8Array([0x61])),
      () => registry.recv(mine.id, "B", { timeoutMs: 0, maxBytes: 256 }),
      () => registry.resize(mine.id, "B", 10, 10),
      () => registry.kill(mine.id, "B", "KILL", true),
      () => registry.send(mine.id, "", new Uint8Array([0x61])),
    ]) {
      expect(await errorOf(work)).toBe(`SessionError: session ${mine.id} belongs to another client`);
    }
    expect(mine.transport.written).toEqual([]);
    expect(mine.transport.signals).toEqual([]);
    expect(mine.transport.closed).toBe(0);
    expect(registry.list("A").map((r) => r.id)).toEqual([mine.id, shared.id]);
    expect(registry.list("B").map((r) => r.id)).toEqual([shared.id]);
    expect(registry.list("").map((r) => r.id)).toEqual([shared.id]);
    expect(registry.send(shared.id, "B", new Uint8Array([0x61]))).toBe(1);
    expect(registry.list("A")[0]).toMatchObject({ owner: "A", kind: "local", title: "bash", size: "80x24" });
  });

  it("resizes with clamped sides and reports the size applied", async () => {
    const { registry, open } = setup();
    const s = await open();
    expect(registry.resize(s.id, "", 0, 100_000)).toEqual({ cols: 1, rows: 1000 });
    expect(registry.resize(s.id, "", -5, 50)).toEqual({ cols: 1, rows: 50 });
    expect(s.transport.sizes).toEqual(["1x1000", "1x50"]);
    expect(registry.list("")[0]?.size).toBe("1x50");
  });

  it("kill reports the signal actually sent and releases the id when closing", async () => {
    const { registry, open } = setup();
    const s = await open();
    expect(await registry.kill(s.id, "", "sigint", false)).toEqual({ signal: "SIGINT", closed: false });
    expect(await registry.kill(s.id, "", "no-such-signal", false)).toEqual({
      signal: "SIGTERM",
      closed: false,
    });
    expect(await registry.kill(s.id, "", "9", false)).toEqual({ signal: "SIGKILL", closed: false });
    const remote = await open("", new FakeTransport("TERM"));
    expect(await registry.kill(remote.id, "", "USR1", false)).toEqual({ signal: "SIGTERM", closed: false });
    expect(await registry.kill(s.id, "", "HUP", true)).toEqual({ signal: "SIGHUP", closed: true });
    expect(s.transport.signals).toEqual(["INT", "TERM", "KILL", "HUP"]);
    expect(s.transport.closed).toBe(1);
    expect(await errorOf(() => registry.kill(s.id, "", "TERM", true))).toBe(
      `SessionError: unknown session: ${s.id}`,
    );
  });

  it("closeAll destroys every transport at once", async () => {
    const { registry, open } = setup();
    const a = await open();
    const b = await open("X");
    registry.closeAll();
    expect([a.transport.destroyed, b.transport.destroyed]).toEqual([1, 1]);
    expect(registry.size).toBe(0);
  });

  it("shows the operator every session, and lets it end one whoever owns it", async () => {
    const { registry, open } = setup();
    const a = await open("A");
    const b = await open("B");
    expect(registry.list("A").map((s) => s.id)).toEqual([a.id]);
    expect(registry.overview().map((s) => [s.id, s.owner])).toEqual([
      [a.id, "A"],
      [b.id, "B"],
    ]);
    expect(await registry.terminate(b.id)).toEqual({ signal: "SIGTERM", closed: true });
    expect(b.transport.signals).toEqual(["TERM"]);
    expect(b.transport.closed).toBe(1);
    expect(registry.overview().map((s) => s.id)).toEqual([a.id]);
    expect(await errorOf(() => registry.terminate(b.id))).toBe(`SessionError: unknown session: ${b.id}`);
  });

  it("lets an onlooker see output, resizes and the end without taking anything from the owner", async () => {
    const { registry, open } = setup();
    const s = await open("A");
    s.transport.emit("before ");
    const seen: string[] = [];
    const watch = registry.watch(s.id, {
      output: (chunk) => seen.push(Buffer.from(chunk).toString()),
      resize: (cols, rows) => seen.push(`resize ${cols}x${rows}`),
      ended: (code) => seen.push(`ended ${code}`),
    });
    expect(watch).toMatchObject({ cols: 80, rows: 24, title: "bash", recording: "" });
    s.transport.emit("after");
    registry.resize(s.id, "A", 100, 30);
    s.transport.events?.exit(4);
    expect(seen).toEqual(["after", "resize 100x30", "ended 4"]);
    // The owner still reads all of it.
    expect((await registry.recv(s.id, "A", { timeoutMs: 0, maxBytes: 256 })).text).toBe("before after");
    watch.stop();
    expect(await errorOf(() => registry.watch(s.id, { output() {}, resize() {}, ended() {} }))).toBe(
      `SessionError: session ${s.id} has ended`,
    );
    expect(
      await errorOf(() => registry.watch("sh-ffffffffffff", { output() {}, resize() {}, ended() {} })),
    ).toBe("SessionError: unknown session: sh-ffffffffffff");
  });

  it("stops showing output to an onlooker that stopped watching", async () => {
    const { registry, open } = setup();
    const s = await open();
    const seen: string[] = [];
    const watch = registry.watch(s.id, {
      output: (chunk) => seen.push(Buffer.from(chunk).toString()),
      resize() {},
      ended() {},
    });
    s.transport.emit("one");
    watch.stop();
    s.transport.emit("two");
    expect(seen).toEqual(["one"]);
  });
});
