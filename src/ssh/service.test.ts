import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../core/index.js";
import { createSshLayer } from "./layer.js";
import type { SshService } from "./service.js";
import { loadSsh2 } from "./ssh2-module.js";

/**
 * The call's own timeout covers getting a connection: a server that accepts
 * TCP but never speaks SSH keeps the dial waiting, and the call must still
 * end on time (the dial itself goes on, bounded by the connect timeout).
 */
describe("ssh_exec's deadline while the connection is being dialled", () => {
  const dir = mkdtempSync(join(tmpdir(), "relay-service-"));
  const held: Socket[] = [];
  let mute: Server;
  let port = 0;
  let service: SshService;

  beforeAll(async () => {
    // A real key to offer: the dial must get as far as waiting for the server.
    mkdirSync(join(dir, ".ssh"), { mode: 0o700 });
    const key = loadSsh2().utils.generateKeyPairSync("ed25519");
    writeFileSync(join(dir, ".ssh", "id_ed25519"), key.private, { mode: 0o600 });
    mute = createServer((socket) => held.push(socket));
    await new Promise<void>((resolve) => mute.listen(0, "127.0.0.1", resolve));
    const address = mute.address();
    port = typeof address === "object" && address ? address.port : 0;
    service = createSshLayer(
      {
        inventory: "",
        sshConfig: "",
        sshKnownHosts: "accept-new",
        sshKnownHostsFile: join(dir, "known_hosts"),
        sshAllowWeakerKnownHosts: false,
        sshConnectTimeout: 30,
        sshKeepalive: 0,
        sshIdleTimeout: 0,
        maxConns: 4,
      },
      { clock: systemClock, home: dir, localUser: "svc", agentSocket: "", cwd: dir },
    );
  });
  afterAll(async () => {
    service?.close();
    for (const socket of held) socket.destroy();
    await new Promise((resolve) => mute?.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers timed out at the call's deadline, with no host key, and leaves the dial to the pool", async () => {
    const started = performance.now();
    const result = await service.run({
      host: "127.0.0.1",
      overrides: { port },
      command: "true",
      timeoutSeconds: 1,
      maxBufferBytes: 1024,
    });
    const took = performance.now() - started;
    expect(result).toMatchObject({
      timedOut: true,
      hostKey: null,
      exitCode: null,
      reused: false,
      output: "",
    });
    expect(took).toBeGreaterThanOrEqual(900);
    expect(took).toBeLessThan(5000);
    expect(service.pool.stats().dialing).toBe(1);
  });

  it("fails as cancelled, not timed out, when the caller goes away first", async () => {
    const abort = new AbortController();
    const running = service.run({
      host: "127.0.0.1",
      overrides: { port },
      command: "true",
      timeoutSeconds: 30,
      maxBufferBytes: 1024,
      signal: abort.signal,
    });
    setTimeout(() => abort.abort(), 100);
    await expect(running).rejects.toMatchObject({ type: "CancelledError" });
  });
});
