import { closeSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type PeerCredentials, peerCredentials } from "./libc.js";

let dir = "";
let server: Server | null = null;

afterEach(() => {
  server?.close();
  server = null;
  if (dir !== "") rmSync(dir, { recursive: true, force: true });
  dir = "";
});

function handleFd(socket: Socket): number {
  return (socket as unknown as { _handle: { fd: number } })._handle.fd;
}

describe("peerCredentials", () => {
  it("names this process as the peer of its own connection", async () => {
    dir = mkdtempSync(join(tmpdir(), "relay-peercred-"));
    const path = join(dir, "s");
    const seen = new Promise<PeerCredentials | null>((resolve) => {
      server = createServer((socket) => {
        resolve(peerCredentials(handleFd(socket)));
        socket.destroy();
      });
    });
    await new Promise<void>((resolve) => server?.listen(path, resolve));
    const client = connect(path);
    client.on("error", () => undefined);
    const cred = await seen;
    client.destroy();
    expect(cred).toEqual({ pid: process.pid, uid: process.geteuid?.(), gid: process.getegid?.() });
  });

  it("answers null for a descriptor that is not a socket, or none at all", () => {
    dir = mkdtempSync(join(tmpdir(), "relay-peercred-"));
    const fd = openSync(join(dir, "file"), "w");
    try {
      expect(peerCredentials(fd)).toBeNull();
    } finally {
      closeSync(fd);
    }
    expect(peerCredentials(-1)).toBeNull();
    expect(peerCredentials(1.5)).toBeNull();
  });
});
