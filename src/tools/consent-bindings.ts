/**
 * How the tools' acts (each tool's `act`, gathered by consent-acts.ts) turn
 * a call's arguments into bound values: digests in place of content and
 * credentials, real paths, SSH targets resolved as the tools resolve them,
 * forward specs in one spelling, sessions as the calling client sees them.
 */
import { createHash } from "node:crypto";
import { realpathSync } from "node:fs";
import { basename, dirname, join, resolve as resolvePath } from "node:path";
import type { Settings } from "../config/index.js";
import { canonicalJson, type Tier } from "../core/index.js";
import { envOverlay } from "../exec/index.js";
import { splitHostList } from "../policy/index.js";
import type { SessionRegistry } from "../sessions/index.js";
import type {
  ConnectionOverrides,
  ForwardRegistry,
  ForwardSpec,
  HostDirectory,
  SshTarget,
} from "../ssh/index.js";

/** What the acts need to find the real target of a call: the same objects the tools themselves use. */
export interface ConsentActsDeps {
  /** The SSH layer's directory: how a host name becomes the host, user, port, keys and jump chain dialled. */
  directory: HostDirectory;
  /** The session registry: a session's owner, kind and program. */
  sessions: Pick<SessionRegistry, "list">;
  /** The forward registry: what a forward id names. */
  forwards: Pick<ForwardRegistry, "list">;
  settings: Pick<Settings, "transferMaxBytes" | "transferMaxEntries" | "forwardBindAny">;
  /** The server's working directory (process.cwd()): what an empty or relative cwd or local path means. */
  cwd: string;
}

/** The call an act is computed for, beyond its tool and arguments. */
export interface ActCall {
  /** The tier policy gave the call; the act carries it, so one command at two tiers is two acts. */
  tier: Tier;
  /** The MCP client calling: sessions and forwards are looked up as that client sees them. */
  clientId: string;
}

export type Bound = Record<string, unknown>;

/** What every tool's `act` is given beside its arguments (the `C` of its ToolDef). */
export interface BindContext {
  deps: ConsentActsDeps;
  call: ActCall;
}

/** A reason the act cannot be bound; the gate refuses the call with it. */
export class Unbindable extends Error {}

export function sha256(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** The empty text is no input at all: bound as null rather than as the digest of nothing. */
export function digestOrNull(text: string): string | null {
  return text === "" ? null : sha256(text);
}

/**
 * The environment a caller gives a local process, as names and one digest:
 * a value can be a credential, so only its digest is bound and shown. The
 * digest is over the canonical overlay (sorted names, `null` for a removed
 * variable), so key order and JSON spelling do not make a new act.
 */
export function envBinding(envJson: string): { env_names: string[]; env_sha256: string } {
  const overlay = envOverlay(envJson);
  return { env_names: Object.keys(overlay).sort(), env_sha256: sha256(canonicalJson(overlay)) };
}

export function localPath(deps: ConsentActsDeps, path: string): string {
  return resolvePath(deps.cwd, path);
}

/**
 * Where a local path really is: symlinks resolved, or for a path that does
 * not exist yet (a download's destination) its directory's real path and its
 * name; the absolute path when neither resolves (the call then fails on it).
 * Bound for a working directory and a download's destination, so that
 * pointing a symlink elsewhere after the approval makes another act.
 */
export function physicalPath(deps: ConsentActsDeps, path: string): string {
  const absolute = localPath(deps, path);
  try {
    return realpathSync.native(absolute);
  } catch {
    try {
      return join(realpathSync.native(dirname(absolute)), basename(absolute));
    } catch {
      return absolute;
    }
  }
}

function hop(t: SshTarget): Bound {
  return {
    host: t.host,
    port: t.port,
    user: t.user,
    key_paths: [...t.identityFiles],
    host_key_mode: t.mode,
  };
}

/**
 * Where an SSH call lands, resolved exactly as the tool resolves it
 * (HostDirectory.resolve with the same overrides), so the bound host is the
 * host that will be dialled: the name as typed, the dialled host, port,
 * user, key files in the order offered, host-key mode, and the jump chain
 * first hop first. A name that does not resolve is refused.
 */
export function sshTarget(deps: ConsentActsDeps, host: string, overrides: ConnectionOverrides): Bound {
  const target = deps.directory.resolve(host, overrides);
  return { alias: host.trim(), ...hop(target), jump: target.jump.map(hop) };
}

/** Sorted, so the order hosts were typed in is not a new act; a host named twice runs twice, so it stays twice. */
function sortedTargets(targets: readonly Bound[]): Bound[] {
  return targets
    .map((t) => ({ key: canonicalJson(t), t }))
    .sort((x, y) => (x.key < y.key ? -1 : x.key > y.key ? 1 : 0))
    .map(({ t }) => t);
}

/** The hosts a many-host call dials (the typed list, or the whole inventory when blank), resolved and sorted. */
export function hostListTargets(deps: ConsentActsDeps, hosts: string): Bound[] {
  const names = hosts.trim() === "" ? deps.directory.names() : splitHostList(hosts);
  if (names.length === 0) throw new Unbindable("no hosts: pass hosts= or add an inventory");
  return sortedTargets(names.map((name) => sshTarget(deps, name, {})));
}

/** `L:8080:db:5432` however it was typed (`l:08080:db:5432`): the spec is one act whatever its spelling. */
export function canonicalSpec(spec: ForwardSpec): string {
  const letter = { local: "L", remote: "R", dynamic: "D" }[spec.kind];
  if (spec.dest === null) return `${letter}:${spec.listenPort}`;
  const host = spec.dest.host.includes(":") ? `[${spec.dest.host}]` : spec.dest.host;
  return `${letter}:${spec.listenPort}:${host}:${spec.dest.port}`;
}

export type SessionRow = ReturnType<SessionRegistry["list"]>[number];

/** A session as the calling client may use it (owner binding, ADR 0005); another client's is unknown here. */
export function sessionOf(ctx: BindContext, id: string, live: boolean): SessionRow {
  const row = ctx.deps.sessions.list(ctx.call.clientId).find((s) => s.id === id);
  if (row === undefined) throw new Unbindable(`no session ${JSON.stringify(id)} for this client`);
  if (live && row.closed) throw new Unbindable(`session ${id} has ended`);
  return row;
}

export function sessionBinding(row: SessionRow): Bound {
  return { session_id: row.id, owner: row.owner, kind: row.kind, program: row.title };
}
