import { describe, expect, it } from "vitest";
import { createCopyQueue } from "./sftp-queue.js";

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("createCopyQueue", () => {
  it("runs at most `limit` copies at once and waits for all of them", async () => {
    const queue = createCopyQueue(3);
    let running = 0;
    let most = 0;
    let done = 0;
    for (let i = 0; i < 20; i++) {
      await queue.start(async () => {
        running++;
        most = Math.max(most, running);
        await tick();
        await tick();
        running--;
        done++;
      });
    }
    await queue.finish();
    expect(most).toBe(3);
    expect(done).toBe(20);
  });

  it("starts no copy after a failure, lets those under way end, and throws the failure", async () => {
    const queue = createCopyQueue(2);
    const failure = new Error("copy failed");
    let finished = 0;
    await queue.start(async () => {
      await tick();
      throw failure;
    });
    await queue.start(async () => {
      await tick();
      await tick();
      await tick();
      finished++;
    });
    // The walk is told at its next hand-over.
    await expect(
      queue.start(async () => {
        finished += 100;
      }),
    ).rejects.toBe(failure);
    await expect(queue.finish()).rejects.toBe(failure);
    expect(finished).toBe(1);
  });

  it("throws the walk's own error only after the copies under way have ended, whole", async () => {
    const queue = createCopyQueue(4);
    let whole = false;
    await queue.start(async () => {
      await tick();
      await tick();
      whole = true;
    });
    const walk = new Error("a directory is a symlink");
    await expect(queue.finish(walk)).rejects.toBe(walk);
    expect(whole).toBe(true);
  });

  it("answers with the failure that came first", async () => {
    const queue = createCopyQueue(4);
    const first = new Error("first");
    await queue.start(async () => {
      throw first;
    });
    await tick();
    await expect(queue.finish(new Error("later"))).rejects.toBe(first);
  });
});
