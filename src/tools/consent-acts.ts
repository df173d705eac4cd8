import { z } from "zod";
import type { ConsentAct } from "../consent/index.js";
import { canonicalJson, describeError } from "../core/index.js";
import { splitHostList } from "../policy/index.js";
import { clampTerminalSize, resolveSignalName } from "../sessions/index.js";
import { parseForwardSpec } from "../ssh/index.js";
import {
  type ActCall,
  type BindContext,
  type Bound,
  CONNECTION,
  type ConsentActsDeps,
  canonicalSpec,
  digestOrNull,
  envBinding,
  localPath,
  overridesOf,
  physicalPath,
  requirePaths,
  sessionBinding,
  sessionOf,
  sha256,
  sshTarget,
  Unbindable,
} from "./consent-bindings.js";
import { localContent } from "./consent-content.js";
import { argvOf } from "./sessions.js";
import { interpreterOf } from "./shell.js";
import { validateKeyscan } from "./ssh-inventory.js";

export type ActResult = { ok: true; act: ConsentAct } | { ok: false; reason: string };

/** The act of a validated call of `tool` (its arguments as the tool's parser returned them). */
export type ConsentActs = (tool: string, args: unknown, call: ActCall) => Promise<ActResult>;

interface ActEntry {
  /** The arguments that decide what the act does; anything else the tool takes is left out. */
  readonly args: z.ZodType;
  bind(args: unknown, ctx: BindContext): Bound | Promise<Bound>;
}

/** A table row: the consequential arguments' shape, and how they become bound values. */
function entry<S extends z.ZodType>(
  args: S,
  bind: (a: z.infer<S>, ctx: BindContext) => Bound | Promise<Bound>,
): ActEntry {
  return { args, bind: (a, ctx) => bind(a as z.infer<S>, ctx) };
}

/** Sorted, so the order hosts were typed in is not a new act; a host named twice runs twice, so it stays twice. */
function sortedTargets<T>(targets: readonly T[]): T[] {
  return targets
    .map((t) => ({ key: canonicalJson(t), t }))
    .sort((x, y) => (x.key < y.key ? -1 : x.key > y.key ? 1 : 0))
    .map(({ t }) => t);
}

/** `operation`, `profile`, `run_id`, `idempotency_key`: exactly these, for every INFRA tool (the daemon checks them). */
function infraEntry(operation: "probe" | "rsync-dry-run" | "replicate" | "verify"): ActEntry {
  return entry(
    z.object({
      profile: z.string(),
      run_id: z.string().optional(),
      idempotency_key: z.string().optional(),
    }),
    (a) => ({
      operation,
      profile: a.profile,
      run_id: a.run_id ?? null,
      idempotency_key: a.idempotency_key ?? null,
    }),
  );
}

/**
 * The consequential arguments of every tool whose tier can be above 0: what
 * a human approves and what an approval is bound to (docs/consent.md). A
 * value here changes what the act does; what only changes how long the
 * relay waits or how much output it keeps does not, and is left out so that
 * re-issuing a call with a longer timeout or a larger output budget is still
 * the approved act: `timeout`, `max_output`, `merge_stderr`, a terminal's
 * size at spawn, a fan-out's concurrency, `max_bytes`. Each entry reads the
 * tool's validated arguments; a tool without an entry cannot be approved.
 */
