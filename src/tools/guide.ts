/**
 * The server instructions (sent at initialize) and the operating_guide prompt.
 * Each paragraph names the tools it is about and is included only when all of
 * them are registered, so the text never advertises a tool the server lacks.
 */
interface Paragraph {
  tools: readonly string[];
  text: string;
}

const INSTRUCTIONS: readonly Paragraph[] = [
  {
    tools: [],
    text:
      "relay-shell runs commands on hosts the operator owns. Every call is classified into a risk tier " +
      "(0 read-only .. 3 irreversible), admitted or refused by the operator's policy, and written to an audit log. " +
      "A refused call returns [DENIED tier N (NAME): reason] and nothing ran. Keep one workflow per task and " +
      "read each result before the next call. A result may end with [NOTICE ...] lines: the call ran and was " +
      "judged stateful or irreversible, or reached an SSH host whose key was not verified. The classification " +
      "is a heuristic, not a boundary: a result without a notice is not thereby safe.",
  },
  {
    tools: ["shell_exec", "shell_script"],
    text:
      "Choosing a tool: shell_exec runs one command that runs and exits (no tty) and returns [exit N] and its " +
      "output; shell_script runs a multi-line bash, sh or python3 script the same way.",
  },
  {
    tools: ["shell_spawn", "session_send", "session_recv", "session_resize", "session_kill", "session_list"],
    text:
      "Anything that needs a tty, asks for input, or keeps running belongs in a session: shell_spawn opens a " +
      "local PTY, then session_send types into it, session_recv reads its output, session_resize, session_kill " +
      "and session_list manage it: spawn once, then send and receive.",
  },
  {
    tools: ["ssh_exec", "ssh_fanout", "ssh_check", "ssh_keyscan", "ssh_hosts"],
    text:
      "Remote hosts: ssh_hosts lists the inventory, ssh_check probes reachability, ssh_keyscan fetches host keys, " +
      "ssh_exec runs one command on one host that runs and exits, ssh_fanout runs one command on many hosts " +
      "and returns JSON.",
  },
  {
    tools: ["ssh_fanout", "ssh_fanout_result"],
    text:
      "Past 100 hosts ssh_fanout groups the hosts by identical output, in ranges like web[001-040]; " +
      "ssh_fanout_result reads any host's whole output by the fanout_id the fan-out returned.",
  },
  {
    tools: ["ssh_spawn", "session_send", "session_recv"],
    text: "ssh_spawn opens a remote PTY, driven by session_send and session_recv like a local one.",
  },
  {
    tools: ["ssh_upload", "ssh_download", "ssh_forward", "ssh_forward_list", "ssh_forward_close"],
    text:
      "Files and ports: ssh_upload and ssh_download copy over SFTP; ssh_forward opens L, R or D (SOCKS) " +
      "forwards, ssh_forward_list shows them and ssh_forward_close ends one.",
  },
  {
    tools: ["infra_status", "infra_probe", "infra_rsync_dry_run", "infra_replicate", "infra_verify"],
    text:
      "Infrastructure work without a shell: the operator's broker runs a closed set of operations on profiles " +
      "it defines. infra_status lists the profiles, infra_probe checks one's receiver, infra_rsync_dry_run " +
      "previews a run, infra_replicate copies it (with an idempotency_key; retry with the same key, and on " +
      "a profile that needs an approval ask for a fresh one, since each approval acts once), " +
      "infra_verify checks it. Each answers `<outcome>: <CODE>` on its first line: only ok means done; " +
      "blocked, auth-required and input-required mean nothing was done, unknown means verify before trusting.",
  },
  {
    tools: ["operation_confirm"],
    text:
      "When the operator enabled the Tier-3 confirmation broker, an irreversible command returns " +
      "[CONFIRM REQUIRED ...] with a token instead of running: call operation_confirm with that token, then " +
      "re-issue the exact same call to run it once. If the operator also enabled rollback pairing, " +
      "operation_confirm can bind a verify_command (and verify_expect) and a rollback_command with " +
      "auto_rollback: they run once each after the operation, on the same target, and are reported after its output.",
  },
  {
    tools: ["policy_explain"],
    text:
      "Before a call that may be refused, policy_explain(tool, arguments) says what it would get (tier, the " +
      "policy of its host, admitted, refused and why, or held for a confirmation or consent) without running it.",
  },
  {
    tools: ["server_info", "audit_tail"],
    text:
      "server_info reports the policy mode, limits, audit state and configuration warnings; audit_tail shows " +
      "the newest audit records.",
  },
];

function select(paragraphs: readonly Paragraph[], registered: ReadonlySet<string>): string {
  return paragraphs
    .filter((p) => p.tools.every((t) => registered.has(t)))
    .map((p) => p.text)
    .join("\n\n");
}

export function buildInstructions(registered: ReadonlySet<string>): string {
  return select(INSTRUCTIONS, registered);
}

