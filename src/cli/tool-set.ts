import type { AuditLog } from "../audit/index.js";
import type { ConfirmBroker } from "../broker/index.js";
import type { Settings } from "../config/index.js";
import type { Clock } from "../core/index.js";
import type { ProcessRunner } from "../exec/index.js";
import type { Classifier, PolicyBook } from "../policy/index.js";
import { createFollowUpVetter, type Relay, type Tool } from "../runner/index.js";
import type { DescendantReaper, SessionRegistry } from "../sessions/index.js";
import type { ForwardRegistry, SshService } from "../ssh/index.js";
import {
  createConfirmTool,
  createDiagnosticsTools,
  createInfraTools,
  createPolicyExplainTool,
  createSessionTools,
  createShellTools,
  createSshForwardTools,
  createSshSpawnTools,
  createSshTools,
  createSshTransferTools,
  type ExplainCall,
  type RuntimeInfo,
} from "../tools/index.js";

/** What the tools of one relay are built on: the parts buildServer has opened before them. */
export interface ToolSetDeps {
  settings: Settings;
  /** The server's environment: the base of every child's environment. */
  baseEnv: Readonly<Record<string, string | undefined>>;
  clock: Clock;
  processes: ProcessRunner;
  ssh: SshService;
  sessions: SessionRegistry;
  /** Catches what a terminal's processes detach (ADR 0019). */
  reaper: DescendantReaper;
  forwards: ForwardRegistry;
  audit: AuditLog;
  classifier: Classifier;
  /** The Tier-3 confirmation broker, or null when the operator left it off. */
  broker: ConfirmBroker | null;
  version: string;
  runtime: RuntimeInfo;
  /**
   * Consent requests waiting for a human. Consent is opened after the tools
   * (its acts are found in this list), so server_info asks through this
   * function, at call time.
   */
  consentPending(): Promise<number | null>;
  /** The policies in force: a verify or rollback command is vetted under them like any call. */
  policies: PolicyBook;
  /** The runner's policy_explain answer; the runner is built from these tools, so it is reached late. */
  explain: ExplainCall;
}

/**
 * policy_explain's way to the runner, which is built from the tools and so
 * exists only after them: the tool asks through `explain`, bound once the runner is.
 */
export function lateExplainer(): { explain: ExplainCall; bind(relay: Relay): void } {
  let relay: Relay | null = null;
  return {
    explain: (tool, args, scope) => {
      if (!relay) throw new Error("the runner is not built yet");
      return relay.explain(tool, args, scope);
    },
    bind: (built) => {
      relay = built;
    },
  };
}

/**
 * Every tool this relay serves, in the order tools/list shows them: the
 * local and SSH tools, the diagnostics, the INFRA-1 broker's tools where the
 * operator named its socket, and operation_confirm last, since arming checks
 * a verify/rollback command against the same admission as a call of the
 * planned tool, so against every tool before it.
 */
export function buildToolSet(deps: ToolSetDeps): Tool[] {
  const { settings, ssh, broker, baseEnv } = deps;
  // Typed here: the consent acts are found in this list.
  const tools: Tool[] = [
    ...createShellTools({ settings, processes: deps.processes, baseEnv }),
    ...createSessionTools({ settings, sessions: deps.sessions, baseEnv, reaper: deps.reaper }),
    ...createSshTools({ settings, ssh, processes: deps.processes, baseEnv }),
    ...createSshSpawnTools({ settings, ssh, sessions: deps.sessions }),
    ...createSshTransferTools({ settings, ssh, clock: deps.clock }),
    ...createSshForwardTools({ ssh, forwards: deps.forwards, bindAny: settings.forwardBindAny }),
    ...createDiagnosticsTools({
      settings,
      audit: deps.audit,
      version: deps.version,
      runtime: deps.runtime,
      policies: deps.policies.all(),
      live: {
        inventoryHosts: () => ssh.directory.list().length,
        confirmPending: async () => (await broker?.pending()) ?? 0,
        consentPending: deps.consentPending,
      },
    }),
    createPolicyExplainTool({ settings, explain: deps.explain }),
  ];
  // The INFRA-1 broker's tools exist only where the operator named its socket.
  if (settings.infraSocket !== "") {
    tools.push(
      ...createInfraTools({
        socketPath: settings.infraSocket,
        maxTimeoutSeconds: settings.maxTimeout,
        maxOutput: settings.maxOutput,
      }),
    );
  }
  const vetFollowUp = createFollowUpVetter({
    settings,
    classifier: deps.classifier,
    audit: deps.audit,
    policies: deps.policies,
    tools: [...tools],
  });
  tools.push(createConfirmTool({ broker, vetFollowUp }));
  return tools;
}
