import { join, resolve } from "node:path";
import pino from "pino";
import {
  ConfigError,
  type InfraEnvironment,
  readInfraEnvironment,
  snapshotEnvironment,
} from "../config/index.js";
import { cryptoIds, describeError, type Logger, systemClock } from "../core/index.js";
import { BrokerStartRefused, type RunningBroker, startInfraBroker, startupLines } from "../infra/index.js";
import { flagTokens } from "./flags.js";
import { packageVersion } from "./runtime.js";

const INFRA_BROKER_USAGE = `usage: relay-shell infra-broker --config DIR [--socket PATH] [--state DIR] [--allow-key-file DIR]
                             [--allowed-signers FILE]

The INFRA-1 broker: a daemon, never run as root, that answers a closed set of
operations (status, probe, rsync-dry-run, replicate, verify) on one Unix
socket, each against an operator-owned profile, and leaves a hash-chained
receipt for every request in <state>/receipts.jsonl.

options:
  --config DIR          the profile directory (one <id>.json per profile)
  --socket PATH         the Unix socket to listen on; its directory must be the
                        broker's own with mode 0700 or 0750 (default under
                        systemd: $RUNTIME_DIRECTORY/infra-broker.sock)
  --state DIR           the broker's private state directory, its own with mode
                        0700 (default under systemd: $STATE_DIRECTORY)
  --allow-key-file DIR  read keys from DIR/<credential id> when they are not in
                        $CREDENTIALS_DIRECTORY (off unless given)
  --allowed-signers FILE
                        OpenSSH allowed_signers file whose keys may approve an
                        act of a profile with "approval": "consent" (required
                        when one has it); root-owned, writable by nobody else
  --help                show this help and exit

Exit status 2 when an argument is wrong or the broker refuses to start.
`;

/** The socket's name in the runtime directory systemd gives the service. */
const DEFAULT_SOCKET_NAME = "infra-broker.sock";

interface InfraBrokerFlags {
  help: boolean;
  config: string | null;
  socket: string | null;
  state: string | null;
  allowKeyFile: string | null;
  allowedSigners: string | null;
}

const FLAGS = {
  help: { type: "boolean", short: "h" },
  config: { type: "string" },
  socket: { type: "string" },
  state: { type: "string" },
  "allow-key-file": { type: "string" },
  "allowed-signers": { type: "string" },
} as const;

/** The subcommand's flags, or the message that refuses them, naming the argument as typed. */
function parseInfraBrokerFlags(argv: readonly string[]): InfraBrokerFlags | string {
  const tokens = flagTokens(argv, FLAGS);
  if (typeof tokens === "string") return tokens;
  const flags: InfraBrokerFlags = {
    help: false,
    config: null,
    socket: null,
    state: null,
    allowKeyFile: null,
    allowedSigners: null,
  };
  for (const { name, value } of tokens) {
    if (name === "help") {
      flags.help = true;
      continue;
    }
    if (value === undefined || value === "") return `--${name} needs a path`;
    const key =
      name === "allow-key-file" ? "allowKeyFile" : name === "allowed-signers" ? "allowedSigners" : name;
    if (flags[key] !== null) return `--${name} is given more than once`;
    flags[key] = value;
  }
  return flags;
}

function refuse(message: string, usage = false): never {
  process.stderr.write(`relay_shell infra-broker: ${message}\n${usage ? INFRA_BROKER_USAGE : ""}`);
  process.exit(2);
}

/** `relay-shell infra-broker ...`: start the broker and serve until SIGTERM or SIGINT. */
export async function runInfraBrokerCli(argv: readonly string[]): Promise<void> {
  const flags = parseInfraBrokerFlags(argv);
  if (typeof flags === "string") refuse(flags, true);
  if (flags.help) {
    process.stdout.write(INFRA_BROKER_USAGE);
    return;
  }
  let environment: InfraEnvironment;
  try {
    environment = readInfraEnvironment(snapshotEnvironment());
  } catch (err) {
    refuse(`invalid environment: ${err instanceof ConfigError ? err.problems.join("; ") : String(err)}`);
  }
  const socket =
    flags.socket ??
    (environment.runtimeDirectory === null ? null : join(environment.runtimeDirectory, DEFAULT_SOCKET_NAME));
  const state = flags.state ?? environment.stateDirectory;
  if (flags.config === null) refuse("--config DIR is required", true);
  if (socket === null) refuse("--socket PATH is required (no $RUNTIME_DIRECTORY to default to)", true);
  if (state === null) refuse("--state DIR is required (no $STATE_DIRECTORY to default to)", true);

  const logger: Logger = pino({ base: { svc: "relay-shell-infra-broker" } }, pino.destination(2));
  let broker: RunningBroker;
  try {
    broker = await startInfraBroker(
      {
        configDir: resolve(flags.config),
        socketPath: resolve(socket),
        stateDir: resolve(state),
        credentialsDirectory: environment.credentialsDirectory,
        keyFileDirectory: flags.allowKeyFile === null ? null : resolve(flags.allowKeyFile),
        allowedSigners: flags.allowedSigners === null ? null : resolve(flags.allowedSigners),
        version: packageVersion(),
      },
      {
        euid: process.geteuid?.() ?? 0,
        clock: systemClock,
        ids: cryptoIds,
        logger,
        stderr: (line) => void process.stderr.write(line),
      },
    );
  } catch (err) {
    if (err instanceof BrokerStartRefused) refuse(`refusing to start: ${err.message}`);
    refuse(`refusing to start: ${describeError(err).message}`);
  }
  // One write, so a reader waiting for the first line also has the broken profiles with it.
  process.stderr.write(
    startupLines(resolve(socket), broker.profiles)
      .map((line) => `relay_shell infra-broker: ${line}\n`)
      .join(""),
  );
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    broker.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err: describeError(err).message }, "the broker did not stop cleanly");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
