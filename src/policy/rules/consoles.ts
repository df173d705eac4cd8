import { type Args, type Hit, hit, type Rule, type RuleInput } from "./args.js";
import { ETCD_VALUED, etcdSnapshot, verbs } from "./data-import.js";
import { NODETOOL_VALUED } from "./option-lists.js";

/**
 * The consoles of clustered services: etcd, Consul, Vault, RabbitMQ, Cassandra's nodetool. By
 * kind: deleting keys, queues, users, snapshots or a member's data, and restoring a snapshot
 * over the live state, cannot be undone (Tier 3); writes, grants, settings, membership and
 * starting or stopping the service are a change someone would notice (Tier 2). Listing and status
 * commands read (readonly/programs-services.ts, programs-clusters.ts). data.ts registers these.
 */

const DESTROY = hit(3, "data_store_destruction");
const CHANGE = hit(2, "data_store_change");
const SERVICE = hit(2, "service_change");
const MEMBERSHIP = hit(2, "infrastructure_change");
const ACCOUNT = hit(2, "account_change");

const is = (word: string | undefined, ...names: string[]): boolean =>
  word !== undefined && names.includes(word);

/**
 * etcdctl: `del` removes keys and `lease revoke` every key attached to the lease; removing a user
 * or a role is a DROP USER. Puts, transactions, leases, defragmentation, auth and membership
 * change the cluster; `snapshot restore` and compaction are judged in data-import.ts.
 */
function etcdctl(input: RuleInput): Hit | null {
  const [a, b] = verbs(input.args, ETCD_VALUED);
  if (a === "del" || (a === "lease" && b === "revoke")) return DESTROY;
  if (is(a, "user", "role") && b === "delete") return DESTROY;
  if (is(a, "put", "txn", "defrag", "lock", "elect", "make-mirror")) return CHANGE;
  if (a === "lease" && is(b, "grant", "keep-alive")) return CHANGE;
  if (a === "alarm" && b === "disarm") return CHANGE;
  if (is(a, "user", "role", "auth") && b !== undefined && !is(b, "list", "get", "status")) return CHANGE;
  if ((a === "member" && is(b, "add", "remove", "update", "promote")) || is(a, "move-leader", "downgrade"))
    return MEMBERSHIP;
  return etcdSnapshot(input);
}

const CONSUL_VALUED = new Set(["-http-addr", "-token", "-token-file", "-datacenter", "-namespace", "-id"]);

/** Consul's ACL objects: deleting one ends every login through it; creating or updating one grants. */
function consulAcl(b: string | undefined, c: string | undefined): Hit | null {
  if (c === "delete") return hit(3, "account_access");
  return is(b, "bootstrap", "set-agent-token") || is(c, "create", "update", "clone") ? ACCOUNT : null;
}

/**
 * Consul: `kv delete` removes keys (with -recurse a whole tree), `snapshot restore` replaces the
 * servers' state, and deleting a namespace or an admin partition removes everything in it.
 */
function consul({ args }: RuleInput): Hit | null {
  const [a, b, c] = verbs(args, CONSUL_VALUED);
  if (a === "kv") return b === "delete" ? DESTROY : is(b, "put", "import") ? CHANGE : null;
  if (a === "snapshot" && b === "restore") return DESTROY;
  if (is(a, "namespace", "partition") && b === "delete") return hit(3, "infrastructure_destruction");
  if (a === "acl") return consulAcl(b, c);
  if (a === "intention" && is(b, "create", "delete")) return hit(2, "firewall_change");
  if (is(a, "config", "keyring") && (is(b, "write", "delete") || keyringChange(args)))
    return hit(2, "config_change");
  if (a === "operator" && b === "autopilot" && c === "set-config") return hit(2, "config_change");
  if (a === "operator" && b === "raft" && is(c, "remove-peer", "transfer-leader")) return MEMBERSHIP;
  if (is(a, "force-leave", "join") || (a === "peering" && is(b, "establish", "delete"))) return MEMBERSHIP;
  if (is(a, "leave", "reload") || (a === "services" && is(b, "register", "deregister"))) return SERVICE;
  if (a === "maint" && args.values.some((v) => /^-(?:enable|disable)$/.test(v))) return SERVICE;
  // A command run under a lock, an event that fires watch handlers (`consul exec` is a carrier:
  // wrappers/carriers.ts judges the command it runs on every node).
  return is(a, "lock", "event") ? hit(2, "remote_change") : null;
}

function keyringChange(args: Args): boolean {
  return args.values.some((v) => /^-(?:install|use|remove)(?:=|$)/.test(v));
}

const VAULT_VALUED = new Set(["-address", "--address", "-namespace", "--namespace", "-mount", "--mount"]);

/**
 * Vault's operator commands. Sealing makes every secret unreadable until enough key holders
 * unseal it again, an outage the operator cannot end alone (Tier 3); restoring a raft snapshot
 * replaces the stored data. Unsealing, stepping down, rekeying and the rest are Tier 2.
 */
