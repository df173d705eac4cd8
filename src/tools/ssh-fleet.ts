import {
  clamp,
  decodeUtf8,
  describeError,
  neutralizeTerminalOutput,
  openSequenceStart,
  RelayError,
  utf8Length,
} from "../core/index.js";
import { splitHostList, type TierSpec } from "../policy/index.js";
import { annotationsFor, clampOutput, defineTool, type Tool } from "../runner/index.js";
import { type HostKeyReport, mapBounded, type SshRunResult } from "../ssh/index.js";
import { clampTimeout } from "./shell.js";
import { REMOTE_COMMAND_TIER, type SshToolDeps, sshProbe, sshTargets } from "./ssh-common.js";

const HOST_CAP = 100;
const NO_HOSTS = "[no hosts configured; pass hosts= or add an inventory]";
const CHECK_CONCURRENCY = 8;
const READ_ONLY: TierSpec = { kind: "fixed", tier: 0 };
/** Bytes kept free for trailing notices (a tier line and a host-key line listing up to 8 hosts). */
const NOTICE_ROOM = 1536;

function overCap(n: number): RelayError {
  return RelayError.untyped(`${n} hosts exceeds the per-call cap of ${HOST_CAP}; split into smaller batches`);
}

/** JSON-escaped UTF-8 size of a string's content (without the quotes). */
function jsonSize(text: string): number {
  return utf8Length(JSON.stringify(text)) - 2;
}

/**
 * Cut `text` so that its JSON-escaped form fits in `limit` bytes, marker
 * included. Escaping can grow a byte sixfold (`\u0001`), so a raw byte budget
 * alone would let the fan-out object outgrow its envelope.
 */
export function fitForJson(text: string, limit: number, producedBytes?: number): string {
  const bytes = Buffer.from(text, "utf8");
  const total = Math.max(producedBytes ?? 0, bytes.length);
  if (total <= bytes.length && jsonSize(text) <= limit) return text;
  let keep = Math.min(bytes.length, limit);
  for (;;) {
    // A cut inside a character decodes to U+FFFD; drop it rather than show a broken glyph.
    let head = decodeUtf8(bytes.subarray(0, keep)).replace(/\uFFFD$/, "");
    // Nor leave half a colour sequence for the marker to complete.
    const open = openSequenceStart(head);
    if (open !== -1) head = head.slice(0, open);
    const candidate = `${head}\n\n[TRUNCATED - ${total} bytes total, ${utf8Length(head)} shown]`;
    const size = jsonSize(candidate);
    if (size <= limit) return candidate;
    if (keep === 0) return "";
    // Shrink in proportion to the overshoot (escapes make the ratio uneven), always by at least a byte.
    keep = Math.max(0, Math.min(keep - 1, Math.floor((keep * limit) / size) - 1));
  }
}

interface HostResult {
  host: string;
  exit_code: number | null;
  output: string;
}

