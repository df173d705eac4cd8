import { type Args, always, type Hit, hit, type RuleInput, table } from "./args.js";
import { isAuthPath } from "./paths.js";

/**
 * Accounts and network access. Deleting accounts, locking or resetting
 * passwords, flushing firewalls and taking interfaces down are Tier 3: they
 * can lock the operator out of the very host they would repair it from.
 * Adding users, rules or routes is Tier 2.
 */

const ACCOUNT = hit(3, "account_access");
const ACCOUNT_CHANGE = hit(2, "account_change");
const LOCKOUT = hit(3, "network_lockout");
const FIREWALL = hit(2, "firewall_change");

/** `passwd` alone changes the caller's own password interactively (Tier 1, docs/wire-contract.md §5.7 row 51); with arguments it targets accounts. */
function passwd({ args }: RuleInput): Hit | null {
  if (args.length === 0) return null;
  // `passwd -S USER` reports the account's status; the user is an operand.
  const options = args.values.filter((v) => v.startsWith("-"));
  if (
    options.length > 0 &&
    options.every((v) => v === "-S" || v === "--status" || v === "-a" || v === "--all")
  )
    return null;
  return ACCOUNT;
}

function usermod({ args }: RuleInput): Hit | null {
  if (args.short("Lpe") || args.long("lock") || args.long("password") || args.long("expiredate"))
    return ACCOUNT;
  const shell = args.optionValue("-s", "--shell");
  if (shell !== undefined && /(?:nologin|false)$/.test(shell)) return ACCOUNT;
  return ACCOUNT_CHANGE;
}

function visudo({ args }: RuleInput): Hit | null {
  return args.short("c") || args.long("check") ? null : hit(2, "account_access");
}

function sudoedit({ args }: RuleInput): Hit | null {
  return args.operands().some(isAuthPath) ? hit(2, "account_access") : hit(2, "privilege_escalation");
}

/** Options that narrow a rule to some traffic; `-i lo` and a port other than SSH's leave the session alone. */
const SELECTORS = /^(?:-s|--source|--src|-d|--destination|--dst|-m|--match|--uid-owner|-o|--out-interface)$/;

/**
 * An appended or inserted rule that drops or rejects on INPUT or OUTPUT and
 * is narrowed by nothing (`-A INPUT -j DROP`), by an interface other than
 * loopback, or to the SSH port, cuts the session off.
 */
function blanketDrop(v: readonly string[]): boolean {
  const at = v.findIndex((x) => /^-[AI]$|^--(?:append|insert)$/.test(x));
  if (at < 0 || !/^(?:input|output)$/i.test(v[at + 1] ?? "")) return false;
  const j = v.findIndex((x) => x === "-j" || x === "--jump");
  if (j < 0 || !/^(?:drop|reject)$/i.test(v[j + 1] ?? "")) return false;
  const port = v.findIndex((x) => /^--d(?:estination-)?ports?$|^--dport$/.test(x));
  if (port >= 0)
    return (
      /^(?:22|ssh)(?::|,|$)/.test(v[port + 1] ?? "") || /(?:^|,)(?:22|ssh)(?:,|$)/.test(v[port + 1] ?? "")
    );
  const iface = v.findIndex((x) => x === "-i" || x === "--in-interface");
  if (iface >= 0 && v[iface + 1] === "lo") return false;
  return !v.some((x) => SELECTORS.test(x)) && !v.some((x) => x === "-p" || x === "--protocol");
}

/** iptables/ip6tables/ebtables/arptables: -F, -X, a DROP/REJECT default policy and blanket drops are lock-outs. */
function iptables({ args }: RuleInput): Hit | null {
  const clusters = args.clusters();
  if (clusters.some((c) => /[FX]/.test(c)) || args.long("flush") || args.long("delete-chain")) return LOCKOUT;
  const v = args.values;
  for (let i = 0; i < v.length; i++) {
    if ((v[i] === "-P" || v[i] === "--policy") && /^(?:drop|reject)$/i.test(v[i + 2] ?? "")) return LOCKOUT;
  }
  if (blanketDrop(v)) return LOCKOUT;
  if (clusters.some((c) => /[AIDRNEP]/.test(c)) || args.long("append") || args.long("insert"))
    return FIREWALL;
  return null;
}

