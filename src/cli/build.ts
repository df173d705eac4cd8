import { appendFileSync } from "node:fs";
import { homedir } from "node:os";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { type AuditLog, createAuditLog } from "../audit/index.js";
import type { Settings } from "../config/index.js";
import type { PasskeyCounters } from "../consent/index.js";
import type { Logger } from "../core/index.js";
import { type Clock, cryptoIds, enableStageTrace, type StageRecord, systemClock } from "../core/index.js";
import { createLauncherRunner, type LauncherRunner, type ProcessRunner } from "../exec/index.js";
import { type CallCounter, createCallCounter, type GaugeProviders } from "../metrics/index.js";
import { type Classifier, createClassifier, type PolicyBook } from "../policy/index.js";
import { createSubreaper } from "../proc/index.js";
import { createConfirmGate, createRelay, type Gate, type Relay } from "../runner/index.js";
import { createMcpServer, type McpServerDeps } from "../server/index.js";
import { createSessionRegistry, type SessionRegistry } from "../sessions/index.js";
import {
  createForwardRegistry,
  createSshLayer,
  type ForwardRegistry,
  type SshService,
} from "../ssh/index.js";
import { createTerminalDirectory, type PgState } from "../state/index.js";
import {
  buildInstructions,
  buildOperatingGuide,
  createConsentActs,
  createSshResources,
  type RuntimeInfo,
} from "../tools/index.js";
import { type ConsoleApprovals, openConsent } from "./consent-wiring.js";
import { openPolicyBook } from "./policy-book.js";
import { packageVersion, readRuntimeInfo } from "./runtime.js";
import { openBroker, openPasskeyCounters, openSharedState } from "./state.js";
import { buildToolSet, lateExplainer } from "./tool-set.js";

export interface BuiltServer {
  server: Server;
  /** Settles when everything a call needs is loaded; rejects if that failed. */
  ready: Promise<void>;
  relay: Relay;
  audit: AuditLog;
  processes: ProcessRunner;
  metrics: CallCounter;
  /** Every policy in force and which one governs a host (docs/policy.md, "Policy per host and per tag"). */
  policies: PolicyBook;
  /** What the MCP server is built from; the HTTP edge builds one server per session from it. */
  mcp: McpServerDeps;
  /** Live values for the /metrics gauges, read at scrape time. */
  gauges: GaugeProviders;
  /** Pending consent requests now; null when consent is off or its store cannot be read. */
  consentPending(): Promise<number | null>;
  /** The consent store and passkey verifier the gate uses, for the console's approvals; null without both. */
  consentApprovals: ConsoleApprovals | null;
  /** The PostgreSQL state several relays share; null for a relay on its own files. */
  shared: PgState | null;
  /** The one store of passkey sign counters (console logins and consent approvals); null without passkeys. */
  passkeyCounters: PasskeyCounters | null;
  /** Every terminal of this server, for the console's sessions page. */
  sessions: SessionRegistry;
  /** Tear down everything the server owns: children, the audit file. */
  close(): void;
}

export interface BuildOptions {
  settings: Settings;
  /** The server's environment: the base of every child's environment. */
  env: Readonly<Record<string, string | undefined>>;
  logger: Logger;
  clock?: Clock;
  /**
   * Make this process the subreaper of what its terminal sessions detach
   * (ADR 0019). Only for a process that is the server and nothing else: an
   * embedding process (a test runner) would hand it orphans of its own.
   */
  adoptOrphans?: boolean;
}