const TABLE: Record<string, ActEntry> = {
  shell_exec: entry(
    z.object({
      command: z.string(),
      cwd: z.string(),
      stdin: z.string(),
      use_shell: z.boolean(),
      env_json: z.string(),
    }),
    (a, { deps }) => ({
      command: a.command,
      command_sha256: sha256(a.command),
      // false: the command is split into words and run without a shell.
      use_shell: a.use_shell,
      stdin_sha256: digestOrNull(a.stdin),
      ...envBinding(a.env_json),
      cwd: physicalPath(deps, a.cwd),
    }),
  ),
  shell_script: entry(
    z.object({
      script: z.string(),
      interpreter: z.string(),
      strict: z.boolean(),
      cwd: z.string(),
      env_json: z.string(),
    }),
    (a, { deps }) => {
      const interpreter = interpreterOf(a.interpreter);
      if (!interpreter) throw new Unbindable(`unsupported interpreter: ${a.interpreter}`);
      return {
        script: a.script,
        script_sha256: sha256(a.script),
        // The program that reads the script, as it will be started.
        interpreter: interpreter.argv.join(" "),
        // Strict mode changes what a failing line does; python has none.
        strict: a.strict && interpreter.strictPrefix !== "",
        ...envBinding(a.env_json),
        cwd: physicalPath(deps, a.cwd),
      };
    },
  ),
  shell_spawn: entry(
    z.object({ command: z.string(), cwd: z.string(), env_json: z.string() }),
    (a, { deps }) => {
      const argv = argvOf(a.command);
      const command = a.command.trim() === "" ? argv.join(" ") : a.command;
      return {
        command,
        command_sha256: sha256(command),
        argv,
        ...envBinding(a.env_json),
        cwd: physicalPath(deps, a.cwd),
      };
    },
  ),
  session_send: entry(
    z.object({ session_id: z.string(), data: z.string(), enter: z.boolean() }),
    (a, ctx) => ({
      ...sessionBinding(sessionOf(ctx, a.session_id, true)),
      text: a.data,
      text_sha256: sha256(a.data),
      // Whether the line is entered: the same text without it runs nothing yet.
      enter: a.enter,
    }),
  ),
  session_resize: entry(
    z.object({ session_id: z.string(), cols: z.number().int(), rows: z.number().int() }),
    (a, ctx) => {
      const size = clampTerminalSize(a.cols, a.rows);
      return { ...sessionBinding(sessionOf(ctx, a.session_id, true)), cols: size.cols, rows: size.rows };
    },
  ),
  session_kill: entry(
    z.object({ session_id: z.string(), signal_name: z.string(), close: z.boolean() }),
    (a, ctx) => ({
      ...sessionBinding(sessionOf(ctx, a.session_id, false)),
      // The signal that will really be sent: `int`, `SIGINT` and `2` are one act.
      signal: resolveSignalName(a.signal_name),
      close: a.close,
    }),
  ),
  ssh_exec: entry(z.object({ ...CONNECTION, command: z.string() }), (a, { deps }) => ({
    ...sshTarget(deps, a.host, overridesOf(a)),
    command: a.command,
    command_sha256: sha256(a.command),
  })),
  ssh_spawn: entry(z.object({ ...CONNECTION, command: z.string() }), (a, { deps }) => {
    // Blank is the login shell, as the tool runs it.
    const command = a.command.trim() === "" ? "" : a.command;
    return { ...sshTarget(deps, a.host, overridesOf(a)), command, command_sha256: sha256(command) };
  }),
  ssh_fanout: entry(z.object({ command: z.string(), hosts: z.string() }), (a, { deps }) => {
    const names = a.hosts.trim() === "" ? deps.directory.names() : splitHostList(a.hosts);
    if (names.length === 0) throw new Unbindable("no hosts: pass hosts= or add an inventory");
    const hosts = sortedTargets(names.map((name) => sshTarget(deps, name, {})));
    return { hosts, command: a.command, command_sha256: sha256(a.command) };
  }),
  // Tier 1 only when it names a host outside the inventory: the hosts it will dial are the act.
  ssh_check: entry(z.object({ hosts: z.string() }), (a, { deps }) => {
    const names = a.hosts.trim() === "" ? deps.directory.names() : splitHostList(a.hosts);
    if (names.length === 0) throw new Unbindable("no hosts: pass hosts= or add an inventory");
    return { hosts: sortedTargets(names.map((name) => sshTarget(deps, name, {}))) };
  }),
  ssh_keyscan: entry(z.object({ hosts: z.string(), port: z.number().int(), key_types: z.string() }), (a) => {
    // The tool's own checks: what would be refused when it runs cannot be approved either.
    const checked = validateKeyscan(a.hosts, a.port, a.key_types);
    if ("body" in checked) throw new Unbindable("no hosts to scan");
    return { hosts: [...checked.hosts].sort(), port: a.port, key_types: [...checked.types].sort() };
  }),
  ssh_upload: entry(
    z.object({ ...CONNECTION, local_path: z.string(), remote_path: z.string(), recursive: z.boolean() }),
    async (a, { deps }) => {
      const target = sshTarget(deps, a.host, overridesOf(a));
      requirePaths(a);
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
    },
  ),
  // A download binds where it reads and where it writes, not what it brings: the remote content is
  // not known before it is read, and reading it first would be a second transfer the human did not ask for.
  ssh_download: entry(
    z.object({ ...CONNECTION, remote_path: z.string(), local_path: z.string(), recursive: z.boolean() }),
    (a, { deps }) => {
      const target = sshTarget(deps, a.host, overridesOf(a));
      requirePaths(a);
      return {
        ...target,
        remote_path: a.remote_path,
        local_path: physicalPath(deps, a.local_path),
        recursive: a.recursive,
      };
    },
  ),
  ssh_forward: entry(z.object({ ...CONNECTION, spec: z.string() }), (a, { deps }) => {
    const spec = parseForwardSpec(a.spec);
    return {
      ...sshTarget(deps, a.host, overridesOf(a)),
      kind: spec.kind,
      spec: canonicalSpec(spec),
      bind_address: deps.settings.forwardBindAny ? "*" : "127.0.0.1",
      listen_port: spec.listenPort,
      destination: spec.dest === null ? null : { host: spec.dest.host, port: spec.dest.port },
    };
  }),
  ssh_forward_close: entry(z.object({ forward_id: z.string() }), (a, { deps, call }) => {
    const row = deps.forwards.list(call.clientId).find((f) => f.id === a.forward_id);
    if (row === undefined) throw new Unbindable(`no forward ${JSON.stringify(a.forward_id)} for this client`);
    return {
      forward_id: row.id,
      owner: row.owner,
      host: row.host,
      kind: row.kind,
      spec: row.spec,
      bind_address: row.listen_host,
      listen_port: row.listen_port,
    };
  }),
  infra_probe: infraEntry("probe"),
  infra_rsync_dry_run: infraEntry("rsync-dry-run"),
  infra_replicate: infraEntry("replicate"),
  infra_verify: infraEntry("verify"),
};

