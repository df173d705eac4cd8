import { type Args, type Hit, hit, type Rule, type RuleInput, table } from "./args.js";
import { FORGE_RULES, judged, wordsOf } from "./delivery-forges.js";

/**
 * Messaging and delivery. A broker's topics, streams, queues and the offsets
 * its consumers reached are data: deleting or purging them, deleting records
 * and moving a group's offsets lose messages or their place for good (Tier 3,
 * data_store_destruction); creating, altering and producing change them (Tier
 * 2, data_store_change). Web servers and proxies started, stopped or
 * reloaded are Tier 2 (service_change). The code forges and the GitOps
 * controllers are in delivery-forges.ts.
 */

const LOSS = hit(3, "data_store_destruction");
const DATA = hit(2, "data_store_change");
const CONFIG = hit(2, "config_change");
const ACCESS = hit(2, "account_access");
const SERVICE = hit(2, "service_change");
const INFRA = hit(2, "infrastructure_change");
const PACKAGE = hit(2, "package_change");
const REMOTE = hit(2, "remote_change");

/** A long option of a Kafka tool, which also takes it abbreviated (`--del`, `--exec`). */
const given = (a: Args, ...names: string[]): boolean => names.some((n) => a.long(n, 3));

const KAFKA_VALUED = new Set([
  "--bootstrap-server",
  "--bootstrap-controller",
  "--command-config",
  "-c",
  "--config",
]);

/** Tools that write messages into topics. */
const PRODUCERS = new Set([
  "kafka-console-producer",
  "kafka-producer-perf-test",
  "kafka-verifiable-producer",
  "kafka-e2e-latency",
  "kafka-mirror-maker",
  "connect-mirror-maker",
]);
/** Brokers and Connect workers started or stopped. */
const DAEMONS = new Set([
  "kafka-server-start",
  "kafka-server-stop",
  "connect-distributed",
  "connect-standalone",
]);

/** The tools whose action is a subcommand (`kafka-transactions abort`). */
function kafkaVerb(tool: string, a: Args, verb: string | undefined): Hit | null {
  if (verb === undefined) return null;
  switch (tool) {
    case "kafka-features":
      if (given(a, "dry-run") || !/^(?:upgrade|downgrade|disable)$/.test(verb)) return null;
      // An unsafe downgrade drops metadata the older version cannot read.
      return given(a, "unsafe") ? LOSS : CONFIG;
    case "kafka-metadata-quorum":
      return /^(?:add|remove)-controller$/.test(verb) ? INFRA : null;
    case "kafka-storage":
      return verb === "format" ? DATA : null;
    case "kafka-transactions":
      // An aborted transaction's writes are discarded.
      return verb === "abort" || verb === "force-terminate" ? LOSS : null;
    case "kafka-cluster":
      return verb === "unregister" ? INFRA : null;
    default:
      return null;
  }
}

/** Kafka's tools, by name with or without `.sh`. Without arguments most print their usage. */
function kafkaTool({ name, args: a }: RuleInput): Hit | null {
  const tool = name.replace(/\.sh$/, "");
  // kafka-server-stop alone stops every broker on the host.
  if (DAEMONS.has(tool)) return SERVICE;
  if (a.length === 0) return null;
  if (PRODUCERS.has(tool)) return DATA;
  switch (tool) {
    case "kafka-topics":
      if (given(a, "delete")) return LOSS;
      return given(a, "create", "alter") ? DATA : null;
    case "kafka-consumer-groups":
    case "kafka-share-groups":
      if (given(a, "delete", "delete-offsets")) return LOSS;
      // Without --execute a reset only prints the offsets it would set.
      return given(a, "reset-offsets") && given(a, "execute") ? LOSS : null;
    case "kafka-streams-application-reset":
      return given(a, "dry-run") ? null : LOSS;
    case "kafka-delete-records":
      return LOSS;
    case "kafka-configs":
    case "kafka-client-metrics":
      if (!given(a, "alter", "add-config", "delete-config", "delete")) return null;
      // A user's SCRAM credentials are set and removed as configuration.
      return a.values.some((v) => /SCRAM-SHA/i.test(v)) ? ACCESS : CONFIG;
    case "kafka-acls":
    case "kafka-delegation-tokens":
      return given(a, "add", "remove", "create", "renew", "expire") ? ACCESS : null;
    case "kafka-reassign-partitions":
      return given(a, "execute", "cancel") ? DATA : null;
    case "kafka-leader-election":
      // An unclean election makes a replica that missed writes the leader: they are gone.
      return /^unclean$/i.test(a.optionValue("--election-type") ?? "") ? LOSS : DATA;
    case "kafka-run-class":
      return hit(2, "script_file");
    default:
      return kafkaVerb(tool, a, wordsOf(a, KAFKA_VALUED)[0]);
  }
}

