import { canonicalIpForms } from "../modes/ip-widen.js";

const DOTTED_QUAD = /^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$/;

/**
 * One spelling per place a name dials: brackets, a `user@` and one
 * trailing dot dropped, names in lower case, an address in its canonical
 * form (an IPv4-mapped IPv6 address and `inet_aton` spellings such as
 * `127.1` as the dotted quad they reach). No DNS: a name and the address it
 * resolves to stay two spellings (docs/policy.md, "Policy per host and per tag").
 */
function canonicalHost(hostname: string): string {
  let bare = hostname.trim();
  bare = bare.slice(bare.lastIndexOf("@") + 1).replace(/^\[(.*)\]$/, "$1");
  if (bare.endsWith(".")) bare = bare.slice(0, -1);
  bare = bare.toLowerCase();
  const forms = canonicalIpForms(bare);
  return forms.find((form) => DOTTED_QUAD.test(form)) ?? forms[0] ?? bare;
}

/** The key an inventory entry and a call's host are matched on: the canonical host and the port. */
export function addressKey(hostname: string, port: number): string {
  return `${canonicalHost(hostname)} ${port}`;
}
