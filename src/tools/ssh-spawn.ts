import type { Settings } from "../config/index.js";
import { annotationsFor, defineTool, type Tool } from "../runner/index.js";
import { clampTerminalSize, type SessionRegistry } from "../sessions/index.js";
import { openSshPty, type SshService } from "../ssh/index.js";
import { type BindContext, sha256, sshTarget } from "./consent-bindings.js";
import { SESSION_RESULT_FIELDS } from "./sessions.js";
import {
  CONNECTION_PARAMS,
  CONNECTION_RESULT_FIELDS,
  callHost,
  connectionAudit,
  connectionFields,
  HOST_PARAM,
  REMOTE_TERMINAL_TIER,
  remoteProgram,
  sshProbe,
  sshTargets,
  toOverrides,
} from "./ssh-common.js";

export interface SshSpawnToolDeps {
  settings: Settings;
  ssh: SshService;
  sessions: SessionRegistry;
}

export function createSshSpawnTools(deps: SshSpawnToolDeps): Tool[] {
  const { settings, ssh, sessions } = deps;

  const sshSpawn = defineTool({
    name: "ssh_spawn",
    title: "Start a terminal session on an SSH host",
    description:
      "Open a PTY (xterm-256color) on a remote host over SSH and return a session id: the login shell by " +
      "default, or a command such as top, a REPL or anything that prompts or keeps running. Drive it with " +
      "session_send and session_recv like a local session; end it with session_kill. For a command that runs " +
      "and exits, use ssh_exec.",
    params: {
      host: HOST_PARAM,
      command: {
        type: "string",
        description: "command for the remote shell to run on the terminal; empty = the login shell",
        default: "",
        noNul: true,
      },
      cols: { type: "integer", description: "terminal width, clamped to 1..1000", default: 120 },
      rows: { type: "integer", description: "terminal height, clamped to 1..1000", default: 40 },
      ...CONNECTION_PARAMS,
    },
    tier: REMOTE_TERMINAL_TIER,
    // The command alone is judged (no command is the login shell); the host line is for the deny list.
    programInput: (a) => remoteProgram(a.command),
    annotations: annotationsFor(REMOTE_TERMINAL_TIER, { openWorld: true }),
    resultFields: {
      ...SESSION_RESULT_FIELDS,
      ...CONNECTION_RESULT_FIELDS,
    },
    budget: () => 4096,
    policyText: (a) => sshProbe(ssh, `${a.command}\n${a.host}`, [a.host], a.jump),
    targets: (a) => sshTargets(ssh, a.host, a),
    hosts: (a) => [callHost(ssh, a.host, a)],
    auditArgs: (a) => {
      const size = clampTerminalSize(a.cols, a.rows);
      return {
        host: a.host,
        command: a.command.trim() === "" ? "shell" : a.command,
        size: `${size.cols}x${size.rows}`,
        ...connectionAudit(ssh, a.host, a),
      };
    },
    // The terminal's size only shapes the screen: left out.
    act: (a, { deps }: BindContext) => {
      // Blank is the login shell, as the tool runs it.
      const command = a.command.trim() === "" ? "" : a.command;
      return { ...sshTarget(deps, a.host, toOverrides(a)), command, command_sha256: sha256(command) };
    },
    async run(a, ctx) {
      const size = clampTerminalSize(a.cols, a.rows);
      // Blank means the login shell: an exec request of spaces would run no terminal program at all.
      const command = a.command.trim() === "" ? "" : a.command;
      const target = ssh.directory.resolve(a.host, toOverrides(a));
      // Refuse before dialling when every session slot is taken.
      sessions.assertCapacity();
      const opened = await openSshPty(ssh.pool, target, {
        command,
        cols: size.cols,
        rows: size.rows,
        openTimeoutMs: settings.sshConnectTimeout * 1000,
        signal: ctx.signal,
      });
      const added = await sessions.add({
        kind: "ssh",
        title: command === "" ? `ssh ${a.host}` : `ssh ${a.host} ${command}`,
        owner: ctx.clientId,
        cols: size.cols,
        rows: size.rows,
        transport: opened.transport,
      });
      return {
        body: `session ${added.id} started (ssh ${a.host}); use session_recv/session_send`,
        fields: {
          session_id: added.id,
          recording: added.recording,
          ...connectionFields(opened),
        },
      };
    },
  });

  return [sshSpawn];
}