const KAFKA_TOOLS = [
  "kafka-topics",
  "kafka-consumer-groups",
  "kafka-share-groups",
  "kafka-groups",
  "kafka-configs",
  "kafka-client-metrics",
  "kafka-acls",
  "kafka-delegation-tokens",
  "kafka-reassign-partitions",
  "kafka-leader-election",
  "kafka-log-dirs",
  "kafka-broker-api-versions",
  "kafka-get-offsets",
  "kafka-delete-records",
  "kafka-streams-application-reset",
  "kafka-features",
  "kafka-metadata-quorum",
  "kafka-metadata-shell",
  "kafka-storage",
  "kafka-transactions",
  "kafka-cluster",
  "kafka-dump-log",
  "kafka-jmx",
  "kafka-console-consumer",
  "kafka-console-share-consumer",
  "kafka-consumer-perf-test",
  "kafka-verifiable-consumer",
  "kafka-replica-verification",
  "kafka-run-class",
  ...PRODUCERS,
  ...DAEMONS,
];

const NATS_VALUED = new Set(["-s", "--server", "--creds", "--nkey", "--context", "--user", "--password"]);
const NATS_LOSS = /^(?:rm|del|delete|purge|rmm|seal)$/;
const NATS_WRITE: Readonly<Record<string, RegExp>> = {
  stream: /^(?:add|create|new|edit|update|copy|cp|restore|cluster)$/,
  consumer: /^(?:add|create|new|edit|update|copy|cp|cluster|next|sub|pause|resume|unpin)$/,
  kv: /^(?:add|create|put|update|revert|edit|compact)$/,
  object: /^(?:add|put|edit)$/,
};
const NATS_GROUP: Readonly<Record<string, string>> = { str: "stream", con: "consumer", obj: "object" };

/**
 * nats: JetStream's streams, consumers, key-value and object buckets, and the server. Taking
 * the next message of a consumer acknowledges it. A message published or a request sent is
 * acted on by whoever receives it.
 */
function nats({ args }: RuleInput): Hit | null {
  const [first, verb, third] = wordsOf(args, NATS_VALUED);
  if (first === undefined) return null;
  if (/^(?:pub|publish|req|request)$/.test(first)) return REMOTE;
  const group = (Object.hasOwn(NATS_GROUP, first) ? NATS_GROUP[first] : undefined) ?? first;
  const write = Object.hasOwn(NATS_WRITE, group) ? NATS_WRITE[group] : undefined;
  if (write !== undefined && verb !== undefined) {
    if (NATS_LOSS.test(verb)) return LOSS;
    return write.test(verb) ? DATA : null;
  }
  if (group === "account") return verb === "restore" ? DATA : null;
  if (group !== "server") return null;
  if (verb === "account" && third === "purge") return LOSS;
  const control = ((verb === "raft" || verb === "cluster") && third === "step-down") || verb === "config";
  return control ? SERVICE : null;
}

const RABBIT_VALUED = new Set(["-H", "--host", "-P", "--port", "-V", "--vhost", "-u", "--username"]);
/**
 * rabbitmqadmin, in both its command lines (`delete queue name=q`, `delete queue --name q`):
 * deleting or purging a queue or a virtual host loses its messages; a user deleted is an
 * account gone; declaring, importing definitions and publishing change the broker.
 */
