/**
 * Canonical-IP widening of host tokens (docs/wire-contract.md §5.5). A deny rule written
 * against `169.254.169.254` must also catch `2852039166`, `0xa9fea9fe` or
 * `::ffff:a9fe:a9fe`, because the resolver dials all of them the same way.
 * Pure text work: no DNS, no sockets.
 */

import { createRequire } from "node:module";
import type Ipaddr from "ipaddr.js";

const requireHere = createRequire(import.meta.url);

let loaded: typeof Ipaddr | undefined;

/**
 * ipaddr.js, loaded on the first address rather than at start-up (most calls
 * name no host) and kept: a require() resolves its path again every time.
 */
function ipaddr(): typeof Ipaddr {
  loaded ??= requireHere("ipaddr.js") as typeof Ipaddr;
  return loaded;
}

// Longer than any address with a zone id; such tokens are host names.
const MAX_TOKEN = 256;

const STRICT_IPV4 =
  /^(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$/;
const HEXTET = /^[0-9A-Fa-f]{1,4}$/;
const ADDRESS_CHARS = /^[0-9A-Fa-fxX.]+$/;
const BARE_HEX_PREFIX = /^0x$/i;

/**
 * The BSD `inet_aton` grammar: 1 to 4 dot-separated parts, each decimal,
 * octal after a leading 0 or hex after 0x; the last part fills all remaining
 * bytes (`127.1` is 127.0.0.1, `2130706433` too). Null when malformed.
 */
export function parseInetAton(text: string): string | null {
  // The C library reads a bare "0x" part as 0; ipaddr.js refuses it.
  const spelled = text
    .split(".")
    .map((part) => (BARE_HEX_PREFIX.test(part) ? "0" : part))
    .join(".");
  try {
    return ipaddr().IPv4.parse(spelled).toString();
  } catch {
    return null;
  }
}

interface Ipv6 {
  hextets: number[];
  zone: string;
}

/**
 * Standard IPv6 text (RFC 4291 §2.2, with an optional `%zone`), as Python's
 * ipaddress accepts it: groups of at most four hex digits, a dotted quad only
 * as the last group. ipaddr.js is more lenient on both and narrower on zones,
 * so those are checked here and the rest is left to it.
 */
export function parseIpv6(text: string): Ipv6 | null {
  const percent = text.indexOf("%");
  const address = percent === -1 ? text : text.slice(0, percent);
  const zone = percent === -1 ? "" : text.slice(percent + 1);
  if (percent !== -1 && (zone === "" || zone.includes("%"))) return null;
  const groups = address.split(":");
  const last = groups.length - 1;
  if (!groups.every((g, i) => g === "" || HEXTET.test(g) || (i === last && STRICT_IPV4.test(g)))) return null;
  try {
    return { hextets: ipaddr().IPv6.parse(address).parts, zone };
  } catch {
    return null;
  }
}

/** Lower-case hex, the first longest run of two or more zero groups as `::` (RFC 5952; what Python prints). */
export function formatIpv6({ hextets, zone }: Ipv6): string {
  const text = new (ipaddr().IPv6)(hextets).toRFC5952String();
  return zone === "" ? text : `${text}%${zone}`;
}

function looksIpish(token: string): boolean {
  if (token.includes(".") || /^0x/i.test(token)) return true;
  return /^[0-9]+$/.test(token) && Number(token) > 65535;
}

function bareToken(raw: string): string {
  let token = raw.trim();
  // `host` accepts `user@host`; the part after the last "@" is what is dialled.
  const at = token.lastIndexOf("@");
  if (at !== -1) token = token.slice(at + 1);
  return token.replace(/^\[+/, "").replace(/\]+$/, "");
}

/** Canonical address forms of one host token (brackets and `user@` stripped), without DNS. */
export function canonicalIpForms(raw: string): string[] {
  const token = bareToken(raw);
  if (token === "" || token.length > MAX_TOKEN) return [];
  // Fast exit for host names: without a ":" only hex digits, "x" and dots can spell an address.
  if (!token.includes(":") && !ADDRESS_CHARS.test(token)) return [];
  const forms: string[] = [];
  if (STRICT_IPV4.test(token)) {
    forms.push(token);
  } else if (token.includes(":")) {
    const v6 = parseIpv6(token);
    if (v6) {
      forms.push(formatIpv6(v6));
      const address = new (ipaddr().IPv6)(v6.hextets);
      if (address.isIPv4MappedAddress()) forms.push(address.toIPv4Address().toString());
    }
  }
  if (looksIpish(token)) {
    // A single trailing dot is the absolute-name spelling some resolvers accept.
    const quad = parseInetAton(token.endsWith(".") ? token.slice(0, -1) : token);
    if (quad !== null && !forms.includes(quad)) forms.push(quad);
  }
  return forms.filter((form) => form !== token);
}

/**
 * Runs of address characters in the text. A form counts as present only as a
 * whole run, so a bystander such as `127.0.0.10` in the command cannot
 * suppress the form `127.0.0.1` that a word-bounded deny rule looks for.
 */
function addressRuns(text: string): Set<string> {
  return new Set(text.match(/[0-9A-Za-z.:%_-]+/g) ?? []);
}

/**
 * Append (after one space, space-separated) the canonical IP forms of each
 * host token that the text does not already contain. Host names and small
 * integers add nothing. Linear in the size of text and hosts.
 */
export function widenHostTokens(text: string, hosts: readonly string[]): string {
  let present: Set<string> | null = null;
  const added: string[] = [];
  const seen = new Set<string>();
  for (const host of hosts) {
    for (const form of canonicalIpForms(host)) {
      if (seen.has(form)) continue;
      seen.add(form);
      present ??= addressRuns(text);
      if (!present.has(form)) added.push(form);
    }
  }
  return added.length === 0 ? text : `${text} ${added.join(" ")}`;
}

/** Host tokens of a `hosts` argument: comma and/or whitespace separated, empties dropped. */
export function splitHostList(hosts: string): string[] {
  return hosts.split(/[\s,]+/).filter((token) => token !== "");
}
