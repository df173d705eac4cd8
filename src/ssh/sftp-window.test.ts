import type { SFTPWrapper } from "ssh2";
import { describe, expect, it } from "vitest";
import { createRequestWindow, pump, REQUEST_BYTES, REQUEST_SLOTS, requestBytesFor } from "./sftp-window.js";

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("requestBytesFor", () => {
  const session = (fields: Record<string, unknown>) => fields as unknown as SFTPWrapper;

  it("asks for REQUEST_BYTES when the server takes that much, and for less when it takes less", () => {
    expect(requestBytesFor(session({ _maxReadLen: 261_120, _maxWriteLen: 261_120 }))).toBe(
      Math.min(REQUEST_BYTES, 261_120),
    );
    expect(requestBytesFor(session({ _maxReadLen: 31_952, _maxWriteLen: 261_120 }))).toBe(31_952);
  });

  it("falls back to a size every server takes when the limits are not known", () => {
    expect(requestBytesFor(session({}))).toBe(30_720);
    expect(requestBytesFor(session({ _maxReadLen: "big", _maxWriteLen: 1 }))).toBe(30_720);
  });

  it("never goes below a floor, whatever the server claims", () => {
    expect(requestBytesFor(session({ _maxReadLen: 1, _maxWriteLen: 1 }))).toBe(4096);
  });
});

describe("createRequestWindow", () => {
  it("hands out at most `slots` buffers, reuses them, and serves waiters in order", async () => {
    const window = createRequestWindow(16, 2);
    const a = await window.acquire();
    const b = await window.acquire();
    const order: string[] = [];
    const third = window.acquire().then((buf) => {
      order.push("third");
      return buf;
    });
    const fourth = window.acquire().then((buf) => {
      order.push("fourth");
      return buf;
    });
    await tick();
    expect(order).toEqual([]);
    window.release(a);
    window.release(b);
    expect(await third).toBe(a);
    expect(await fourth).toBe(b);
    expect(order).toEqual(["third", "fourth"]);
    expect(a.length).toBe(16);
  });
});

describe("pump", () => {
  it("covers the file exactly once in requests of the window's size", async () => {
    const window = createRequestWindow(1000, 4);
    const seen: Array<[number, number]> = [];
    await pump(10_500, window, async (buffer, position) => {
      await tick();
      seen.push([position, buffer.length]);
    });
    seen.sort((x, y) => x[0] - y[0]);
    expect(seen).toEqual(
      Array.from({ length: 11 }, (_, i) => [i * 1000, i === 10 ? 500 : 1000] as [number, number]),
    );
  });

  it("keeps the bytes in flight bounded by the slots, not by the size of the file", async () => {
    const window = createRequestWindow(64, REQUEST_SLOTS);
    let inFlight = 0;
    let most = 0;
    const buffers = new Set<ArrayBufferLike>();
    // A size far above slots × request: what is held at once must not grow with it.
    await pump(64 * 5_000, window, async (buffer) => {
      inFlight++;
      most = Math.max(most, inFlight);
      buffers.add(buffer.buffer);
      await tick();
      inFlight--;
    });
    expect(most).toBe(REQUEST_SLOTS);
    expect(buffers.size).toBeLessThanOrEqual(REQUEST_SLOTS);
  });

  it("shares the slots between files: two pumps at once stay within them together", async () => {
    const window = createRequestWindow(10, 3);
    let inFlight = 0;
    let most = 0;
    const move = async () => {
      inFlight++;
      most = Math.max(most, inFlight);
      await tick();
      inFlight--;
    };
    await Promise.all([pump(1000, window, move), pump(1000, window, move)]);
    expect(most).toBe(3);
  });

  it("stops asking after the first failure, lets the requests under way end, then throws it", async () => {
    const window = createRequestWindow(10, 4);
    let started = 0;
    let ended = 0;
    const failure = new Error("the third request failed");
    const done = pump(10_000, window, async (_buffer, position) => {
      started++;
      await tick();
      if (position === 20) throw failure;
      await tick();
      ended++;
    });
    await expect(done).rejects.toBe(failure);
    // The four first requests were under way; after the failure no new one started.
    expect(started).toBe(4);
    expect(ended).toBe(3);
    // Every slot came back.
    const all = await Promise.all(Array.from({ length: 4 }, () => window.acquire()));
    expect(all).toHaveLength(4);
  });

  it("moves nothing for an empty file", async () => {
    let calls = 0;
    await pump(0, createRequestWindow(10, 2), async () => {
      calls++;
    });
    expect(calls).toBe(0);
  });
});
