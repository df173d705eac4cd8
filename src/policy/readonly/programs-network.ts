import type { Word } from "../shell/words.js";
import { subsOf, tablePart } from "./define.js";
import { operands } from "./programs-files.js";
import type { ReadEntry, ReadSpec } from "./spec.js";

/**
 * The network as the host sees it: addresses, routes, links, sockets, packet
 * filters and traffic control in their listing forms, and the probes that
 * only send and print (ping, traceroute, a port check).
 */

const { entries, spec } = tablePart();

spec("ping", { deny: ["-f"], valued: ["-c", "-i", "-W", "-w", "-s", "-I", "-t", "-Q"] });
spec("ping6", { deny: ["-f"] });
// ip: every object in its listing forms; `ip -s link`, `ip route get 1.1.1.1`.
const IP_READ: ReadSpec = { subs: subsOf(["show", "list", "ls", "lst", "get", "help"]) };
spec("ip", {
  valued: ["-n", "-netns", "-f", "-family", "-o", "-b", "-batch", "-c", "-color"],
  // ip reads abbreviated one-dash words: -b… is -batch (but -br is -brief), -fo… is -force.
  words: true,
  deny: ["-b", "-ba", "-bat", "-batc", "-batch", "-fo", "-for", "-forc", "-force"],
  subs: Object.fromEntries(
    [
      "addr",
      "address",
      "a",
      "link",
      "l",
      "route",
      "r",
      "ro",
      "neigh",
      "neighbor",
      "neighbour",
      "n",
      "rule",
      "ru",
      "maddr",
      "maddress",
      "mroute",
      "tunnel",
      "tuntap",
      "netns",
      "ntable",
      "xfrm",
      "token",
      "netconf",
      "vrf",
      "nexthop",
      "mptcp",
      "tcp_metrics",
      "stats",
    ]
      .map((o): [string, ReadSpec | true] => [o, IP_READ])
      .concat([["monitor", true]]),
  ),
});
spec("ifconfig", { check: (args) => operands(args).length <= 1 });
spec("route", { check: (args) => operands(args).length === 0 });
spec("arp", { deny: ["-d", "--delete", "-s", "--set", "-f", "--file"] });
const ETHTOOL_READ =
  /^(?:-[iSkgaclmTPdenu]|--(?:driver|statistics|show-[\w-]+|module-info|dump-eeprom|register-dump|identify-none)|\w[\w.@:-]*)$/;
spec("ethtool", {
  check: (args) => args.every((w) => !w.dynamic && !w.value.startsWith("-s") && ETHTOOL_READ.test(w.value)),
});
spec("nc", {
  check: (args) =>
    args.some((w) => /^-[A-Za-z]*z/.test(w.value)) && !args.some((w) => /^-[A-Za-z]*[elcL]/.test(w.value)),
});
// Packet filters and traffic control, listing forms only.
const LISTS_RULES = (args: readonly Word[]) =>
  args.some((w) => /^-[A-Za-z]*[LS]|^--list/.test(w.value)) &&
  !args.some(
    (w) =>
      /^-[A-Za-z]*[ADIRFZNXPEC]|^--(?:append|delete|insert|replace|flush|zero|new|delete-chain|policy|rename-chain|check)/.test(
        w.value,
      ) && !/^-[LSnvxt]+$/.test(w.value),
  );
for (const name of ["iptables", "ip6tables", "iptables-legacy", "iptables-nft", "ebtables", "arptables"])
  spec(name, { check: LISTS_RULES });
for (const name of ["iptables-save", "ip6tables-save"]) spec(name, { deny: ["-f", "--file"] });
spec("nft", {
  deny: ["-f", "--file", "-i", "--interactive"],
  subs: { list: true, "--list": true, describe: true, monitor: true },
});
const TC_READ: ReadSpec = { subs: subsOf(["show", "list", "ls"]) };
spec("tc", {
  subs: { qdisc: TC_READ, class: TC_READ, filter: TC_READ, action: TC_READ, chain: TC_READ, monitor: true },
});
spec("bridge", { subs: { link: TC_READ, fdb: TC_READ, mdb: TC_READ, vlan: TC_READ, monitor: true } });
spec("conntrack", {
  check: (args) =>
    args.every((w) => !/^-[A-Za-z]*[DFUI]$|^--(?:delete|flush|update|create)/.test(w.value)) &&
    args.some((w) => /^-[LSCE]|^--(?:dump|stats|count|event)/.test(w.value)),
});
spec("firewall-cmd", {
  check: (args) =>
    args.length > 0 && args.every((w) => /^--(?:list|get|query|state|info|zone=|permanent$)/.test(w.value)),
});
spec("ufw", { subs: { status: true, show: true, app: { subs: subsOf(["list", "info"]) }, version: true } });
spec("tcpdump", { deny: ["-w", "-z", "-W", "-C", "-G"], valuedLetters: "cisrwCGWzZFEByTjM" });

export const NETWORK_PROGRAMS: ReadonlyMap<string, ReadEntry> = entries;
