import { chmodSync, lstatSync, statSync, unlinkSync } from "node:fs";
import type { Socket } from "node:net";
import { redactString } from "../audit/index.js";
import { type Clock, describeError, type Ids, type Logger } from "../core/index.js";
import { createLauncherRunner, type LauncherRunner } from "../exec/index.js";
import { PROTOCOL_VERSION } from "../infra-protocol/index.js";
import { createAdmission, DEFAULT_ADMISSION } from "./admission.js";
import { createApprovalGate, type SignatureCheck } from "./approvals.js";
import { sweepKeyFiles } from "./credentials.js";
import { createDispatcher, isKnownPrincipal } from "./dispatch.js";
import { type NonceStore, openNonceStore } from "./nonces.js";
import { createOperations } from "./operations.js";
import { identifyPeer } from "./principal.js";
import { loadProfiles } from "./profiles.js";
import { createReceipts, type Receipts } from "./receipts.js";
import { createRemote } from "./remote.js";
import { createInfraServer, type InfraServer } from "./server.js";
import { loadAllowedSigners } from "./signers.js";
import { clearStaleSocket, socketDirectoryProblem, stateDirectoryProblem } from "./socket-dir.js";
import type { Principal, ProfileSet } from "./types.js";

/** Connections served at once. */
const MAX_CONNECTIONS = 32;
/** Connections one uid may hold at once. */
const MAX_CONNECTIONS_PER_UID = 8;
/** How long a connection may sit without sending a whole request. */
const IDLE_MS = 30_000;
/** Receipts one connection may cause before it is ended (the relay's client opens a new one). */
const MAX_RECEIPTS_PER_CONNECTION = 1024;
/** How long a summary receipt of refusals stays open. */
const SUMMARY_WINDOW_MS = 2_000;
/** The socket's mode: the broker's user and group may connect, nobody else. */
const SOCKET_MODE = 0o660;

export interface InfraBrokerOptions {
  /** The operator's profile directory. */
  configDir: string;
  /** Absolute path of the Unix socket. */
  socketPath: string;
  /** Absolute path of the broker's private state directory. */
  stateDir: string;
  /** `$CREDENTIALS_DIRECTORY`, or null. */
  credentialsDirectory: string | null;
  /** The explicit key-file fallback directory, or null when it was not asked for. */
  keyFileDirectory: string | null;
  /** The operator's allowed-signers file for approvals; required when a profile's approval is consent. */
  allowedSigners: string | null;
  /** The package version, for `status`. */
  version: string;
}

/** The parts a test may replace; the defaults are the real ones. */
export interface InfraBrokerDeps {
  euid: number;
  clock: Clock;
  ids: Ids;
  logger: Logger;
  /** Receipts that could not reach their file, as whole lines. */
  stderr: (line: string) => void;
  loadProfiles?: typeof loadProfiles;
  createRemote?: typeof createRemote;
  createOperations?: typeof createOperations;
  identify?: (socket: Socket) => Principal | null;
}

export interface RunningBroker {
  profiles: ProfileSet;
  receiptsPath: string;
  /** Stop accepting, let the requests in progress finish, remove the socket, close the receipts. */
  stop(): Promise<void>;
}

/** The broker will not start; the message says why, for the operator. */
export class BrokerStartRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BrokerStartRefused";
  }
}

function attempt<T>(what: string, run: () => T): T {
  try {
    return run();
  } catch (err) {
    throw new BrokerStartRefused(`${what}: ${redactString(describeError(err).message)}`);
  }
}

/** The start-up report: one line for the socket and the counts, one per broken profile. */
export function startupLines(socketPath: string, profiles: ProfileSet): string[] {
  const lines = [
    `listening on ${socketPath} (${profiles.profiles.size} profile(s) loaded, ${profiles.broken.size} broken)`,
  ];
  for (const broken of [...profiles.broken.values()].sort((a, b) => a.id.localeCompare(b.id))) {
    lines.push(`broken profile ${broken.id} (${broken.file}): ${broken.problems.join("; ")}`);
  }
  return lines;
}

async function listen(server: InfraServer, socketPath: string): Promise<{ dev: number; ino: number }> {
  // The socket is created with the mode the umask leaves; keep it from ever being wider than
  // 0660, then set exactly that. The directory's own mode already keeps others out meanwhile.
  const previous = process.umask(0o117);
  let listening: Promise<void>;
  try {
    listening = server.listen(socketPath);
  } finally {
    process.umask(previous);
  }
  try {
    await listening;
  } catch (err) {
    throw new BrokerStartRefused(`cannot listen on ${socketPath}: ${describeError(err).message}`);
  }
  chmodSync(socketPath, SOCKET_MODE);
  const st = lstatSync(socketPath);
  return { dev: st.dev, ino: st.ino };
}

/**
 * The allowed signers approvals are verified against: required as soon as
 * one profile's approval policy is consent, and then held to the trust rules
 * of the profiles themselves. Null when no profile needs them and none were given.
 */
function allowedSigners(
  options: InfraBrokerOptions,
  profiles: ProfileSet,
  euid: number,
): { verify: SignatureCheck; count: number } | null {
  const consent = [...profiles.profiles.values()]
    .filter((p) => p.approval === "consent")
    .map((p) => p.id)
    .sort();
  if (options.allowedSigners === null) {
    if (consent.length === 0) return null;
    throw new BrokerStartRefused(
      `profile(s) ${consent.join(", ")} need human-signed approvals (approval: consent), ` +
        "and no --allowed-signers file says whose signatures count",
    );
  }
  const owner = attempt(`cannot read ${options.configDir}`, () => statSync(options.configDir).uid);
  const loaded = loadAllowedSigners(options.allowedSigners, { daemonUid: euid, owners: [owner] });
  if (!loaded.ok) throw new BrokerStartRefused(`cannot use the allowed signers: ${loaded.error.join("; ")}`);
  return loaded.value;
}