export function createSshFleetTools(deps: SshToolDeps): Tool[] {
  const { settings, ssh } = deps;

  /** Hosts a call targets: the typed list, or every inventory / ssh_config name. */
  const targetsOf = (hosts: string): string[] =>
    hosts.trim() === "" ? ssh.directory.names() : splitHostList(hosts);

  const fanout = defineTool({
    name: "ssh_fanout",
    title: "Run a command on many SSH hosts",
    description:
      "Run one non-interactive command on many hosts in parallel (bounded concurrency, at most 100 hosts) and " +
      "return one JSON object with a result per host in input order: exit code and output, or " +
      "[UNREACHABLE: …] / [TIMEOUT after Ns]. Empty hosts = every inventory host. For one host use ssh_exec.",
    params: {
      command: { type: "string", description: "command line for each remote shell", noNul: true },
      hosts: {
        type: "string",
        description: "comma/whitespace separated aliases or user@host; empty = the whole inventory",
        default: "",
      },
      timeout: {
        type: "integer",
        description: "seconds per host for connect + run (default RELAY_SHELL_DEFAULT_TIMEOUT)",
        optional: true,
      },
      concurrency: { type: "integer", description: "hosts in flight at once, 1..32", default: 8 },
    },
    tier: REMOTE_COMMAND_TIER,
    annotations: annotationsFor(REMOTE_COMMAND_TIER, { openWorld: true }),
    resultFields: {
      host_count: { type: "integer", description: "hosts in the call" },
      failed_hosts: { type: "integer", description: "hosts without an exit code (unreachable or timed out)" },
      host_keys: {
        type: "array",
        description: "host-key outcome per dialled host: {name, host, port, mode, status, …}",
      },
    },
    budget: () => clampOutput(settings.maxOutput, settings),
    policyText: (a) => {
      const hosts = targetsOf(a.hosts);
      // An inventory-wide fan-out names its hosts in the probe, so a host deny rule still applies (ADR 0008).
      const listed = a.hosts.trim() === "" ? hosts.join(", ") : a.hosts;
      return sshProbe(ssh, `${a.command}\n${listed}`, hosts);
    },
    // Past the cap run() refuses before dialling, so the hosts beyond it never act.
    targets: (a) =>
      targetsOf(a.hosts)
        .slice(0, HOST_CAP)
        .flatMap((host) => sshTargets(ssh, host)),
    auditArgs: (a) => ({
      command: a.command,
      hosts: a.hosts,
      timeout: clampTimeout(a.timeout ?? settings.defaultTimeout, settings),
      concurrency: clamp(a.concurrency, 1, 32),
    }),
    async run(a, ctx) {
      if (a.command.trim() === "") throw RelayError.untyped("empty command");
      const hosts = targetsOf(a.hosts);
      if (hosts.length === 0) return { body: NO_HOSTS };
      if (hosts.length > HOST_CAP) throw overCap(hosts.length);
      const timeout = clampTimeout(a.timeout ?? settings.defaultTimeout, settings);
      const concurrency = clamp(a.concurrency, 1, 32);
      const n = hosts.length;

      // The envelope arithmetic of docs/wire-contract.md §2.4: the object always fits the output budget.
      const aggregate = clampOutput(settings.maxOutput, settings);
      const echo = fitForJson(a.command, Math.min(2048, Math.floor(aggregate / 4)));
      // Room for the `notices` array the runner may splice in after the record is written (docs/wire-contract.md §8.3).
      const noticeRoom = Math.min(NOTICE_ROOM, Math.floor(aggregate / 4));
      const reserve = 1024 + noticeRoom + utf8Length(echo) + 200 * n;
      let perHost = Math.max(128, Math.floor(Math.max(aggregate - reserve, 0) / n));
      const keys: Array<HostKeyReport & { name: string }> = [];

      const runs = await mapBounded(
        hosts,
        concurrency,
        async (host): Promise<{ host: string; result?: SshRunResult; error?: unknown }> => {
          try {
            const result = await ssh.run({
              host,
              command: a.command,
              timeoutSeconds: timeout,
              connectTimeoutSeconds: timeout,
              maxBufferBytes: perHost,
              signal: ctx.signal,
            });
            return { host, result };
          } catch (error) {
            return { host, error };
          }
        },
        (done, _index, count) => {
          const r = done.result;
          const state = !r
            ? "unreachable"
            : r.timedOut
              ? "timeout"
              : r.exitCode === null
                ? "no exit status"
                : `exit ${r.exitCode}`;
          ctx.progress(count, n, `${done.host}: ${state}`);
        },
      );

      // Each host's output is made safe for a terminal before it is fitted, so the share counts what is sent.
      let terminalRemoved = 0;
      const outputs = runs.map(({ result }) => {
        if (!result || result.timedOut) return "";
        const clean = neutralizeTerminalOutput(result.output, settings.terminalOutput);
        terminalRemoved += clean.removed;
        return clean.text;
      });
      const build = (limit: number): string => {
        const results: HostResult[] = runs.map(({ host, result, error }, index) => {
          const name = fitForJson(host, 200);
          if (!result) {
            const { type, message } = describeError(error);
            return {
              host: name,
              exit_code: null,
              output: fitForJson(
                neutralizeTerminalOutput(`[UNREACHABLE: ${type}: ${message}]`, settings.terminalOutput).text,
                limit,
              ),
            };
          }
          if (result.timedOut) return { host: name, exit_code: null, output: `[TIMEOUT after ${timeout}s]` };
          const produced = result.droppedBytes > 0 ? result.totalBytes : undefined;
          return {
            host: name,
            exit_code: result.exitCode,
            output: fitForJson(outputs[index] ?? "", limit, produced),
          };
        });
        return JSON.stringify({ command: echo, concurrency, timeout, host_count: n, results });
      };
      let body = build(perHost);
      // Long host names can still push past the envelope; shrink the per-host share until it fits.
      while (utf8Length(body) > aggregate - noticeRoom && perHost > 0) {
        perHost = Math.floor(perHost / 2);
        body = build(perHost);
      }
      for (const { host, result } of runs) {
        if (result?.hostKey) keys.push({ name: host, ...result.hostKey });
      }
      const failed = runs.filter((r) => !r.result || r.result.timedOut).length;
      return {
        body,
        json: true,
        terminalRemoved,
        fields: { host_count: n, failed_hosts: failed, host_keys: keys },
      };
    },
  });

  const check = defineTool({
    name: "ssh_check",
    title: "Probe SSH hosts",
    description:
      "Check which hosts answer over SSH by running `echo ok` on each (8 at a time, at most 100 hosts): one " +
      "line per host, `<name>: ok` or `<name>: UNREACHABLE (…)`. Empty hosts = every inventory host. Read-only.",
    params: {
      hosts: {
        type: "string",
        description: "comma/whitespace separated aliases; empty = the whole inventory",
        default: "",
      },
      timeout: { type: "integer", description: "seconds per host, connect included, 1..60", default: 5 },
    },
    tier: READ_ONLY,
    annotations: annotationsFor(READ_ONLY, { openWorld: true }),
    resultFields: {
      host_count: { type: "integer", description: "hosts probed" },
      ok_hosts: { type: "integer", description: "hosts that answered" },
      host_keys: { type: "array", description: "host-key outcome per dialled host" },
    },
    budget: () => 8192,
    policyText: (a) => {
      const hosts = targetsOf(a.hosts);
      return sshProbe(ssh, a.hosts.trim() === "" ? hosts.join(" ") : a.hosts, hosts);
    },
    targets: (a) =>
      targetsOf(a.hosts)
        .slice(0, HOST_CAP)
        .flatMap((host) => sshTargets(ssh, host)),
    auditArgs: (a) => ({ hosts: a.hosts === "" ? "inventory" : a.hosts }),
    async run(a, ctx) {
      const hosts = targetsOf(a.hosts);
      if (hosts.length === 0) return { body: NO_HOSTS };
      if (hosts.length > HOST_CAP) throw overCap(hosts.length);
      const timeout = clamp(a.timeout, 1, 60);
      const keys: Array<HostKeyReport & { name: string }> = [];
      const lines = await mapBounded(
        hosts,
        CHECK_CONCURRENCY,
        async (host) => {
          try {
            const r = await ssh.run({
              host,
              command: "echo ok",
              timeoutSeconds: timeout,
              connectTimeoutSeconds: timeout,
              maxBufferBytes: 4096,
              signal: ctx.signal,
            });
            if (r.hostKey) keys.push({ name: host, ...r.hostKey });
            if (r.timedOut) return `${host}: UNREACHABLE (TimeoutError)`;
            return r.exitCode === 0 && r.output.includes("ok") ? `${host}: ok` : `${host}: UNREACHABLE`;
          } catch (err) {
            return `${host}: UNREACHABLE (${describeError(err).type})`;
          }
        },
        (_line, _index, done) => ctx.progress(done, hosts.length),
      );
      const ok = lines.filter((l) => l.endsWith(": ok")).length;
      return { body: lines.join("\n"), fields: { host_count: hosts.length, ok_hosts: ok, host_keys: keys } };
    },
  });

  return [fanout, check];
}
