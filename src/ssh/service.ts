import { type Clock, RelayError } from "../core/index.js";
import type { ConnectionOverrides, HostDirectory } from "./directory.js";
import { execRemote, type RemoteOutcome } from "./exec.js";
import type { HostKeyReport } from "./host-key.js";
import type { KnownHostsStore } from "./known-hosts-store.js";
import type { AcquireOptions, OpenedOnLease, SshPool } from "./pool.js";
import type { SshTarget } from "./target.js";

interface SshRunRequest {
  host: string;
  overrides?: ConnectionOverrides;
  command: string;
  /** Covers connecting, opening the channel, running and draining. */
  timeoutSeconds: number;
  /** Dial timeout per hop; default the pool's (RELAY_SHELL_SSH_CONNECT_TIMEOUT). */
  connectTimeoutSeconds?: number;
  maxBufferBytes: number;
  signal?: AbortSignal;
}

interface SshRunResult extends RemoteOutcome {
  target: SshTarget;
  /** null when the call timed out before the connection was up. */
  hostKey: HostKeyReport | null;
  jumpHostKeys: readonly HostKeyReport[];
  reused: boolean;
}

/** The SSH layer as the tools see it: names, the pool, the pinned keys, and one-shot commands. */
export interface SshService {
  readonly directory: HostDirectory;
  readonly pool: SshPool;
  readonly knownHosts: KnownHostsStore;
  /** Resolve, acquire, run one command, release. A stale pooled connection is replaced once (by the pool). */
  run(request: SshRunRequest): Promise<SshRunResult>;
  close(): void;
}

export interface SshServiceDeps {
  directory: HostDirectory;
  pool: SshPool;
  knownHosts: KnownHostsStore;
  clock: Clock;
}

export function createSshService(deps: SshServiceDeps): SshService {
  const { directory, pool, clock } = deps;

  return {
    directory,
    pool,
    knownHosts: deps.knownHosts,
    async run(request) {
      const started = clock.monotonic();
      const deadline = started + request.timeoutSeconds * 1000;
      const target = directory.resolve(request.host, request.overrides);
      const timedOut = (): SshRunResult => ({
        target,
        hostKey: null,
        jumpHostKeys: [],
        reused: false,
        exitCode: null,
        exitSignal: null,
        timedOut: true,
        output: "",
        totalBytes: 0,
        droppedBytes: 0,
        durationMs: clock.monotonic() - started,
      });

      // Waiting for a connection stops at the deadline (or when the caller goes); the shared
      // dial goes on, and if it succeeds the connection simply waits in the pool.
      const waiting = new AbortController();
      let expired = false;
      const timer = setTimeout(() => {
        expired = true;
        waiting.abort();
      }, deadline - clock.monotonic());
      const cancel = () => waiting.abort();
      request.signal?.addEventListener("abort", cancel, { once: true });
      if (request.signal?.aborted) cancel();
      const options: AcquireOptions = {
        signal: waiting.signal,
        ...(request.connectTimeoutSeconds === undefined
          ? {}
          : { timeoutSeconds: request.connectTimeoutSeconds }),
      };
      let opened: OpenedOnLease<RemoteOutcome>;
      try {
        opened = await pool.open(target, options, (lease) =>
          execRemote(
            lease.client,
            {
              command: request.command,
              timeoutMs: deadline - clock.monotonic(),
              maxBufferBytes: request.maxBufferBytes,
              ...(request.signal ? { signal: request.signal } : {}),
            },
            clock,
          ),
        );
      } catch (err) {
        if (
          expired &&
          !request.signal?.aborted &&
          err instanceof RelayError &&
          err.code === "CancelledError"
        ) {
          return timedOut();
        }
        throw err;
      } finally {
        clearTimeout(timer);
        request.signal?.removeEventListener("abort", cancel);
      }
      const { lease, value: outcome } = opened;
      lease.release();
      return {
        ...outcome,
        durationMs: clock.monotonic() - started,
        target,
        hostKey: lease.hostKey,
        jumpHostKeys: lease.jumpHostKeys,
        reused: lease.reused,
      };
    },
    close() {
      pool.closeAll();
    },
  };
}
