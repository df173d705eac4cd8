/**
 * Canonical-IP widening of host tokens (docs/wire-contract.md §5.5). A deny rule written
 * against `169.254.169.254` must also catch `2852039166`, `0xa9fea9fe` or
 * `::ffff:a9fe:a9fe`, because the resolver dials all of them the same way.
 * Pure text work: no DNS, no sockets.
 */

// Longer than any address with a zone id; such tokens are host names.
const MAX_TOKEN = 256;
const UINT32_MAX = 0xffffffff;

const STRICT_IPV4 =
  /^(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$/;
const HEXTET = /^[0-9A-Fa-f]{1,4}$/;
const ADDRESS_CHARS = /^[0-9A-Fa-fxX.]+$/;

function dottedQuad(value: number): string {
  return `${value >>> 24}.${(value >>> 16) & 0xff}.${(value >>> 8) & 0xff}.${value & 0xff}`;
}

/** One inet_aton part: decimal, octal after a leading 0, hex after 0x; null when malformed or over 32 bits. */
function parseAtonPart(part: string): number | null {
  let value: number;
  if (/^0[xX][0-9A-Fa-f]*$/.test(part)) {
    value = part.length === 2 ? 0 : Number.parseInt(part.slice(2), 16); // "0x" alone is 0, as in the C library
  } else if (/^0[0-7]*$/.test(part)) {
    value = Number.parseInt(part, 8);
  } else if (/^[1-9][0-9]*$/.test(part)) {
    value = Number.parseInt(part, 10);
  } else {
    return null;
  }
  // Past 2^53 the value is inexact, but then it is far above the limit anyway.
  return value > UINT32_MAX ? null : value;
}

/**
 * The BSD `inet_aton` grammar: 1 to 4 dot-separated parts; the last part
 * fills all remaining bytes (`127.1` is 127.0.0.1, `2130706433` too).
 */
export function parseInetAton(text: string): string | null {
  const parts = text.split(".");
  if (parts.length > 4) return null;
  const values: number[] = [];
  for (const part of parts) {
    const value = parseAtonPart(part);
    if (value === null) return null;
    values.push(value);
  }
  const last = values.pop() ?? 0;
  if (values.some((v) => v > 0xff)) return null;
  const lastBits = 8 * (4 - values.length);
  if (lastBits < 32 && last >= 2 ** lastBits) return null;
  let result = 0;
  values.forEach((v, i) => {
    result += v * 2 ** (24 - 8 * i);
  });
  return dottedQuad(result + last);
}

interface Ipv6 {
  hextets: number[];
  zone: string;
}

function parseHextets(text: string, allowIpv4Tail: boolean): number[] | null {
  if (text === "") return [];
  const groups = text.split(":");
  const out: number[] = [];
  for (let i = 0; i < groups.length; i++) {
    const group = groups[i] ?? "";
    if (allowIpv4Tail && i === groups.length - 1 && STRICT_IPV4.test(group)) {
      const [a = 0, b = 0, c = 0, d = 0] = group.split(".").map(Number);
      out.push(a * 256 + b, c * 256 + d);
    } else if (HEXTET.test(group)) {
      out.push(Number.parseInt(group, 16));
    } else {
      return null;
    }
  }
  return out;
}

/** Standard IPv6 text (RFC 4291 §2.2, with an optional `%zone`), as Python's ipaddress accepts it. */
export function parseIpv6(text: string): Ipv6 | null {
  const percent = text.indexOf("%");
  const address = percent === -1 ? text : text.slice(0, percent);
  const zone = percent === -1 ? "" : text.slice(percent + 1);
  if (percent !== -1 && (zone === "" || zone.includes("%"))) return null;
  const halves = address.split("::");
  if (halves.length > 2) return null;
  if (halves.length === 1) {
    const hextets = parseHextets(address, true);
    return hextets !== null && hextets.length === 8 ? { hextets, zone } : null;
  }
  const head = parseHextets(halves[0] ?? "", false);
  const tail = parseHextets(halves[1] ?? "", true);
  if (head === null || tail === null || head.length + tail.length > 7) return null;
  const zeros = new Array<number>(8 - head.length - tail.length).fill(0);
  return { hextets: [...head, ...zeros, ...tail], zone };
}

/** Lower-case hex, the first longest run of two or more zero groups as `::` (what Python prints). */
export function formatIpv6({ hextets, zone }: Ipv6): string {
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < hextets.length; ) {
    if (hextets[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < hextets.length && hextets[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = hextets.map((h) => h.toString(16));
  const text =
    bestStart === -1
      ? hex.join(":")
      : `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLength).join(":")}`;
  return zone === "" ? text : `${text}%${zone}`;
}

function isIpv4Mapped(hextets: readonly number[]): boolean {
  return hextets.slice(0, 5).every((h) => h === 0) && hextets[5] === 0xffff;
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
      if (isIpv4Mapped(v6.hextets)) {
        const [high = 0, low = 0] = v6.hextets.slice(6);
        forms.push(dottedQuad(high * 0x10000 + low));
      }
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
