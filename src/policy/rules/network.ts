import { type Hit, hit, type RuleInput, table } from "./args.js";

/**
 * Network controls beyond the firewall tables (access.ts): traffic shaping
 * that drops or stalls packets, releasing the DHCP lease, radio kill
 * switches, link settings. What can cut the operator's own connection is
 * Tier 3 (network_lockout); other changes are Tier 2 (firewall_change);
 * `show`/`list` forms read.
 */

const LOCKOUT = hit(3, "network_lockout");
const CHANGE = hit(2, "firewall_change");

/** A percentage argument (`loss 30%`, `loss random 100%`). */
function percentAfter(words: readonly string[], at: number): number | null {
  for (let i = at + 1; i < Math.min(words.length, at + 3); i++) {
    const m = /^(\d+(?:\.\d+)?)%?$/.exec(words[i]!);
    if (m !== null) return Number(m[1]);
  }
  return null;
}

/** A time argument in milliseconds (`delay 5s`, `delay 2000ms`, `delay 3sec`). */
function millisAfter(words: readonly string[], at: number): number | null {
  const m = /^(\d+(?:\.\d+)?)(us|usec|ms|msec|s|sec|secs)?$/.exec(words[at + 1] ?? "");
  if (m === null) return null;
  const n = Number(m[1]);
  const unit = m[2] ?? "us"; // tc reads a bare number as microseconds
  return unit.startsWith("u") ? n / 1000 : unit.startsWith("m") ? n : n * 1000;
}

/** A rate in bits per second (`rate 1kbit`, `rate 10mbit`, `rate 8bps` = bytes). */
function bitsPerSecond(word: string | undefined): number | null {
  const m = /^(\d+(?:\.\d+)?)([kmgt]?)(bit|bps)?$/.exec(word ?? "");
  if (m === null) return null;
  const scale = { "": 1, k: 1e3, m: 1e6, g: 1e9, t: 1e12 }[m[2] as "" | "k" | "m" | "g" | "t"];
  return Number(m[1]) * scale * (m[3] === "bps" ? 8 : 1);
}

/**
 * tc: a qdisc that loses or corrupts most packets, delays them by a second or
 * more, or throttles a link below what a shell session needs, and a filter
 * whose action drops, cut the host off (Tier 3); other qdisc, class and filter
 * changes are Tier 2; show/list read.
 */
function tc({ args }: RuleInput): Hit | null {
  const words = args.values.filter((v) => !v.startsWith("-")).map((v) => v.toLowerCase());
  const [object, verb] = words;
  if (object === undefined || verb === undefined) return null;
  if (/^(?:s|sh|sho|show|l|ls|list|monitor|help)$/.test(verb)) return null;
  const changes = /^(?:a|ad|add|c|ch|change|r|re|replace|d|de|del|delete|link)$/.test(verb);
  if (!changes) return null;
  if (/^(?:d|de|del|delete)$/.test(verb)) return CHANGE;
  for (let i = 2; i < words.length; i++) {
    const w = words[i]!;
    if ((w === "loss" || w === "drop" || w === "corrupt") && (percentAfter(words, i) ?? 0) >= 30)
      return LOCKOUT;
    if (w === "delay" && (millisAfter(words, i) ?? 0) >= 1000) return LOCKOUT;
    if (w === "rate" && (bitsPerSecond(words[i + 1]) ?? Number.POSITIVE_INFINITY) < 64_000) return LOCKOUT;
    // A filter (or a policer's exceed action) that drops what it matches: `action drop`, `police … drop`.
    if (object.startsWith("f") && (w === "drop" || w === "shot")) return LOCKOUT;
  }
  return CHANGE;
}

/** ethtool reads unless told to change link, offload, ring or channel settings, or to flash or reset. */
function ethtool({ args }: RuleInput): Hit | null {
  const writes = args.values.some((v) =>
    /^-(?:s|K|G|L|A|C|E|f|r|X|N|U|W)$|^--(?:change|features|offload|set-ring|set-channels|pause|coalesce|change-eeprom|flash|negotiate|set-rxfh-indir|config-nfc|config-ntuple|reset|set-eee|set-fec|set-priv-flags|set-phy-tunable|set-module)/.test(
      v,
    ),
  );
  if (!writes) return null;
  // Forcing a speed or duplex the partner does not support, or a reset, drops the link.
  const words = args.values.map((v) => v.toLowerCase());
  if (words.includes("--reset") || words.includes("autoneg") || words.includes("speed")) return LOCKOUT;
  return CHANGE;
}

/** dhclient -r/-x and dhcpcd -k/-x release the lease: the address goes away. */
function dhcpRelease(letters: string, longs: string[]) {
  return ({ args }: RuleInput): Hit | null =>
    args.short(letters) || longs.some((l) => args.long(l)) ? LOCKOUT : null;
}

/** rfkill: blocking every radio, or the wireless LAN, takes a Wi-Fi host off the network. */
function rfkill({ args }: RuleInput): Hit | null {
  const [verb, what] = args.operands().map((v) => v.toLowerCase());
  if (verb !== "block") return verb === "unblock" || verb === "toggle" ? CHANGE : null;
  return what === undefined || /^(?:all|wlan|wifi|wwan|\d+)$/.test(what) ? LOCKOUT : CHANGE;
}

/** netplan apply/try (and generate) rewrite the live network configuration. */
function netplan({ args }: RuleInput): Hit | null {
  const verb = args.subcommand()?.value.toLowerCase();
  return verb === "apply" || verb === "try" || verb === "set" ? CHANGE : null;
}

