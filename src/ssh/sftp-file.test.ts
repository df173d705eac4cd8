import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SFTPWrapper } from "ssh2";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getFile, putFile } from "./sftp-file.js";
import { createRequestWindow } from "./sftp-window.js";

type Cb = (err?: Error | null, value?: unknown) => void;

/**
 * An SFTP session in memory that answers a step later, as a server does, and
 * records what was sent and how many requests were waiting for an answer.
 */
function fakeSftp(content: Buffer, options: { maxRead?: number; endAt?: number; holdChmod?: boolean } = {}) {
  const sent: string[] = [];
  /** Sends and answers in the order they happened ("fchmod", then "fchmod answered"). */
  const log: string[] = [];
  let waiting = 0;
  let mostWaiting = 0;
  let written = Buffer.alloc(0);
  // holdChmod: the fchmod is answered only once a WRITE has come (or after a while, so a client that
  // waits for the answer first is not stuck, only seen to wait).
  let releaseChmod: (() => void) | null = null;
  const answer = (name: string, cb: Cb, value?: unknown) => {
    sent.push(name);
    log.push(name);
    waiting++;
    mostWaiting = Math.max(mostWaiting, waiting);
    const reply = () => {
      waiting--;
      log.push(`${name} answered`);
      cb(null, value);
    };
    if (name === "write") releaseChmod?.();
    if (name === "fchmod" && options.holdChmod) {
      const timer = setTimeout(() => releaseChmod?.(), 200);
      releaseChmod = () => {
        releaseChmod = null;
        clearTimeout(timer);
        setImmediate(reply);
      };
    } else setImmediate(reply);
  };
  const sftp = {
    open: (_path: string, flags: string, ...rest: unknown[]) =>
      answer(`open ${flags}`, rest.at(-1) as Cb, Buffer.from("h")),
    read(_h: Buffer, buffer: Buffer, offset: number, length: number, position: number, cb: Cb) {
      const end = Math.min(
        content.length,
        options.endAt ?? content.length,
        position + (options.maxRead ?? length),
      );
      const n = Math.max(0, Math.min(length, end - position));
      content.copy(buffer, offset, position, position + n);
      answer("read", cb, n);
    },
    write(_h: Buffer, buffer: Buffer, offset: number, length: number, position: number, cb: Cb) {
      if (written.length < position + length)
        written = Buffer.concat([written, Buffer.alloc(position + length - written.length)]);
      buffer.copy(written, position, offset, offset + length);
      answer("write", cb);
    },
    fchmod: (_h: Buffer, _mode: number, cb: Cb) => answer("fchmod", cb),
    futimes: (_h: Buffer, _a: number, _m: number, cb: Cb) => answer("futimes", cb),
    close: (_h: Buffer, cb: Cb) => answer("close", cb),
  };
  return {
    sftp: sftp as unknown as SFTPWrapper,
    sent,
    log,
    mostWaiting: () => mostWaiting,
    written: () => written,
  };
}

describe("one file's content, pipelined", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "relay-sftp-file-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const times = { atime: 1_600_000_000, mtime: 1_600_000_100 };

  it("downloads a file whose server answers each READ short, asking again for the rest", async () => {
    const content = randomBytes(300_000);
    const fake = fakeSftp(content, { maxRead: 1000 });
    const dest = join(dir, "copy");
    let moved = 0;
    await getFile(
      { sftp: fake.sftp, window: createRequestWindow(65_536, 4) },
      { remote: "/x", local: dest, where: "h:/x" },
      { mode: 0o640, size: content.length, ...times },
      (n) => {
        moved += n;
      },
    );
    expect(readFileSync(dest).equals(content)).toBe(true);
    expect(moved).toBe(content.length);
    expect(statSync(dest).mode & 0o777).toBe(0o640);
    expect(Math.floor(statSync(dest).mtimeMs / 1000)).toBe(times.mtime);
    expect(fake.mostWaiting()).toBeLessThanOrEqual(4);
    expect(fake.sent.at(-1)).toBe("close");
  });

  it("fails at once on a file that ends before its size, saying how far it got", async () => {
    const content = randomBytes(5000);
    const fake = fakeSftp(content, { endAt: 1234 });
    await expect(
      getFile(
        { sftp: fake.sftp, window: createRequestWindow(4096, 4) },
        { remote: "/x", local: join(dir, "short"), where: "h:/x" },
        { mode: 0o644, size: content.length, ...times },
        () => undefined,
      ),
    ).rejects.toThrow(
      "download h:/x failed: the server ended the file after 1234 of the 5000 bytes it reported",
    );
  });

  it("uploads over an existing file: the mode is answered before the first WRITE, the times after the last", async () => {
    const source = join(dir, "source");
    const content = randomBytes(1_000_000);
    writeFileSync(source, content);
    const fake = fakeSftp(Buffer.alloc(0));
    await putFile(
      { sftp: fake.sftp, window: createRequestWindow(65_536, 4) },
      { local: source, remote: "/x", where: "h:/x" },
      { exclusive: false, mode: 0o600, size: content.length, setAttrs: true, noFollow: true, ...times },
      () => undefined,
    );
    expect(fake.written().equals(content)).toBe(true);
    expect(fake.sent[0]).toBe("open w");
    expect(fake.log.indexOf("fchmod answered")).toBeLessThan(fake.log.indexOf("write"));
    expect(fake.sent.filter((s) => s === "write")).toHaveLength(16);
    expect(fake.sent.slice(-2)).toEqual(["futimes", "close"]);
    // Four slots: never more than four WRITEs waiting, whatever the size.
    expect(fake.mostWaiting()).toBeLessThanOrEqual(4);
  });

  it("creates a new file exclusively, its fchmod sent ahead of the first WRITE", async () => {
    const source = join(dir, "source");
    writeFileSync(source, "hello\n");
    const fake = fakeSftp(Buffer.alloc(0), { holdChmod: true });
    await putFile(
      { sftp: fake.sftp, window: createRequestWindow(65_536, 4) },
      { local: source, remote: "/x", where: "h:/x" },
      { exclusive: true, mode: 0o644, size: 6, setAttrs: true, noFollow: true, ...times },
      () => undefined,
    );
    expect(fake.sent).toEqual(["open wx", "fchmod", "write", "futimes", "close"]);
    // Not waited for: the WRITE follows the fchmod on the wire, without a round trip between them.
    expect(fake.log.indexOf("write")).toBeLessThan(fake.log.indexOf("fchmod answered"));
    expect(fake.written().toString()).toBe("hello\n");
  });

  it("refuses a source that shrank below the size it was reserved with", async () => {
    const source = join(dir, "source");
    writeFileSync(source, "short");
    const fake = fakeSftp(Buffer.alloc(0));
    await expect(
      putFile(
        { sftp: fake.sftp, window: createRequestWindow(65_536, 4) },
        { local: source, remote: "/x", where: "h:/x" },
        { exclusive: true, mode: 0o644, size: 100, setAttrs: true, noFollow: true, ...times },
        () => undefined,
      ),
    ).rejects.toThrow("shrank while it was being copied");
    // The handle is closed all the same.
    expect(fake.sent.at(-1)).toBe("close");
  });
});
