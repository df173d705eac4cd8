import { RelayError } from "../core/index.js";
import { annotationsFor, commandOutcome, defineTool, type Tool } from "../runner/index.js";
import { type BindContext, sha256, sshTarget } from "./consent-bindings.js";
import { clampTimeout } from "./shell.js";
import {
  CONNECTION_PARAMS,
  CONNECTION_RESULT_FIELDS,
  callHost,
  connectionAudit,
  connectionFields,
  HOST_PARAM,
  REMOTE_COMMAND_TIER,
  remoteProgram,
  type SshToolDeps,
  sshProbe,
  sshTargets,
  toOverrides,
} from "./ssh-common.js";
import { createSshFleetTools } from "./ssh-fleet.js";
import { createSshInventoryTools } from "./ssh-inventory.js";

export function createSshTools(deps: SshToolDeps): Tool[] {
  const { settings, ssh } = deps;

  const sshExec = defineTool({
    name: "ssh_exec",
    title: "Run a command on an SSH host",
    description:
      "Run one non-interactive command on a remote host over SSH (a pooled connection) and return `[exit N]` " +
      "and its output, stdout and stderr merged in arrival order, when it runs and exits. The command goes to " +
      "the remote login shell verbatim. For many hosts at once use ssh_fanout; for a tty, a prompt or anything " +
      "that keeps running use ssh_spawn.",
    params: {
      host: HOST_PARAM,
      command: { type: "string", description: "command line for the remote shell", noNul: true },
      timeout: {
        type: "integer",
        description:
          "seconds for connect + run (default RELAY_SHELL_DEFAULT_TIMEOUT, max RELAY_SHELL_MAX_TIMEOUT)",
        optional: true,
      },
      ...CONNECTION_PARAMS,
    },
    tier: REMOTE_COMMAND_TIER,
    programInput: (a) => remoteProgram(a.command),
    annotations: annotationsFor(REMOTE_COMMAND_TIER, { openWorld: true }),
    resultFields: {
      duration_ms: { type: "number", description: "wall time including connecting" },
      output_bytes: { type: "integer", description: "bytes the remote command wrote in all" },
      ...CONNECTION_RESULT_FIELDS,
    },
    budget: () => 65536,
    policyText: (a) => sshProbe(ssh, `${a.command}\n${a.host}`, [a.host], a.jump),
    targets: (a) => sshTargets(ssh, a.host, a),
    hosts: (a) => [callHost(ssh, a.host, a)],
    auditArgs: (a) => ({
      host: a.host,
      command: a.command,
      timeout: clampTimeout(a.timeout ?? settings.defaultTimeout, settings),
      ...connectionAudit(ssh, a.host, a),
    }),
    // A verify/rollback step runs on the same host as the same user, port, key, jump and host-key mode.
    followUp: (a, command) => ({ ...a, command }),
    act: (a, { deps }: BindContext) => ({
      ...sshTarget(deps, a.host, toOverrides(a)),
      command: a.command,
      command_sha256: sha256(a.command),
    }),
    async run(a, ctx) {
      if (a.command.trim() === "") throw RelayError.untyped("empty command");
      const timeout = clampTimeout(a.timeout ?? settings.defaultTimeout, settings);
      const result = await ssh.run({
        host: a.host,
        overrides: toOverrides(a),
        command: a.command,
        timeoutSeconds: timeout,
        maxBufferBytes: settings.maxOutputHard,
        signal: ctx.signal,
      });
      const fields = {
        duration_ms: Math.round(result.durationMs),
        output_bytes: result.totalBytes,
        ...connectionFields(result),
      };
      return commandOutcome(result, timeout, fields);
    },
  });

  return [sshExec, ...createSshFleetTools(deps), ...createSshInventoryTools(deps)];
}