/** Wire the whole server from settings. Used by serve and by --check-config. */
export async function buildServer(options: BuildOptions): Promise<BuiltServer> {
  const { settings, logger } = options;
  const clock = options.clock ?? systemClock;
  if (settings.traceFile !== "") enableStageTrace(stageTraceWriter(settings.traceFile, logger));
  const audit = openAudit(settings, clock);
  // Several relays share single-use state in PostgreSQL (docs/scaling.md); one keeps it in files.
  const shared = await openSharedState(settings, { logger, role: "relay" }).catch((err: unknown) => {
    audit.close();
    throw err;
  });
  // Children are started from a small helper process: forking this one costs several times more.
  const processes = createLauncherRunner({ clock, logger });
  const metrics = createCallCounter();
  const runtime = readRuntimeInfo();
  // Throws on a malformed inventory, so start-up fails (exit 2) instead of dialling alias names later.
  const ssh = openSsh(settings, options.env, runtime, clock);
  // Throws on a policy file or an inventory policy it cannot apply as written: start-up fails the same way.
  const policies = openPolicyBook(settings, ssh.directory);
  const { classifier, ready } = loadClassifier();
  const version = packageVersion();
  const terminals = await openTerminals(settings, shared, {
    clock,
    logger,
    adoptOrphans: options.adoptOrphans ?? false,
  });
  const { sessions } = terminals;
  // Forwards listen on 127.0.0.1 unless the operator allows every interface (ADR 0008).
  const forwards = createForwardRegistry(
    { maxForwards: settings.maxForwards, bindAny: settings.forwardBindAny },
    { directory: ssh.directory, pool: ssh.pool, ids: cryptoIds, logger },
  );
  // A gate exists where any policy in force asks for it; each call's own policy decides whether it applies.
  const broker = openBroker(
    settings,
    shared,
    clock,
    policies.all().some((p) => p.confirmTier3),
  );
  // One store of passkey sign counters for the console's logins and consent's passkey approvals.
  const counters = settings.consolePasskeys === "" ? null : openPasskeyCounters(settings, shared, clock);
  // Consent opens after the tools (its acts are found in them): server_info and the console ask at call time.
  const explainer = lateExplainer();
  const consentPending = async () => (await consent?.pending()) ?? null;
  const tools = buildToolSet({
    settings,
    baseEnv: options.env,
    clock,
    processes,
    ssh,
    sessions,
    reaper: terminals.reaper,
    forwards,
    audit,
    classifier,
    broker,
    version,
    runtime,
    consentPending,
    policies,
    explain: explainer.explain,
  });
  const gates: Gate[] = broker ? [createConfirmGate(broker)] : [];
  // Human consent exists only where a policy turns it on; it refuses to start on an unsafe anchor.
  const consent = policies.all().some((p) => p.consent)
    ? await openConsent(settings, {
        clock,
        shared,
        counters,
        actOf: createConsentActs(tools, {
          directory: ssh.directory,
          sessions,
          forwards,
          settings,
          cwd: process.cwd(),
        }),
      })
    : null;
  if (consent) gates.push(consent.gate);
  const relay = createRelay({ settings, classifier, audit, metrics, tools, gates, logger, policies });
  explainer.bind(relay);
  const mcp = mcpDepsOf(relay, { version, ready, processes, classifier, ssh, consent });
  return {
    server: createMcpServer(mcp),
    ready,
    relay,
    audit,
    processes,
    metrics,
    policies,
    mcp,
    gauges: {
      activeSessions: () => sessions.size,
      activeForwards: () => forwards.count(),
      auditDegraded: () => audit.status().degraded,
    },
    consentPending,
    consentApprovals: consent?.approvals ?? null,
    shared,
    passkeyCounters: counters,
    sessions,
    close: () => closeServer({ terminals, processes, forwards, ssh, consent, shared, audit }),
  };
}

function openSsh(
  settings: Settings,
  env: Readonly<Record<string, string | undefined>>,
  runtime: RuntimeInfo,
  clock: Clock,
): SshService {
  return createSshLayer(settings, {
    clock,
    home: env.HOME || homedir(),
    localUser: env.USER || runtime.user || "root",
    agentSocket: env.SSH_AUTH_SOCK ?? "",
    cwd: process.cwd(),
  });
}

/**
 * The classifier and `ready`, which settles once it has loaded. The shell parser (a wasm module)
 * loads while the transport starts; calls wait for it at the MCP edge (`ready`), so start-up to
 * `initialize` does not pay for it.
 */
function loadClassifier(): { classifier: Classifier; ready: Promise<void> } {
  const loading = createClassifier();
  return { classifier: deferredClassifier(loading), ready: loading.then(() => undefined) };
}

/**
 * What the MCP server is built from: the relay, the instructions and guide for the tools it
 * registered, the SSH resources, and the warm-up after the handshake.
 */
function mcpDepsOf(
  relay: Relay,
  parts: {
    version: string;
    ready: Promise<void>;
    processes: LauncherRunner;
    classifier: Classifier;
    ssh: SshService;
    consent: { endSession(session: string): Promise<void> } | null;
  },
): McpServerDeps {
  const { ready, processes, classifier, consent } = parts;
  const registered = new Set(relay.tools.map((t) => t.name));
  return {
    relay,
    version: parts.version,
    instructions: buildInstructions(registered),
    operatingGuide: buildOperatingGuide(registered),
    resources: createSshResources(parts.ssh.directory),
    ready,
    onInitialized: () => warmUp(processes, classifier, ready, relay),
    ...(consent ? { onSessionEnd: consent.endSession } : {}),
  };
}

