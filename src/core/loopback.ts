const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
/** `::ffff:127.x.y.z` as the URL parser spells it: `[::ffff:7fxx:yyzz]`. */
const MAPPED_LOOPBACK = /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/;

/**
 * The one definition of loopback (docs/architecture.md): the name
 * `localhost`, every address in 127.0.0.0/8 in dotted-quad form, and `::1`
 * and IPv4-mapped 127/8 (`::ffff:127.0.0.1`) in any IPv6 spelling, with or
 * without brackets or a zone (`%lo`). Everything else is not, including
 * `0.0.0.0`, `::`, other names (`localhost.example`) and the short or
 * numeric IPv4 forms (`127.1`, `2130706433`), which a bind setting should
 * spell out. Used by the HTTP bind rule, the Host check, the OAuth redirect
 * rules, the throttle's proxy rule and the posture warnings.
 */
export function isLoopbackHost(host: string): boolean {
  let text = host.trim().toLowerCase();
  if (text === "localhost") return true;
  if (IPV4.test(text)) return text.startsWith("127.");
  // Brackets and a zone belong to IPv6 only.
  if (text.startsWith("[") && text.endsWith("]")) text = text.slice(1, -1);
  const zone = text.indexOf("%");
  if (zone !== -1) text = text.slice(0, zone);
  if (!text.includes(":") || !URL.canParse(`http://[${text}]/`)) return false;
  // The URL parser validates the address and compresses it to one canonical spelling.
  const canonical = new URL(`http://[${text}]/`).hostname;
  return canonical === "[::1]" || MAPPED_LOOPBACK.test(canonical);
}