const GUIDE: readonly Paragraph[] = [
  {
    tools: [],
    text:
      "# relay-shell operating guide\n\n" +
      "## Results\n" +
      "- `[exit N]` then the output: the command completed with status N (negative N: killed by signal -N).\n" +
      "- `[NOTICE tier N (NAME), ...]` after a result: the call ran and was classified Tier 2 or 3; " +
      "`[NOTICE ssh ...]`: an SSH host was reached with host-key checking off, or its key was learned just now. " +
      "ssh_fanout puts them in a `notices` array inside its JSON instead. `structuredContent.notices` has the same lines.\n" +
      "- `[DENIED tier N (NAME): reason]`: policy refused the call; nothing ran.\n" +
      "- `[TIMEOUT after Ns]`: the process group was killed at the timeout; partial output is discarded.\n" +
      "- `[ERROR: Type: message]`: the call failed before or while running.\n" +
      "- `[TRUNCATED - N bytes total, M shown]`: the output was cut to its byte budget.\n" +
      "Tiers: 0 read-only, 1 reversible, 2 stateful, 3 irreversible. The tier comes from parsing the command; " +
      "it is a heuristic, not a boundary, and a call without a warning is not thereby safe.",
  },
  {
    tools: ["shell_exec", "shell_script"],
    text:
      "## One-shot commands\n" +
      'Use shell_exec for a command that runs and exits: `shell_exec(command="df -h")`. Pass input with ' +
      "`stdin`, environment changes with `env_json`, a directory with `cwd`, and raise `timeout` for slow work. " +
      "Use shell_script for several statements: bash scripts run with `set -euo pipefail` unless strict=false.",
  },
  {
    tools: ["shell_spawn", "session_send", "session_recv"],
    text:
      "## Interactive sessions\n" +
      "A REPL, a password prompt, a pager or a long job needs a PTY: `shell_spawn()` returns a session id; " +
      '`session_send(session_id, data="python3")` types a line; `session_recv(session_id, timeout=2)` returns ' +
      "what the terminal printed so far. Repeat send/recv; end with session_kill.",
  },
  {
    tools: ["ssh_hosts", "ssh_check", "ssh_fanout", "ssh_keyscan"],
    text:
      "## Fleets\n" +
      "ssh_hosts lists known hosts, ssh_check tells which answer, ssh_fanout runs one command across many hosts " +
      "and returns one JSON object with a result per host, ssh_keyscan collects host keys.",
  },
  {
    tools: ["ssh_fanout", "ssh_fanout_result"],
    text:
      "A fan-out past 100 hosts answers with groups of hosts that printed the same thing and failures by " +
      'kind; `ssh_fanout_result(fanout_id, host)` gives one host\'s output in full, `host=""` lists them all.',
  },
  {
    tools: ["infra_status", "infra_probe", "infra_rsync_dry_run", "infra_replicate", "infra_verify"],
    text:
      "## Infrastructure broker\n" +
      "The infra_* tools ask the operator's broker daemon to act on a profile; the profile, not the call, fixes " +
      "host, user, paths, key and limits. A replication is: `infra_status()` to see the profiles, " +
      '`infra_probe(profile="web")`, `infra_rsync_dry_run(profile="web", run_id="r1")`, ' +
      '`infra_replicate(profile="web", run_id="r1", idempotency_key="web-r1-0001")`, then ' +
      '`infra_verify(profile="web", run_id="r1")`. The first line of each result is `<outcome>: <CODE>`: ' +
      "`ok` (done), `blocked` (the broker refused or could not act; MISSING_EXECUTION_CAPABILITY means no " +
      "broker answers), `auth-required` (the profile wants a human-signed approval of this exact call and " +
      "the broker found none, or one it could not accept: the operator approves out of band and you re-issue " +
      "the same call), `input-required` (unknown profile or run), `unknown` (a write was interrupted: run " +
      "infra_verify; never assume it worked). If a replicate gives no answer, call it again with the same " +
      "idempotency_key: the broker returns the first outcome and never writes twice.",
  },
  {
    tools: ["operation_confirm"],
    text:
      "## Confirming irreversible work\n" +
      "With the broker on, a Tier-3 call answers `[CONFIRM REQUIRED ...]` and a token. Check the command, call " +
      "operation_confirm(token), then send the identical call again within the stated time; it runs once.\n\n" +
      "With rollback pairing on (RELAY_SHELL_CONFIRM_ROLLBACK), the arm step can bind follow-ups: " +
      '`operation_confirm(token, verify_command="test -e /srv/app/current", rollback_command="ln -sfn old ' +
      '/srv/app/current", auto_rollback=true)`. After the operation runs, the verify runs once on the same target; ' +
      "it fails on a non-zero exit, a timeout, or a `verify_expect` text missing from its output. Only then, and " +
      "only with auto_rollback, the rollback runs once; a failed rollback is reported as `[ROLLBACK FAILED ...]` " +
      "and never retried. Each step is checked by policy like any call and recorded on its own. The commands are " +
      "fixed at the first arm.",
  },
  {
    tools: ["server_info", "audit_tail"],
    text:
      "## Diagnostics\n" +
      "server_info shows the posture (mode, limits, audit sink, warnings). audit_tail shows recent records; " +
      "records carry a hash of each output, never the output itself.",
  },
];

export function buildOperatingGuide(registered: ReadonlySet<string>): string {
  return select(GUIDE, registered);
}