function openAudit(settings: Settings, clock: Clock): AuditLog {
  return createAuditLog(
    {
      path: settings.auditPath,
      format: settings.auditFormat,
      chain: settings.auditChain,
      stderrEcho: settings.auditStderr,
      instance: settings.instance,
    },
    { clock },
  );
}

/**
 * The terminal sessions: their registry, the subreaper of what they detach,
 * and, where several relays share a state, the directory of which relay holds
 * which terminal, started before the first session is added.
 */
async function openTerminals(
  settings: Settings,
  shared: PgState | null,
  deps: { clock: Clock; logger: Logger; adoptOrphans: boolean },
) {
  const { clock, logger } = deps;
  // Terminal sessions are forked here, so what they detach is reparented here, and reaped here.
  const reaper = createSubreaper({ adopt: deps.adoptOrphans, lazy: true, reapOnChildExit: true });
  // Which relay holds which terminal, for the others to list and to name (docs/scaling.md).
  const directory = shared ? createTerminalDirectory(shared, { clock, logger }) : null;
  await directory?.start();
  const sessions = createSessionRegistry(
    {
      maxSessions: settings.maxSessions,
      idleTimeoutMs: settings.sessionIdleTimeout * 1000,
      lifetimeMs: settings.sessionLifetime * 1000,
      bufferBytes: settings.sessionBufferBytes,
      recordDir: settings.sessionRecordDir,
      recordInput: settings.sessionRecordInput,
      instance: settings.instance,
      ...(directory ? { directory } : {}),
    },
    { clock, ids: cryptoIds, logger },
  );
  return { reaper, directory, sessions };
}

/** What the server owns and ends when it closes. */
interface Owned {
  terminals: Awaited<ReturnType<typeof openTerminals>>;
  processes: LauncherRunner;
  forwards: ForwardRegistry;
  ssh: SshService;
  consent: { close(): Promise<void> } | null;
  shared: PgState | null;
  audit: AuditLog;
}

/** Tear down everything the server owns: children, connections, stores, the audit file. */
function closeServer({ terminals, processes, forwards, ssh, consent, shared, audit }: Owned): void {
  // Every session's processes die with the server (SIGINT, SIGTERM, end of stdin all come here).
  terminals.sessions.closeAll();
  // Orphans no session could be sure of, kept alive until now.
  terminals.reaper.killStrays();
  processes.killAll();
  processes.close();
  // Listeners go before the connections they ride on.
  forwards.closeAll();
  ssh.close();
  // Neither store nor pool rejects; the connections end after the calls still on them.
  void (async () => {
    await consent?.close();
    await terminals.directory?.close();
    await shared?.close();
  })();
  audit.close();
}

/**
 * A classifier that answers once the real one has loaded. The MCP edge holds
 * every call until then; should one slip through, it is treated as unseen
 * input, the highest tier, never a lower one.
 */
function deferredClassifier(loading: Promise<Classifier>): Classifier {
  let loaded: Classifier | null = null;
  loading.then(
    (c) => {
      loaded = c;
    },
    () => undefined, // reported through `ready`
  );
  return {
    classify(text, options) {
      return loaded ? loaded.classify(text, options) : { tier: 3, basis: "default", part: "" };
    },
  };
}

/**
 * One JSON line per traced call, appended after the call's result was
 * produced: the benchmark reads them for its per-stage breakdown. A write
 * that fails is logged once and the trace is dropped, never the call.
 */
function stageTraceWriter(path: string, logger: Logger): (record: StageRecord) => void {
  let failed = false;
  return (record) => {
    if (failed) return;
    try {
      appendFileSync(path, `${JSON.stringify(record)}\n`, { mode: 0o600 });
    } catch (err) {
      failed = true;
      logger.warn({ err: String(err), path }, "stage trace file cannot be written; tracing stops");
    }
  };
}

/**
 * After the handshake, start what the first call would otherwise pay for:
 * the process launcher (a fork and its module load) and the parser's first
 * pass through its grammar (once the wasm module has loaded). Neither is on
 * the path to `initialized`, and a failure here surfaces on the first call.
 */
function warmUp(processes: LauncherRunner, classifier: Classifier, ready: Promise<void>, relay: Relay): void {
  processes.prestart();
  ready.then(
    () => {
      classifier.classify("cd /tmp && ls -l | grep -v x > out.txt");
      // Validation, redaction, the lists and the audit's room, compiled before the first call.
      relay.rehearse("shell_exec", { command: "true" });
    },
    () => undefined, // reported by whoever awaits `ready`
  );
}