/** The tools the table describes. */
export const CONSENT_ACT_TOOLS: readonly string[] = Object.freeze(Object.keys(TABLE).sort());

/**
 * The act of one call, from the table above: the tool, the tier the caller
 * passes in, and the bound arguments, resolved against the live directory,
 * sessions and files the tool itself will use. Never a blank act: a tool the
 * table does not know, arguments not of the tool's shape, a host that does
 * not resolve, a session or forward the caller cannot use, a file that
 * cannot be read or is over the transfer bounds, each is `ok: false` with
 * the reason. Never throws.
 */
export function createConsentActs(deps: ConsentActsDeps): ConsentActs {
  return async (tool, args, call) => {
    if (!Object.hasOwn(TABLE, tool)) {
      return { ok: false, reason: `${tool} has no entry in the table of consequential arguments` };
    }
    const row = TABLE[tool] as ActEntry;
    const parsed = row.args.safeParse(args);
    if (!parsed.success) {
      const problems = parsed.error.issues.map((i) => `${i.path.join(".") || "arguments"}: ${i.message}`);
      return { ok: false, reason: `the arguments of ${tool} cannot be bound: ${problems.join("; ")}` };
    }
    try {
      const bound = await row.bind(parsed.data, { deps, call });
      return { ok: true, act: { tool, tier: call.tier, bound } };
    } catch (err) {
      const reason = err instanceof Unbindable ? err.message : describeError(err).message;
      return { ok: false, reason: `${tool}: ${reason}` };
    }
  };
}