/**
 * macOS networksetup runs the command its first option names; every option word is judged, in
 * case a later one is run too. Turning a service, its IPv4 or IPv6, or the Wi-Fi power off,
 * removing a service or a location, switching to another location (its services replace the
 * live ones) and hanging up a PPPoE link can cut the operator off; the other setters and the
 * commands that create, rename or reorder services change the network. The `-list…`, `-get…`,
 * `-show…`, `-is…` and `-print…` commands report.
 */
function networksetup({ args }: RuleInput): Hit | null {
  const v = args.values.map((x) => x.toLowerCase());
  const options = v.filter((x) => x.startsWith("-"));
  const cuts = (o: string) =>
    /^-(?:removenetworkservice|deletelocation|switchtolocation|disconnectpppoeservice|setv[46]off$)/.test(
      o,
    ) ||
    (/^-set/.test(o) && v.includes("off"));
  if (options.some(cuts)) return LOCKOUT;
  const changes =
    /^-(?:set|remove|delete|create|add|duplicate|rename|order|detectnewhardware|import|connectpppoeservice)/;
  return options.some((o) => changes.test(o)) ? CHANGE : null;
}

/**
 * macOS scutil: `--set` names the host, `--renew` asks DHCP for a lease again, `--prefs` edits the
 * network preferences with the commands on its stdin, and the interface switches with a value set
 * them. `--get`, `--dns`, `--proxy`, `--nwi`, `-r` and `-w` report.
 */
function scutil({ args }: RuleInput): Hit | null {
  const options = args.values.map((v) => v.toLowerCase()).filter((v) => v.startsWith("--"));
  if (options.includes("--set")) return hit(2, "host_change");
  if (options.includes("--prefs")) return hit(2, "config_change");
  if (options.includes("--renew")) return CHANGE;
  const switches = options.includes("--allow-new-interfaces") || options.includes("--disable-until-needed");
  return switches && args.values.some((w) => /^(?:on|off)$/i.test(w)) ? CHANGE : null;
}

/** pfctl's options that take a value, in the rest of their cluster or the next word (`-sr`, `-s rules`). */
const PFCTL_VALUED = "aDFfiKkLopsStTxXV";

/**
 * pfctl's options in the order given, each with its value ("" for a flag), and the operands after
 * them (the addresses of `-T add`). BSD getopt stops at the first operand. `complete` is false when
 * the last option lacks its value (pfctl then prints its usage).
 */
export function pfctlOptions(values: readonly string[]): {
  options: [string, string][];
  operands: string[];
  complete: boolean;
} {
  const options: [string, string][] = [];
  let i = 0;
  let complete = true;
  for (; i < values.length; i++) {
    const v = values[i]!;
    if (v === "--") {
      i++;
      break;
    }
    if (!v.startsWith("-") || v.length < 2) break;
    for (let k = 1; k < v.length; k++) {
      const letter = v[k]!;
      if (!PFCTL_VALUED.includes(letter)) {
        options.push([letter, ""]);
        continue;
      }
      const value = k + 1 < v.length ? v.slice(k + 1) : values[++i];
      complete &&= value !== undefined;
      options.push([letter, value ?? ""]);
      break;
    }
  }
  return { options, operands: values.slice(i), complete };
}

/** `-T fl`: pfctl's table commands, taken in any leading part so that an abbreviation is not missed. */
const abbreviates = (word: string, command: string): boolean => word !== "" && command.startsWith(word);

/**
 * pfctl drives the pf packet filter (FreeBSD, OpenBSD, macOS). Enabling it (`-e`, `-E`) applies a
 * ruleset that may not pass the operator's connection, and flushing anything (`-F rules|states|all…`)
 * or a table (`-T flush`, `-T kill`) drops what kept the connection passing: network_lockout, as
 * `ufw enable` and `iptables -F`. Loading rules (`-f` without the parse-only `-n`), disabling pf,
 * killing states or source nodes, editing a table, loading states and setting the debug level
 * change the filter (Tier 2). `-s`, `-T show|test` and the counters' reset (`-z`) are left lower.
 */
function pfctl({ args }: RuleInput): Hit | null {
  const call = pfctlOptions(args.values);
  const has = (letter: string) => call.options.some(([l]) => l === letter);
  const tables = call.options.filter(([l]) => l === "T").map(([, v]) => v.toLowerCase());
  const table = (...commands: string[]) => tables.some((t) => commands.some((c) => abbreviates(t, c)));
  if (has("F") || has("e") || has("E") || table("flush", "kill")) return LOCKOUT;
  if (table("add", "delete", "replace", "load", "expire")) return CHANGE;
  if (has("f") && !has("n")) return CHANGE;
  return ["d", "X", "k", "K", "L", "x"].some(has) ? CHANGE : null;
}

/** `iw dev wlan0 disconnect`, `iw dev wlan0 del`: the wireless link goes away. */
function iw({ args }: RuleInput): Hit | null {
  const words = args.values.map((v) => v.toLowerCase());
  if (words.includes("disconnect") || words.includes("del")) return LOCKOUT;
  return words.includes("set") || words.includes("connect") ? CHANGE : null;
}

/** `ss -K` closes the sockets it matches: the connections of the processes that hold them end. */
function ss({ args }: RuleInput): Hit | null {
  return args.short("K") || args.long("kill") ? hit(2, "process_change") : null;
}

export const NETWORK_RULES = table([
  ["ss", ss],
  ["tc", tc],
  ["ethtool", ethtool],
  ["dhclient", dhcpRelease("rx", ["release"])],
  ["dhcpcd", dhcpRelease("kx", ["release", "exit"])],
  ["rfkill", rfkill],
  ["netplan", netplan],
  ["networksetup", networksetup],
  ["scutil", scutil],
  ["pfctl", pfctl],
  ["iw", iw],
]);