/**
 * Start the broker: check that it is not root and that its socket and state
 * directories are its own, read the profiles, open the receipts, build the
 * transport and the operations, and listen. Everything that can refuse a
 * start does so before the socket exists; the refusal is a
 * BrokerStartRefused naming the path, owner and mode at fault.
 */
export async function startInfraBroker(
  options: InfraBrokerOptions,
  deps: InfraBrokerDeps,
): Promise<RunningBroker> {
  const { euid, clock, ids, logger } = deps;
  if (euid === 0) {
    throw new BrokerStartRefused(
      "the infra broker does not run as root; start it as its own unprivileged account",
    );
  }
  const problems = [
    socketDirectoryProblem(options.socketPath, euid),
    stateDirectoryProblem(options.stateDir, euid),
  ].filter((p): p is string => p !== null);
  if (problems.length > 0) throw new BrokerStartRefused(problems.join("; "));
  // Before anything else is opened: a broker already serving here keeps its socket and its receipts.
  const stale = await clearStaleSocket(options.socketPath);
  if (stale !== null) throw new BrokerStartRefused(stale);
  // No broker runs here now, so a key copy in the state directory is a crashed one's: removed first,
  // before anything below can refuse the start and leave it on disk.
  attempt(`cannot clear key copies left in ${options.stateDir}`, () => sweepKeyFiles(options.stateDir));

  const profiles = attempt(`cannot read the profiles in ${options.configDir}`, () =>
    (deps.loadProfiles ?? loadProfiles)(options.configDir, { daemonUid: euid }),
  );
  const signers = allowedSigners(options, profiles, euid);

  const receipts: Receipts = createReceipts(options.stateDir, { clock, ids, stderr: deps.stderr });
  let nonces: NonceStore | null = null;
  const fail = (err: unknown): never => {
    nonces?.close();
    receipts.close();
    throw err;
  };
  if (receipts.problem() !== "" || !receipts.reserve()) {
    fail(new BrokerStartRefused(`cannot write receipts: ${receipts.problem()}`));
  }
  if (signers !== null) {
    try {
      nonces = openNonceStore(options.stateDir, { clock });
    } catch (err) {
      fail(new BrokerStartRefused(`cannot open the approval store: ${describeError(err).message}`));
    }
  }

  const startedAt = new Date(clock.now()).toISOString();
  let server: InfraServer;
  let socket: { dev: number; ino: number };
  // ssh and rsync run under the launcher (ADR 0031): when this daemon dies, even by SIGKILL, the
  // launcher sees its input close (or gets its parent-death signal) and kills every process group it
  // started, so no copy goes on writing after the broker that owns it is gone.
  let runner: LauncherRunner | null = null;
  try {
    runner = createLauncherRunner({ clock, logger });
    const base = { stateDir: options.stateDir, runner, clock, ids, logger };
    const remote = attempt("cannot set up the transport", () =>
      (deps.createRemote ?? createRemote)(base, {
        credentialsDirectory: options.credentialsDirectory,
        keyFileDirectory: options.keyFileDirectory,
      }),
    );
    const operations = attempt("cannot set up the operations", () =>
      (deps.createOperations ?? createOperations)({ ...base, remote }),
    );
    const dispatcher = createDispatcher({
      profiles,
      operations,
      approvals: createApprovalGate({ verify: signers?.verify ?? null, nonces, clock }),
      reserveReceipt: () => receipts.reserve(),
      logger,
      facts: () => ({
        protocol: PROTOCOL_VERSION,
        version: options.version,
        uid: euid,
        pid: process.pid,
        socket: options.socketPath,
        started_at: startedAt,
        profiles: profiles.profiles.size,
        broken: profiles.broken.size,
        receipts_ok: receipts.problem() === "",
        allowed_signers: signers?.count ?? null,
      }),
    });
    server = createInfraServer({
      dispatcher,
      receipts,
      logger,
      identify: deps.identify ?? identifyPeer,
      maxConnections: MAX_CONNECTIONS,
      maxPerUid: MAX_CONNECTIONS_PER_UID,
      idleMs: IDLE_MS,
      admission: createAdmission({ clock }, DEFAULT_ADMISSION),
      isKnown: (principal) => isKnownPrincipal(principal, profiles),
      maxReceiptsPerConnection: MAX_RECEIPTS_PER_CONNECTION,
      summaryWindowMs: SUMMARY_WINDOW_MS,
    });
    socket = await listen(server, options.socketPath);
  } catch (err) {
    runner?.close();
    return fail(err);
  }
  const launcher = runner;

  let stopping: Promise<void> | null = null;
  async function stop(): Promise<void> {
    await server.close();
    // libuv removes the path when the listener closes; this covers a build of it that does not, and
    // then touches only the socket this broker made. The directory is the broker's own, so nobody
    // else can have put anything at the path meanwhile.
    const st = lstatSync(options.socketPath, { throwIfNoEntry: false });
    if (st !== undefined && st.dev === socket.dev && st.ino === socket.ino) {
      try {
        unlinkSync(options.socketPath);
      } catch (err) {
        logger.warn({ err: describeError(err).message }, "the socket could not be removed");
      }
    }
    launcher.close();
    nonces?.close();
    receipts.close();
  }
  return {
    profiles,
    receiptsPath: receipts.path,
    stop: () => {
      stopping ??= stop();
      return stopping;
    },
  };
}
