import { isIP } from "node:net";

/**
 * Whether `host` is an IP address as a browser reads a URL's host: dotted,
 * shortened or hexadecimal IPv4 ("127.1", "0x7f.0.0.1") or IPv6, bracketed
 * or not.
 */
function isIpAddress(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, "$1");
  if (isIP(bare) !== 0) return true;
  if (!URL.canParse(`http://${host}`)) return false;
  const parsed = new URL(`http://${host}`).hostname;
  return parsed.startsWith("[") || isIP(parsed) !== 0;
}

/**
 * Why a relying-party id cannot carry passkeys, or null. WebAuthn takes
 * only a domain as the relying party: a browser refuses to register or
 * use a passkey for an IP address, so a console set up with one starts and
 * then nobody can log in or approve.
 */
export function rpIdProblem(rpId: string): string | null {
  return isIpAddress(rpId)
    ? `"${rpId}" is an IP address, and WebAuthn accepts only a domain name as the relying party: every browser would refuse to log in or approve with a passkey for it. Use the host name the console is reached under (localhost by default)`
    : null;
}

/** Why an origin's host cannot carry passkeys (an IP address), or null. */
export function originHostProblem(origin: URL): string | null {
  return isIpAddress(origin.hostname)
    ? `${origin.origin} names an IP address, where browsers allow no passkey; reach the console under a host name (http://localhost:<port>, or a name behind TLS)`
    : null;
}
