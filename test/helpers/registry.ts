import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { type Clock, type Ids, RelayError } from "../../src/core/index.js";
import {
  createSessionRegistry,
  type SessionRegistry,
  type SessionRegistryConfig,
  type SessionTransport,
  type TransportEvents,
} from "../../src/sessions/index.js";

/** A clock that only moves when the test says so. */
function fakeClock(start = 1_700_000_000_000): Clock & { advance(ms: number): void } {
  let mono = 0;
  return {
    now: () => start + mono,
    monotonic: () => mono,
    advance(ms) {
      mono += ms;
    },
  };
}

function counterIds(): Ids {
  let n = 0;
  return {
    hex: (bytes) => (n++).toString(16).padStart(bytes * 2, "0"),
    token: () => "t",
  };
}

/** A transport we own: the test plays the terminal. */
export class FakeTransport implements SessionTransport {
  readonly kind = "local" as const;
  events: TransportEvents | null = null;
  written: string[] = [];
  sizes: string[] = [];
  signals: string[] = [];
  closed = 0;
  destroyed = 0;
  constructor(private readonly onlySends?: string) {}
  start(events: TransportEvents) {
    this.events = events;
  }
  write(data: Uint8Array) {
    this.written.push(Buffer.from(data).toString("utf8"));
  }
  resize(cols: number, rows: number) {
    this.sizes.push(`${cols}x${rows}`);
  }
  signal(name: string) {
    this.signals.push(name);
    return this.onlySends ?? name;
  }
  async close() {
    this.closed += 1;
    this.events?.exit(-15);
  }
  destroy() {
    this.destroyed += 1;
  }
  emit(data: string | Uint8Array) {
    this.events?.data(typeof data === "string" ? new TextEncoder().encode(data) : data);
  }
}

const BASE: SessionRegistryConfig = {
  maxSessions: 3,
  idleTimeoutMs: 60_000,
  lifetimeMs: 3_600_000,
  bufferBytes: 4096,
  recordDir: "",
  recordInput: false,
};

/**
 * Registries on a fake clock and counter ids, without the background sweep
 * unless a test asks for it,
 * and temporary directories; `cleanup` (an afterEach) closes and removes
 * what the test made.
 */
export function registryHarness() {
  let registry: SessionRegistry | null = null;
  const dirs: string[] = [];
  const cleanup = () => {
    registry?.closeAll();
    registry = null;
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  };
  const tempDir = (prefix: string): string => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };
  function setup(config: Partial<SessionRegistryConfig> = {}, options: { sweeper?: boolean } = {}) {
    const clock = fakeClock();
    const created = createSessionRegistry(
      { ...BASE, ...config },
      { clock, ids: counterIds(), sweeper: options.sweeper ?? false },
    );
    registry = created;
    const open = async (owner = "", transport = new FakeTransport()) => {
      const added = await created.add({
        kind: "local",
        title: "bash",
        owner,
        cols: 80,
        rows: 24,
        transport,
      });
      return { ...added, transport };
    };
    return { registry: created, clock, open };
  }
  return { setup, cleanup, tempDir };
}

export async function errorOf(work: () => unknown): Promise<string> {
  try {
    await work();
  } catch (err) {
    expect(err).toBeInstanceOf(RelayError);
    return `${(err as RelayError).type}: ${(err as RelayError).message}`;
  }
  throw new Error("expected an error");
}