function vaultOperator(b: string | undefined, c: string | undefined, d: string | undefined): Hit | null {
  if (b === "seal") return hit(3, "service_change");
  if (b === "raft") {
    if (c === "snapshot") return d === "restore" ? DESTROY : null;
    if (c === "autopilot") return d === "set-config" ? hit(2, "config_change") : null;
    return is(c, "remove-peer", "join") ? MEMBERSHIP : null;
  }
  return is(b, "unseal", "step-down", "init", "rekey", "rotate", "generate-root", "migrate") ? SERVICE : null;
}

/**
 * Vault. Destroying secret versions (`kv destroy`), their metadata and every version
 * (`kv metadata delete`), disabling a secrets engine (every secret under its path goes), deleting
 * a path and disabling an auth method (every login through it) cannot be undone: Tier 3. So is
 * `kv delete`: on a version-1 mount it is final, and the command does not say which version the
 * mount is. Writes, enables and policy changes are Tier 2.
 */
function vault({ args }: RuleInput): Hit | null {
  const [a, b, c, d] = verbs(args, VAULT_VALUED, 4);
  if (a === "operator") return vaultOperator(b, c, d);
  if (a === "kv" && (is(b, "delete", "destroy") || (b === "metadata" && c === "delete"))) return DESTROY;
  if (a === "secrets" && b === "disable") return DESTROY;
  if (a === "delete") return DESTROY;
  if (a === "auth" && b === "disable") return hit(3, "account_access");
  if (a === "kv" && is(b, "put", "patch", "undelete", "rollback", "enable-versioning")) return CHANGE;
  if (a === "kv" && b === "metadata" && is(c, "put", "patch")) return CHANGE;
  if (is(a, "write", "patch")) return CHANGE;
  if (
    is(a, "secrets", "auth", "policy", "audit") &&
    is(b, "enable", "tune", "move", "write", "delete", "disable")
  )
    return CHANGE;
  return null;
}

const RABBITMQ_VALUED = new Set(["-n", "--node", "-p", "--vhost", "-t", "--timeout", "--erlang-cookie"]);
const RABBITMQ_ACCOUNTS =
  /^(?:add_user|change_password|clear_password|set_user_tags|(?:set|clear)_(?:topic_)?permissions|(?:set|clear)_user_limits)$/;
const RABBITMQ_CHANGES =
  /^(?:(?:set|clear|add|stop|start|close|sync|cancel|restart|enable|suspend|resume|join|update|change|rename|rotate|trace|force)_\w+|stop|shutdown|hipe_compile|delete_shovel)$/;

/**
 * rabbitmqctl: resetting a node wipes its queues, messages and settings; deleting or purging a
 * queue, a virtual host or a user loses what it held; forgetting a cluster node leaves it to be
 * reset before it may join again (Tier 3). `eval` runs the Erlang it is given.
 */
function rabbitmqctl({ args }: RuleInput): Hit | null {
  const cmd = args.subcommand(RABBITMQ_VALUED)?.value;
  if (cmd === undefined) return null;
  if (/^(?:reset|force_reset|delete_queue|purge_queue|delete_vhost|delete_user)$/.test(cmd)) return DESTROY;
  if (cmd === "forget_cluster_node") return hit(3, "infrastructure_destruction");
  if (cmd === "eval") return hit(2, "inline_interpreter");
  if (cmd === "eval_file") return hit(2, "script_file");
  if (RABBITMQ_ACCOUNTS.test(cmd)) return ACCOUNT;
  return RABBITMQ_CHANGES.test(cmd) ? SERVICE : null;
}

const NODETOOL_DATA =
  /^(?:flush|repair|cleanup|compact|forcecompact|garbagecollect|scrub|snapshot|rebuild|rebuild_index|refresh|import|upgradesstables|relocatesstables|recompress_sstables|replaybatchlog|resetlocalschema|reloadlocalschema)$/;
const NODETOOL_SERVICE =
  /^(?:(?:set|enable|disable|invalidate|reload|pause|resume)[a-z_]*|drain|stopdaemon|stop|move|join|bootstrap|abortbootstrap|repair_admin|sjk)$/;

/**
 * nodetool: clearing snapshots deletes the backups they are, truncating hints loses the writes
 * they carry, and decommissioning, removing or assassinating a node takes it out of the ring
 * (Tier 3). Flushes, repairs, compactions, snapshots and the setters are Tier 2.
 */
function nodetool({ args }: RuleInput): Hit | null {
  const cmd = args.subcommand(NODETOOL_VALUED)?.value.toLowerCase();
  if (cmd === undefined) return null;
  if (is(cmd, "clearsnapshot", "truncatehints")) return DESTROY;
  if (is(cmd, "decommission", "removenode", "assassinate")) return hit(3, "infrastructure_destruction");
  if (NODETOOL_DATA.test(cmd)) return CHANGE;
  return NODETOOL_SERVICE.test(cmd) ? SERVICE : null;
}

export const CONSOLE_ENTRIES: [string, Rule][] = [
  ["etcdctl", etcdctl],
  ["consul", consul],
  ["vault", vault],
  ["rabbitmqctl", rabbitmqctl],
  [
    "rabbitmq-plugins",
    ({ args }) => (is(args.subcommand(RABBITMQ_VALUED)?.value, "enable", "disable", "set") ? SERVICE : null),
  ],
  ["nodetool", nodetool],
];
