import type { Settings } from "../config/index.js";
import { type Clock, RelayError } from "../core/index.js";
import { annotationsFor, defineTool, type Tool, type ToolOutcome } from "../runner/index.js";
import { type SshService, type TransferDirection, transferFiles } from "../ssh/index.js";
import {
  type BindContext,
  type Bound,
  type ConsentActsDeps,
  localPath,
  physicalPath,
  sshTarget,
} from "./consent-bindings.js";
import { localContent } from "./consent-content.js";
import { clampTimeout } from "./shell.js";
import {
  CONNECTION_PARAMS,
  CONNECTION_RESULT_FIELDS,
  type ConnectionArgs,
  callHost,
  connectionAudit,
  connectionFields,
  HOST_PARAM,
  MUTATING_TIER,
  sshProbe,
  sshTargets,
  toOverrides,
} from "./ssh-common.js";
import { localPathTargets, remotePathTargets } from "./targets.js";

export interface SshTransferToolDeps {
  settings: Settings;
  ssh: SshService;
  clock: Clock;
}

/** 0 (or less) = no cap of the call's own (the server's RELAY_SHELL_MAX_TIMEOUT still applies); otherwise clamp_timeout. */
function transferTimeout(timeout: number, settings: Settings): number {
  return timeout > 0 ? clampTimeout(timeout, settings) : 0;
}

function requirePath(value: string, name: string): void {
  if (value === "") throw new RelayError("ValueError", `${name} is empty`);
}

interface TransferArgs extends ConnectionArgs {
  host: string;
  local_path: string;
  remote_path: string;
  recursive: boolean;
}

/** Where the transfer reads and writes; an empty path names no act, as the tool refuses it before dialling. */
function transferTarget(a: TransferArgs, deps: ConsentActsDeps): Bound {
  const target = sshTarget(deps, a.host, toOverrides(a));
  requirePath(a.local_path, "local_path");
  requirePath(a.remote_path, "remote_path");
  return target;
}

/** An upload binds what it will send: the content of the local file or tree, read as the transfer reads it. */
async function uploadAct(a: TransferArgs, { deps }: BindContext): Promise<Bound> {
  const target = transferTarget(a, deps);
  const local = localPath(deps, a.local_path);
  return {
    ...target,
    local_path: local,
    remote_path: a.remote_path,
    recursive: a.recursive,
    content: await localContent(local, a.recursive, {
      maxBytes: deps.settings.transferMaxBytes,
      maxEntries: deps.settings.transferMaxEntries,
    }),
  };
}

/**
 * A download binds where it reads and where it writes, not what it brings:
 * the remote content is not known before it is read, and reading it first
 * would be a second transfer the human did not ask for.
 */
function downloadAct(a: TransferArgs, { deps }: BindContext): Bound {
  const target = transferTarget(a, deps);
  return {
    ...target,
    remote_path: a.remote_path,
    local_path: physicalPath(deps, a.local_path),
    recursive: a.recursive,
  };
}

/** `<local> -> <host>:<remote>` or `<host>:<remote> -> <local>`, the host as given. */
function route(upload: boolean, a: { host: string; local_path: string; remote_path: string }): string {
  return upload
    ? `${a.local_path} -> ${a.host}:${a.remote_path}`
    : `${a.host}:${a.remote_path} -> ${a.local_path}`;
}

/** The two path parameters, each described as the direction uses it. */
function pathParams(upload: boolean) {
  const local = {
    type: "string",
    description: upload
      ? "file or directory on the relay host to copy (relative to the server's working directory)"
      : "where to write on the relay host; an existing directory receives the copy under the source's name",
    noNul: true,
  } as const;
  const remote = {
    type: "string",
    description: upload
      ? "where to write on the remote host (relative paths start at the login directory); an existing " +
        "directory receives the copy under the source's name"
      : "file or directory on the remote host to copy (relative paths start at the login directory)",
    noNul: true,
  } as const;
  // The contract's order: upload names local then remote, download remote then local.
  return upload ? { local_path: local, remote_path: remote } : { remote_path: remote, local_path: local };
}

const TRANSFER_RESULT_FIELDS = {
  files: { type: "integer", description: "regular files copied" },
  bytes: { type: "integer", description: "file content bytes moved" },
  directories: { type: "integer", description: "directories created or merged into" },
  symlinks: { type: "integer", description: "symlinks recreated (never followed)" },
  skipped: {
    type: "array",
    description:
      "not copied: sockets, FIFOs and devices in the tree, and entries whose names or link targets " +
      "cannot be written here (control characters shown as \\xNN)",
  },
  destination: {
    type: "string",
    description: "the path written (the source's name inside a directory)",
  },
  duration_ms: { type: "number", description: "wall time including connecting" },
  ...CONNECTION_RESULT_FIELDS,
};

