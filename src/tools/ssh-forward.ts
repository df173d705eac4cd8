import { type PolicyTarget, type TierSpec, widenHostTokens } from "../policy/index.js";
import { annotationsFor, defineTool, type Tool } from "../runner/index.js";
import { type ForwardRegistry, type ForwardSpec, parseForwardSpec, type SshService } from "../ssh/index.js";
import { type BindContext, canonicalSpec, sshTarget, Unbindable } from "./consent-bindings.js";
import {
  CONNECTION_PARAMS,
  CONNECTION_RESULT_FIELDS,
  callHost,
  connectionAudit,
  connectionFields,
  HOST_PARAM,
  MUTATING_TIER,
  sshProbe,
  sshTargets,
  toOverrides,
} from "./ssh-common.js";
import { withAddressForms } from "./targets.js";

export interface SshForwardToolDeps {
  ssh: SshService;
  forwards: ForwardRegistry;
  /** RELAY_SHELL_FORWARD_BIND_ANY: listeners bind every interface (`*`) instead of 127.0.0.1. */
  bindAny: boolean;
}

const READ_ONLY: TierSpec = { kind: "fixed", tier: 0 };
const REVERSIBLE: TierSpec = { kind: "fixed", tier: 1 };

/** The spec, or null when it does not parse (the call then fails in run, after being audited). */
function specOf(text: string): ForwardSpec | null {
  try {
    return parseForwardSpec(text);
  } catch {
    return null;
  }
}

/** The listen address (on the relay host for L and D, on the SSH host for R) and the destination. */
function forwardTargets(text: string, bindAny: boolean): PolicyTarget[] {
  const spec = specOf(text);
  if (spec === null) return [];
  const out: PolicyTarget[] = [
    { kind: "listen", value: `${bindAny ? "*" : "127.0.0.1"}:${spec.listenPort}` },
  ];
  if (spec.dest !== null) {
    out.push(
      { kind: "dest", value: `${spec.dest.host}:${spec.dest.port}` },
      { kind: "host", value: spec.dest.host },
    );
  }
  return withAddressForms(out);
}

export function createSshForwardTools(deps: SshForwardToolDeps): Tool[] {
  return [forwardTool(deps), forwardListTool(deps), forwardCloseTool(deps)];
}