function rabbitmqadmin({ args }: RuleInput): Hit | null {
  const [verb, object] = wordsOf(args, RABBIT_VALUED);
  if (verb === undefined) return null;
  const users = object === "user" || object === "users";
  if (verb === "delete" || verb === "purge") return users ? hit(3, "account_access") : LOSS;
  if (verb === "declare") return users || object?.endsWith("permission") ? ACCESS : DATA;
  // `get` with a mode that does not requeue takes the messages off the queue.
  if (verb === "get") return args.values.some((v) => /requeue_false/i.test(v)) ? LOSS : null;
  if (verb === "publish") return REMOTE;
  if (verb === "close") return SERVICE;
  const imports = verb === "import" || (verb === "definitions" && object === "import");
  return imports || verb === "rebalance" || (verb === "feature_flags" && object?.startsWith("enable"))
    ? CONFIG
    : null;
}

/** Caddy's commands that start, stop or reload a server, or replace the binary. */
function caddy({ args }: RuleInput): Hit | null {
  const verb = args.subcommand()?.value.toLowerCase();
  if (verb === undefined) return null;
  if (/^(?:start|stop|run|reload|file-server|reverse-proxy|respond)$/.test(verb)) return SERVICE;
  if (/^(?:upgrade|add-package|remove-package)$/.test(verb)) return PACKAGE;
  // The local CA installed into (or removed from) the system's trust store.
  return verb === "trust" || verb === "untrust" ? CONFIG : null;
}

/** traefik without a subcommand starts the proxy. */
function traefik({ args }: RuleInput): Hit | null {
  const verb = args.subcommand()?.value.toLowerCase();
  return verb === "version" || verb === "healthcheck" || verb === "help" ? null : SERVICE;
}

/** haproxy checks its configuration with -c and prints its version with -v/-vv; otherwise it serves. */
function haproxy({ args }: RuleInput): Hit | null {
  return args.length === 0 || args.has("-c", "-v", "-vv") ? null : SERVICE;
}

/** varnishd: -C prints the compiled configuration and -V the version; otherwise it starts the cache. */
function varnishd({ args }: RuleInput): Hit | null {
  return args.length === 0 || args.has("-C", "-V") ? null : SERVICE;
}

/**
 * varnishadm: the CLI commands that ban objects from the cache, load or switch the
 * configuration, set parameters or a backend's health, and stop or start the cache. The
 * command is in the arguments, or on stdin when none is given.
 */
const VARNISH_ACTS =
  /^(?:ban|vcl\.(?:load|inline|use|discard|label|state)|param\.(?:set|reset)|backend\.set_health|stop|start)$/;
function varnishadm({ args, stdin }: RuleInput): Hit | null {
  const command = wordsOf(args, new Set(["-T", "-S", "-n", "-t"]))[0];
  const lines = command !== undefined ? [command] : (stdin ?? "").split("\n");
  return lines.some((l) => VARNISH_ACTS.test(l.trim().split(/\s+/)[0]?.toLowerCase() ?? "")) ? SERVICE : null;
}

/** Alertmanager's client: adding, importing, updating or expiring silences and posting alerts change what pages. */
function amtool({ args }: RuleInput): Hit | null {
  const [group, verb] = args.operands().map((o) => o.toLowerCase());
  if (group === "silence" && /^(?:add|import|update|expire)$/.test(verb ?? ""))
    return hit(2, "remote_change");
  return group === "alert" && verb === "add" ? hit(2, "remote_change") : null;
}

const OWN: [string | string[], Rule][] = [
  ["amtool", amtool],
  [KAFKA_TOOLS.flatMap((n) => [n, `${n}.sh`]), kafkaTool],
  ["nats", nats],
  ["rabbitmqadmin", rabbitmqadmin],
  ["caddy", caddy],
  ["traefik", traefik],
  ["haproxy", haproxy],
  ["varnishd", varnishd],
  ["varnishadm", varnishadm],
];

export const DELIVERY_RULES: ReadonlyMap<string, Rule> = new Map([
  ...table(OWN.map(([names, rule]): [string | string[], Rule] => [names, judged(rule)])),
  ...FORGE_RULES,
]);
