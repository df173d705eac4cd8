import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { allowedSignersLine, makeSignerKey } from "../../test/helpers/approvals.js";
import { cryptoIds, silentLogger, systemClock } from "../core/index.js";
import {
  BrokerStartRefused,
  type InfraBrokerDeps,
  type InfraBrokerOptions,
  startInfraBroker,
  startupLines,
} from "./daemon.js";
import type { Operations, Profile, ProfileSet } from "./types.js";

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
    allowedSigners: null,
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

describe("startInfraBroker's allowed signers", () => {
  const consentProfile = { id: "site", approval: "consent" } as Profile;
  const withConsent: ProfileSet = { profiles: new Map([["site", consentProfile]]), broken: new Map() };

  /** A signers file in a root-owned-like directory of its own, with `mode` and `owner`. */
  function signersFile(mode: number, owner?: number): string {
    const dir = join(base, "trusted");
    mkdirSync(dir, { mode: 0o755, recursive: true });
    chmodSync(dir, 0o755);
    const key = makeSignerKey(dir, "operator");
    const path = join(dir, "allowed_signers");
    writeFileSync(path, allowedSignersLine("operator@example.org", key));
    chmodSync(path, mode);
    if (owner !== undefined) chownSync(path, owner, owner);
    return path;
  }

  beforeEach(() => mkdirSync(options.configDir, { mode: 0o755 }));

  it("refuses a consent profile without --allowed-signers, naming the profile", async () => {
    const message = await refusal(() => startInfraBroker(options, deps({ loadProfiles: () => withConsent })));
    expect(message).toMatch(/profile\(s\) site need human-signed approvals .*--allowed-signers/);
    expect(existsSync(options.socketPath)).toBe(false);
  });

  const badFiles: Array<[string, number, number | undefined, RegExp]> = [
    ["writable by its group", 0o664, undefined, /writable by group or others \(mode 0664\)/],
    ["writable by anyone", 0o646, undefined, /writable by group or others \(mode 0646\)/],
  ];
  if (IS_ROOT)
    badFiles.push(["owned by the daemon's own account", 0o644, EUID, /owned by the daemon's own uid/]);
  it.each(badFiles)("refuses an allowed-signers file %s", async (_what, mode, owner, why) => {
    const path = signersFile(mode, owner);
    const message = await refusal(() =>
      startInfraBroker({ ...options, allowedSigners: path }, deps({ loadProfiles: () => withConsent })),
    );
    expect(message).toMatch(/^cannot use the allowed signers: /);
    expect(message).toMatch(why);
    expect(existsSync(options.socketPath)).toBe(false);
  });

  it("refuses a file with a line it cannot read, or none at all", async () => {
    const path = signersFile(0o644);
    writeFileSync(path, "operator@example.org ssh-ed25519 not-base64!\n");
    const message = await refusal(() => startInfraBroker({ ...options, allowedSigners: path }, deps()));
    expect(message).toMatch(/allowed_signers line 1: /);
    writeFileSync(path, "# nobody yet\n");
    expect(await refusal(() => startInfraBroker({ ...options, allowedSigners: path }, deps()))).toMatch(
      /names no signer/,
    );
    expect(
      await refusal(() => startInfraBroker({ ...options, allowedSigners: `${path}.missing` }, deps())),
    ).toMatch(/does not exist/);
  });

  it.skipIf(!IS_ROOT)(
    "starts with a sound file, keeps its nonces in a private store, and counts its signers",
    async () => {
      const path = signersFile(0o644);
      const broker = await startInfraBroker(
        { ...options, allowedSigners: path },
        deps({ loadProfiles: () => withConsent }),
      );
      try {
        expect(lstatSync(join(options.stateDir, "approval-nonces.sqlite")).mode & 0o777).toBe(0o600);
      } finally {
        await broker.stop();
      }
    },
  );
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