function nft({ args }: RuleInput): Hit | null {
  if (args.short("f") || args.long("file")) return FIREWALL;
  const words = args.values
    .filter((v) => !v.startsWith("-"))
    .join(" ")
    .toLowerCase()
    .split(/[\s;{}]+/)
    .filter((w) => w !== "");
  for (let i = 0; i < words.length; i++) {
    const [w, next] = [words[i], words[i + 1]];
    if (w === "flush" && (next === "ruleset" || next === "table" || next === "chain")) return LOCKOUT;
    if ((w === "delete" || w === "destroy") && (next === "table" || next === "chain")) return LOCKOUT;
    // A base chain whose policy drops (`policy drop;`) refuses everything no rule accepts.
    if (w === "policy" && next === "drop") return LOCKOUT;
  }
  if (nftBlanketDrop(words)) return LOCKOUT;
  return words.some((w) =>
    ["add", "insert", "create", "replace", "delete", "flush", "destroy", "reset"].includes(w),
  )
    ? FIREWALL
    : null;
}

/**
 * `nft add rule inet filter input drop`, `… input tcp dport 22 drop`: a rule on
 * an input or output chain whose verdict is drop or reject with no match, or
 * matching the SSH port.
 */
function nftBlanketDrop(words: readonly string[]): boolean {
  const at = words.findIndex((w, i) => (w === "add" || w === "insert") && words[i + 1] === "rule");
  if (at < 0) return false;
  const chain = words[at + 4] ?? "";
  const body = words.slice(at + 5);
  const verdict = body[body.length - 1];
  if (!/input|output/.test(chain) || (verdict !== "drop" && verdict !== "reject")) return false;
  const dport = body.indexOf("dport");
  if (dport >= 0) return /^(?:22|ssh|\{?22,?)$/.test(body[dport + 1] ?? "");
  return body.filter((w) => w !== "counter" && w !== "log").length === 1;
}

const IP_VALUED = new Set([
  "-n",
  "-netns",
  "-f",
  "-family",
  "-rc",
  "-rcvbuf",
  "-b",
  "-batch",
  "-l",
  "-loops",
]);

function isAbbrev(word: string | undefined, full: string, min = 1): boolean {
  return word !== undefined && word.length >= min && full.startsWith(word);
}

/** iproute2 takes any prefix of its objects and verbs: `ip l s eth0 down`, `ip a f dev eth0`, `ip r flush all`. */
function ip({ args }: RuleInput): Hit | null {
  const found = args.subcommand(IP_VALUED);
  if (found === null) return null;
  const ops = args.from(found.index).values.map((v) => v.toLowerCase());
  const [object, verb] = ops;
  const rest = ops.slice(2);
  if (isAbbrev(object, "link")) {
    if (
      isAbbrev(verb, "delete", 1) ||
      (isAbbrev(verb, "set", 1) && (rest.includes("down") || rest.includes("netns")))
    )
      return LOCKOUT;
    return isAbbrev(verb, "set", 1) || isAbbrev(verb, "add", 1) || isAbbrev(verb, "change", 1)
      ? FIREWALL
      : null;
  }
  if (isAbbrev(object, "address") || isAbbrev(object, "route") || isAbbrev(object, "rule", 2)) {
    if (isAbbrev(verb, "flush", 1)) return LOCKOUT;
    if (isAbbrev(verb, "delete", 1) || verb === "del") {
      const defaultRoute = rest.includes("default") || rest.includes("0.0.0.0/0") || rest.includes("::/0");
      return isAbbrev(object, "route") && !defaultRoute ? FIREWALL : LOCKOUT;
    }
    const changes = ["add", "change", "replace", "append", "prepend"];
    return changes.some((c) => isAbbrev(verb, c, 1)) ? FIREWALL : null;
  }
  if (isAbbrev(object, "netns", 3) || isAbbrev(object, "neighbour", 2) || isAbbrev(object, "tunnel", 2)) {
    return isAbbrev(verb, "delete", 1) || isAbbrev(verb, "add", 1) || isAbbrev(verb, "flush", 1)
      ? FIREWALL
      : null;
  }
  return null;
}

function ifconfig({ args }: RuleInput): Hit | null {
  const ops = args.operands();
  if (ops.some((o) => o.toLowerCase() === "down")) return LOCKOUT;
  return ops.length >= 2 ? FIREWALL : null;
}

function nmcli({ args }: RuleInput): Hit | null {
  const ops = args.operands().map((v) => v.toLowerCase());
  const [object, verb, third] = ops;
  if (object === undefined || verb === undefined) return null;
  if (isAbbrev(object, "connection")) {
    if (isAbbrev(verb, "down", 2) || isAbbrev(verb, "delete", 2)) return LOCKOUT;
    return ["up", "modify", "add", "edit", "reload", "import", "clone"].some((c) => isAbbrev(verb, c, 2))
      ? FIREWALL
      : null;
  }
  if (isAbbrev(object, "device")) {
    if (isAbbrev(verb, "disconnect", 2) || isAbbrev(verb, "delete", 2) || isAbbrev(verb, "down", 2))
      return LOCKOUT;
    return ["set", "connect", "modify", "reapply", "up"].some((c) => isAbbrev(verb, c, 2)) ? FIREWALL : null;
  }
  if (isAbbrev(object, "networking") || isAbbrev(object, "radio")) {
    return ops.includes("off") ? LOCKOUT : third === "on" || verb === "on" ? FIREWALL : null;
  }
  return null;
}

function ufw({ args }: RuleInput): Hit | null {
  const ops = args.operands().map((v) => v.toLowerCase());
  const [verb, next] = ops;
  // Enabling a default-deny firewall cuts SSH off unless an allow rule exists, which we cannot see.
  if (verb === "enable") return LOCKOUT;
  // reset deletes every rule the operator wrote (and disables the firewall): they are not kept anywhere.
  if (verb === "reset") return LOCKOUT;
  if (verb === "default" && (next === "deny" || next === "reject")) return LOCKOUT;
  const changes = [
    "allow",
    "deny",
    "reject",
    "limit",
    "delete",
    "insert",
    "prepend",
    "disable",
    "reset",
    "route",
    "reload",
    "default",
    "logging",
  ];
  return verb !== undefined && changes.includes(verb) ? FIREWALL : null;
}

function firewallCmd({ args }: RuleInput): Hit | null {
  const longs = args.longs();
  if (longs.includes("panic-on")) return LOCKOUT;
  const zone = args.optionValue("--set-default-zone")?.toLowerCase();
  if (zone === "drop" || zone === "block") return LOCKOUT;
  const target = args.optionValue("--set-target")?.toLowerCase();
  if (target === "drop" || target === "reject" || target === "%%reject%%") return LOCKOUT;
  const reads = (l: string) =>
    l.startsWith("list") ||
    l.startsWith("get") ||
    l.startsWith("query") ||
    l === "state" ||
    l.startsWith("info") ||
    l === "zone";
  return longs.some((l) => !reads(l)) ? FIREWALL : null;
}

function networkctl({ args }: RuleInput): Hit | null {
  const verb = args.operands()[0]?.toLowerCase();
  if (verb === "down" || verb === "delete") return LOCKOUT;
  return verb === "up" || verb === "reload" || verb === "reconfigure" || verb === "renew" ? FIREWALL : null;
}

function route({ args }: RuleInput): Hit | null {
  const ops = args.values.map((v) => v.toLowerCase());
  if (ops.includes("del")) return ops.includes("default") || ops.includes("0.0.0.0") ? LOCKOUT : FIREWALL;
  return ops.includes("add") ? FIREWALL : null;
}

/** Tunnels the operator may be connected through. */
function vpnDown(verbs: { down: string[]; up: string[] }) {
  return ({ args }: { args: Args }): Hit | null => {
    const verb = args.operands()[0]?.toLowerCase();
    if (verb !== undefined && verbs.down.includes(verb)) return LOCKOUT;
    return verb !== undefined && verbs.up.includes(verb) ? FIREWALL : null;
  };
}

export const ACCESS_RULES = table([
  [["userdel", "deluser", "chpasswd", "gpasswd"], always(3, "account_access")],
  ["passwd", passwd],
  ["usermod", usermod],
  [["chage"], ({ args }) => (args.short("l") || args.long("list") ? null : ACCOUNT_CHANGE)],
  [
    [
      "useradd",
      "adduser",
      "groupadd",
      "addgroup",
      "groupmod",
      "groupdel",
      "delgroup",
      "newusers",
      "chfn",
      "chsh",
    ],
    always(2, "account_change"),
  ],
  ["visudo", visudo],
  [["vipw", "vigr", "pam-auth-update", "authconfig", "authselect"], always(2, "account_access")],
  ["sudoedit", sudoedit],
  [
    [
      "iptables",
      "ip6tables",
      "iptables-legacy",
      "iptables-nft",
      "ip6tables-legacy",
      "ip6tables-nft",
      "ebtables",
      "arptables",
    ],
    iptables,
  ],
  [
    ["iptables-restore", "ip6tables-restore", "ebtables-restore", "iptables-apply"],
    always(2, "firewall_change"),
  ],
  ["nft", nft],
  ["ip", ip],
  ["ifconfig", ifconfig],
  [["ifdown", "if-down"], always(3, "network_lockout")],
  [["ifup"], always(2, "firewall_change")],
  ["nmcli", nmcli],
  ["networkctl", networkctl],
  ["route", route],
  ["ufw", ufw],
  ["firewall-cmd", firewallCmd],
  ["ssh-copy-id", always(2, "firewall_change")],
  ["wg-quick", vpnDown({ down: ["down"], up: ["up"] })],
  ["tailscale", vpnDown({ down: ["down", "logout"], up: ["up", "set", "login"] })],
]);