/** One transfer, run: the call's arguments after admission, the outcome with the fields it reports. */
async function runTransfer(
  { settings, ssh, clock }: SshTransferToolDeps,
  direction: TransferDirection,
  a: TransferArgs & { timeout: number },
  signal: AbortSignal,
): Promise<ToolOutcome> {
  requirePath(a.local_path, "local_path");
  requirePath(a.remote_path, "remote_path");
  const timeout = transferTimeout(a.timeout, settings);
  const target = ssh.directory.resolve(a.host, toOverrides(a));
  const result = await transferFiles(
    { pool: ssh.pool, clock },
    {
      direction,
      target,
      host: a.host,
      localPath: a.local_path,
      remotePath: a.remote_path,
      recursive: a.recursive,
      // timeout=0 leaves the call without a cap of its own, never without one at all.
      timeoutMs: (timeout > 0 ? timeout : settings.maxTimeout) * 1000,
      limits: { maxBytes: settings.transferMaxBytes, maxEntries: settings.transferMaxEntries },
      signal,
    },
  );
  const fields = {
    files: result.files,
    bytes: result.bytes,
    directories: result.directories,
    symlinks: result.symlinks,
    skipped: result.skipped,
    destination: result.destination,
    duration_ms: Math.round(result.durationMs),
    ...connectionFields(result),
  };
  const upload = direction === "upload";
  if (result.timedOut) {
    return {
      body: "",
      timedOutAfter: timeout > 0 ? timeout : settings.maxTimeout,
      timeoutSuffix: `partial ${direction} ${route(upload, a)}`,
      fields,
    };
  }
  return { body: `${upload ? "uploaded" : "downloaded"} ${route(upload, a)}`, fields };
}

export function createSshTransferTools(deps: SshTransferToolDeps): Tool[] {
  return [transferTool(deps, "upload"), transferTool(deps, "download")];
}

function transferTool(deps: SshTransferToolDeps, direction: TransferDirection): Tool {
  const { settings, ssh } = deps;
  const upload = direction === "upload";
  return defineTool({
    name: upload ? "ssh_upload" : "ssh_download",
    title: upload ? "Copy files to an SSH host" : "Copy files from an SSH host",
    description: upload
      ? "Copy a local file, or with recursive=true a directory tree, to a remote host over SFTP, keeping " +
        "permission bits and modification times. Symlinks inside a tree are copied as links, never followed, " +
        "and a symlink already on the remote side where a file or directory is to be written is refused. " +
        "For the other direction use ssh_download."
      : "Copy a remote file, or with recursive=true a directory tree, to the relay host over SFTP, keeping " +
        "permission bits and modification times. Symlinks inside a tree are copied as links, never followed. " +
        "For the other direction use ssh_upload.",
    params: {
      host: HOST_PARAM,
      ...pathParams(upload),
      recursive: { type: "boolean", description: "copy a directory tree", default: false },
      timeout: {
        type: "integer",
        description:
          "seconds for the whole transfer, connecting included; 0 = RELAY_SHELL_MAX_TIMEOUT (every transfer " +
          "is also bounded by RELAY_SHELL_TRANSFER_MAX_BYTES and RELAY_SHELL_TRANSFER_MAX_ENTRIES)",
        default: 0,
      },
      ...CONNECTION_PARAMS,
    },
    tier: MUTATING_TIER,
    annotations: annotationsFor(MUTATING_TIER, { openWorld: true }),
    resultFields: TRANSFER_RESULT_FIELDS,
    budget: () => 2048,
    policyText: (a) =>
      sshProbe(
        ssh,
        upload
          ? `upload ${a.local_path} ${a.host}:${a.remote_path}`
          : `download ${a.host}:${a.remote_path} ${a.local_path}`,
        [a.host],
        a.jump,
      ),
    hosts: (a) => [callHost(ssh, a.host, a)],
    targets: (a) => [
      ...sshTargets(ssh, a.host, a),
      ...localPathTargets("local", a.local_path),
      ...remotePathTargets(a.remote_path),
    ],
    auditArgs: (a) => ({
      host: a.host,
      local: a.local_path,
      remote: a.remote_path,
      recursive: a.recursive,
      timeout: transferTimeout(a.timeout, settings),
      ...connectionAudit(ssh, a.host, a),
    }),
    // The timeout only bounds the act.
    act: upload ? uploadAct : downloadAct,
    run: (a, ctx) => runTransfer(deps, direction, a, ctx.signal),
  });
}