function forwardTool({ ssh, forwards, bindAny }: SshForwardToolDeps): Tool {
  return defineTool({
    name: "ssh_forward",
    title: "Open an SSH port forward",
    description:
      "Open a port forward through an SSH host and keep it until ssh_forward_close: L:<listen_port>:<dest_host>:" +
      "<dest_port> listens on the relay host and tunnels to dest via the SSH host; R:<listen_port>:<dest_host>:" +
      "<dest_port> listens on the SSH host and connects back to dest from the relay; D:<listen_port> is a SOCKS5 " +
      "proxy on the relay host. Port 0 picks a free port (reported). Listeners bind 127.0.0.1; IPv6 destinations " +
      "go in brackets ([::1]). List with ssh_forward_list.",
    params: {
      host: HOST_PARAM,
      spec: {
        type: "string",
        description:
          "L:<listen_port>:<dest_host>:<dest_port>, R:<listen_port>:<dest_host>:<dest_port> or D:<listen_port>",
        noNul: true,
      },
      ...CONNECTION_PARAMS,
    },
    tier: MUTATING_TIER,
    annotations: annotationsFor(MUTATING_TIER, { openWorld: true }),
    resultFields: {
      forward_id: { type: "string", description: "id for ssh_forward_close" },
      listen_port: { type: "integer", description: "the port listened on (the real one when 0 was asked)" },
      listen_host: { type: "string", description: "127.0.0.1, or * when RELAY_SHELL_FORWARD_BIND_ANY is on" },
      ...CONNECTION_RESULT_FIELDS,
    },
    budget: () => 1024,
    // The SSH host is folded in (Python left it out), so a deny rule on a host gates its forwards too.
    policyText: (a) => {
      const dest = specOf(a.spec)?.dest?.host;
      const probe = sshProbe(ssh, `forward ${a.spec}\n${a.host}`, [a.host], a.jump);
      return dest ? widenHostTokens(probe, [dest]) : probe;
    },
    targets: (a) => [...sshTargets(ssh, a.host, a), ...forwardTargets(a.spec, bindAny)],
    hosts: (a) => [callHost(ssh, a.host, a)],
    auditArgs: (a) => ({ host: a.host, spec: a.spec, ...connectionAudit(ssh, a.host, a) }),
    act: (a, { deps }: BindContext) => {
      const spec = parseForwardSpec(a.spec);
      return {
        ...sshTarget(deps, a.host, toOverrides(a)),
        kind: spec.kind,
        spec: canonicalSpec(spec),
        bind_address: deps.settings.forwardBindAny ? "*" : "127.0.0.1",
        listen_port: spec.listenPort,
        destination: spec.dest === null ? null : { host: spec.dest.host, port: spec.dest.port },
      };
    },
    async run(a, ctx) {
      // A malformed spec fails here, before anything is dialled.
      const spec = parseForwardSpec(a.spec);
      const opened = await forwards.open({
        host: a.host,
        overrides: toOverrides(a),
        spec,
        owner: ctx.clientId,
        signal: ctx.signal,
      });
      return {
        body: `forward ${opened.id} active: ${opened.kind} ${spec.text} listening on port ${opened.listenPort}`,
        fields: {
          forward_id: opened.id,
          listen_port: opened.listenPort,
          listen_host: opened.listenHost,
          ...connectionFields(opened),
        },
      };
    },
  });
}

function forwardListTool({ forwards }: SshForwardToolDeps): Tool {
  return defineTool({
    name: "ssh_forward_list",
    title: "List SSH port forwards",
    description:
      "List the caller's open port forwards (and those no client owns) as JSON: id, kind (local, remote, " +
      "dynamic), spec, listen_port, target (dest_host:dest_port or socks), host, listen_host, open connections " +
      "and owner.",
    params: {},
    tier: READ_ONLY,
    introspection: true,
    annotations: annotationsFor(READ_ONLY, { openWorld: false, idempotent: false }),
    budget: () => 8192,
    policyText: () => "",
    auditArgs: () => ({}),
    async run(_a, ctx) {
      const rows = forwards.list(ctx.clientId);
      return { body: rows.length === 0 ? "[]" : JSON.stringify(rows, null, 2) };
    },
  });
}

function forwardCloseTool({ forwards }: SshForwardToolDeps): Tool {
  return defineTool({
    name: "ssh_forward_close",
    title: "Close an SSH port forward",
    description:
      "Close a port forward opened by ssh_forward: its listener stops, open tunnels are cut and the SSH " +
      "connection is no longer held for it.",
    params: { forward_id: { type: "string", description: "the id ssh_forward returned" } },
    tier: REVERSIBLE,
    annotations: annotationsFor(REVERSIBLE, { openWorld: false }),
    budget: () => 512,
    policyText: () => "",
    auditArgs: (a) => ({ forward_id: a.forward_id }),
    // The forward as the calling client may close it.
    act: (a, { deps, call }: BindContext) => {
      const row = deps.forwards.list(call.clientId).find((f) => f.id === a.forward_id);
      if (row === undefined)
        throw new Unbindable(`no forward ${JSON.stringify(a.forward_id)} for this client`);
      return {
        forward_id: row.id,
        owner: row.owner,
        host: row.host,
        kind: row.kind,
        spec: row.spec,
        bind_address: row.listen_host,
        listen_port: row.listen_port,
      };
    },
    async run(a, ctx) {
      await forwards.close(a.forward_id, ctx.clientId);
      return { body: `closed forward ${a.forward_id}` };
    },
  });
}
