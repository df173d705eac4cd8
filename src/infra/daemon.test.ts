import { chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cryptoIds, silentLogger, systemClock } from "../core/index.js";
import {
  BrokerStartRefused,
  type InfraBrokerDeps,
  type InfraBrokerOptions,
  startInfraBroker,
  startupLines,
} from "./daemon.js";
import type { Operations, ProfileSet } from "./types.js";

const IS_ROOT = process.geteuid?.() === 0;
/** The uid the broker believes it runs as; its directories are chowned to it (root can). */
const EUID = IS_ROOT ? 54321 : (process.geteuid?.() ?? 1000);

const EMPTY: ProfileSet = { profiles: new Map(), broken: new Map() };
const NO_OPERATIONS: Operations = {
  probe: async () => ({ code: "OK", message: "" }),
  dryRun: async () => ({ code: "OK", message: "" }),
  replicate: async () => ({ code: "OK", message: "" }),
  verify: async () => ({ code: "OK", message: "" }),
};

let base = "";
let options: InfraBrokerOptions;

function deps(extra: Partial<InfraBrokerDeps> = {}): InfraBrokerDeps {
  return {
    euid: EUID,
    clock: systemClock,
    ids: cryptoIds,
    logger: silentLogger,
    stderr: () => undefined,
    loadProfiles: () => EMPTY,
    createRemote: () => ({}) as never,
    createOperations: () => NO_OPERATIONS,
    ...extra,
  };
}

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), "relay-infra-daemon-unit-"));
  const own = (path: string) => {
    mkdirSync(path, { mode: 0o700 });
    if (IS_ROOT) chownSync(path, EUID, EUID);
  };
  own(join(base, "run"));
  own(join(base, "state"));
  options = {
    configDir: join(base, "profiles"),
    socketPath: join(base, "run", "broker.sock"),
    stateDir: join(base, "state"),
    credentialsDirectory: null,
    keyFileDirectory: null,
    version: "0.0.0-test",
  };
});

afterEach(() => rmSync(base, { recursive: true, force: true }));

async function refusal(run: () => Promise<unknown>): Promise<string> {
  try {
    await run();
  } catch (err) {
    expect(err).toBeInstanceOf(BrokerStartRefused);
    return (err as Error).message;
  }
  throw new Error("the broker started");
}

describe("startInfraBroker", () => {
  it("refuses uid 0 before looking at anything", async () => {
    let loaded = false;
    const message = await refusal(() =>
      startInfraBroker(
        options,
        deps({
          euid: 0,
          loadProfiles: () => {
            loaded = true;
            return EMPTY;
          },
        }),
      ),
    );
    expect(message).toMatch(/does not run as root/);
    expect(loaded).toBe(false);
  });

  it("names every directory problem at once", async () => {
    rmSync(join(base, "run"), { recursive: true });
    rmSync(join(base, "state"), { recursive: true });
    const message = await refusal(() => startInfraBroker(options, deps()));
    expect(message).toMatch(/socket directory .*run does not exist/);
    expect(message).toMatch(/state directory .*state does not exist/);
  });

  it("refuses when the profiles cannot be read, redacting what the error said, and leaves no socket", async () => {
    const message = await refusal(() =>
      startInfraBroker(
        options,
        deps({
          loadProfiles: () => {
            throw new Error(
              "cannot parse -----BEGIN OPENSSH PRIVATE KEY-----\nAAAAb3Blbg\n-----END OPENSSH PRIVATE KEY-----",
            );
          },
        }),
      ),
    );
    expect(message).toMatch(/^cannot read the profiles in .*profiles: cannot parse \[REDACTED\]/);
    expect(existsSync(options.socketPath)).toBe(false);
  });

  it("refuses when the operations cannot be built, and leaves no socket", async () => {
    const message = await refusal(() =>
      startInfraBroker(
        options,
        deps({
          createOperations: () => {
            throw new Error("not ready");
          },
        }),
      ),
    );
    expect(message).toBe("cannot set up the operations: not ready");
    expect(existsSync(options.socketPath)).toBe(false);
  });

  it.skipIf(!IS_ROOT)("listens on a 0660 socket and removes it when it stops", async () => {
    const broker = await startInfraBroker(options, deps());
    expect(lstatSync(options.socketPath).mode & 0o777).toBe(0o660);
    expect(broker.receiptsPath).toBe(join(options.stateDir, "receipts.jsonl"));
    await Promise.all([broker.stop(), broker.stop()]);
    expect(existsSync(options.socketPath)).toBe(false);
  });
});

describe("startupLines", () => {
  it("gives one line for the socket and counts, then one per broken profile", () => {
    const lines = startupLines("/run/x/broker.sock", {
      profiles: new Map(),
      broken: new Map([
        ["b", { id: "b", file: "/etc/p/b.json", problems: ["one", "two"] }],
        ["a", { id: "a", file: "/etc/p/a.json", problems: ["three"] }],
      ]),
    });
    expect(lines).toEqual([
      "listening on /run/x/broker.sock (0 profile(s) loaded, 2 broken)",
      "broken profile a (/etc/p/a.json): three",
      "broken profile b (/etc/p/b.json): one; two",
    ]);
  });
});
