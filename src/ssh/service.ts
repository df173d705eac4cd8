import { type Clock, RelayError } from "../core/index.js";
import type { ConnectionOverrides, HostDirectory } from "./directory.js";
import { execRemote, type RemoteOutcome } from "./exec.js";
import type { HostKeyReport } from "./host-key.js";
import type { KnownHostsStore } from "./known-hosts-store.js";
import type { SshLease, SshPool } from "./pool.js";
import type { SshTarget } from "./target.js";

export interface SshRunRequest {
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

export interface SshRunResult extends RemoteOutcome {
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
  /** Resolve, acquire, run one command, release. A stale pooled connection is replaced once. */
  run(request: SshRunRequest): Promise<SshRunResult>;
  close(): void;
}

export interface SshServiceDeps {
  directory: HostDirectory;
  pool: SshPool;
  knownHosts: KnownHostsStore;
  clock: Clock;
}

const TIMED_OUT = Symbol("timed out");

export function createSshService(deps: SshServiceDeps): SshService {
  const { directory, pool, clock } = deps;

  async function acquireBy(
    target: SshTarget,
    deadline: number,
    request: SshRunRequest,
  ): Promise<SshLease | typeof TIMED_OUT> {
    const left = deadline - clock.monotonic();
    if (left <= 0) return TIMED_OUT;
    let timer: NodeJS.Timeout | undefined;
    const acquiring = pool.acquire(target, {
      ...(request.connectTimeoutSeconds === undefined
        ? {}
        : { timeoutSeconds: request.connectTimeoutSeconds }),
      ...(request.signal ? { signal: request.signal } : {}),
    });
    const expiry = new Promise<typeof TIMED_OUT>((resolve) => {
      timer = setTimeout(() => resolve(TIMED_OUT), left);
    });
    try {
      const winner = await Promise.race([acquiring, expiry]);
      if (winner === TIMED_OUT) {
        // The shared dial goes on; if it succeeds the connection simply waits in the pool.
        acquiring.then(
          (lease) => lease.release(),
          () => undefined,
        );
      }
      return winner;
    } finally {
      clearTimeout(timer);
    }
  }

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

      for (let attempt = 0; ; attempt++) {
        const lease = await acquireBy(target, deadline, request);
        if (lease === TIMED_OUT) return timedOut();
        try {
          const outcome = await execRemote(
            lease.client,
            {
              command: request.command,
              timeoutMs: deadline - clock.monotonic(),
              maxBufferBytes: request.maxBufferBytes,
              ...(request.signal ? { signal: request.signal } : {}),
            },
            clock,
          );
          return {
            ...outcome,
            durationMs: clock.monotonic() - started,
            target,
            hostKey: lease.hostKey,
            jumpHostKeys: lease.jumpHostKeys,
            reused: lease.reused,
          };
        } catch (err) {
          // A pooled connection can die between uses (server restart, network);
          // that is not the caller's problem, so dial once more.
          if (attempt === 0 && lease.reused && err instanceof RelayError && err.code === "channel_open") {
            lease.discard();
            continue;
          }
          throw err;
        } finally {
          lease.release();
        }
      }
    },
    close() {
      pool.closeAll();
    },
  };
}
