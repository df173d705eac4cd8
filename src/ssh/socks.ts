/**
 * The SOCKS5 handshake (RFC 1928) as pure functions over the bytes received
 * so far: the dynamic forward's connection handler feeds them and never
 * parses bytes itself. Only what the relay offers is accepted: the
 * "no authentication" method and the CONNECT command.
 */

const SOCKS_VERSION = 5;
const METHOD_NO_AUTH = 0x00;
const METHOD_NONE_ACCEPTABLE = 0xff;
const CMD_CONNECT = 0x01;
const ATYP_IPV4 = 0x01;
const ATYP_DOMAIN = 0x03;
const ATYP_IPV6 = 0x04;

/** Reply codes of RFC 1928 §6. */
export const SocksReply = {
  succeeded: 0x00,
  generalFailure: 0x01,
  notAllowed: 0x02,
  networkUnreachable: 0x03,
  hostUnreachable: 0x04,
  connectionRefused: 0x05,
  ttlExpired: 0x06,
  commandNotSupported: 0x07,
  addressTypeNotSupported: 0x08,
} as const;

export type SocksReplyCode = (typeof SocksReply)[keyof typeof SocksReply];

export type GreetingParse =
  | { kind: "more" }
  | { kind: "ok"; noAuth: boolean; consumed: number }
  | { kind: "bad"; reason: string };

/** `VER NMETHODS METHODS…`: at most 257 bytes. */
export function parseGreeting(buf: Uint8Array): GreetingParse {
  if (buf.length < 2) return { kind: "more" };
  if (buf[0] !== SOCKS_VERSION) return { kind: "bad", reason: `not SOCKS5 (version byte ${buf[0]})` };
  const count = buf[1] ?? 0;
  if (count === 0) return { kind: "bad", reason: "no authentication methods offered" };
  if (buf.length < 2 + count) return { kind: "more" };
  const methods = buf.subarray(2, 2 + count);
  return { kind: "ok", noAuth: methods.includes(METHOD_NO_AUTH), consumed: 2 + count };
}

export type RequestParse =
  | { kind: "more" }
  | { kind: "connect"; host: string; port: number; consumed: number }
  | { kind: "refuse"; reply: SocksReplyCode; reason: string };

/** A domain the relay passes on to the SSH server: printable ASCII, no spaces. */
const DOMAIN = /^[\x21-\x7e]{1,255}$/;

function ipv6Text(bytes: Uint8Array): string {
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0)).toString(16));
  return groups.join(":");
}

/** `VER CMD RSV ATYP DST.ADDR DST.PORT`: at most 262 bytes. */
export function parseRequest(buf: Uint8Array): RequestParse {
  if (buf.length < 4) return { kind: "more" };
  if (buf[0] !== SOCKS_VERSION) {
    return { kind: "refuse", reply: SocksReply.generalFailure, reason: `bad version byte ${buf[0]}` };
  }
  const atyp = buf[3];
  let addrEnd: number;
  let host: string;
  if (atyp === ATYP_IPV4) {
    addrEnd = 4 + 4;
    if (buf.length < addrEnd + 2) return { kind: "more" };
    host = Array.from(buf.subarray(4, 8)).join(".");
  } else if (atyp === ATYP_DOMAIN) {
    if (buf.length < 5) return { kind: "more" };
    const length = buf[4] ?? 0;
    addrEnd = 5 + length;
    if (buf.length < addrEnd + 2) return { kind: "more" };
    host = Buffer.from(buf.subarray(5, addrEnd)).toString("latin1");
    if (!DOMAIN.test(host)) {
      return { kind: "refuse", reply: SocksReply.hostUnreachable, reason: "unusable domain name" };
    }
  } else if (atyp === ATYP_IPV6) {
    addrEnd = 4 + 16;
    if (buf.length < addrEnd + 2) return { kind: "more" };
    host = ipv6Text(buf.subarray(4, 20));
  } else {
    return {
      kind: "refuse",
      reply: SocksReply.addressTypeNotSupported,
      reason: `address type ${atyp} not supported`,
    };
  }
  // The command is judged once the whole request is in, so the reply never races unread bytes.
  if (buf[1] !== CMD_CONNECT) {
    return {
      kind: "refuse",
      reply: SocksReply.commandNotSupported,
      reason: `command ${buf[1]} not supported`,
    };
  }
  const port = ((buf[addrEnd] ?? 0) << 8) | (buf[addrEnd + 1] ?? 0);
  if (port === 0) return { kind: "refuse", reply: SocksReply.hostUnreachable, reason: "port 0" };
  return { kind: "connect", host, port, consumed: addrEnd + 2 };
}

/** The method-selection answer. */
export function methodReply(noAuth: boolean): Buffer {
  return Buffer.from([SOCKS_VERSION, noAuth ? METHOD_NO_AUTH : METHOD_NONE_ACCEPTABLE]);
}

/** A reply to the request; the bound address is not meaningful through a tunnel, so it is 0.0.0.0:0. */
export function requestReply(code: SocksReplyCode): Buffer {
  return Buffer.from([SOCKS_VERSION, code, 0x00, ATYP_IPV4, 0, 0, 0, 0, 0, 0]);
}

/**
 * The reply for a tunnel the SSH server would not open. OpenSSH reports the
 * reason as text ("Connection refused", "No route to host", …) with the
 * CONNECT_FAILED code, and ADMINISTRATIVELY_PROHIBITED when forwarding is off.
 */
export function replyForOpenFailure(err: unknown): SocksReplyCode {
  const e = err as { reason?: unknown; message?: unknown } | undefined;
  const message = typeof e?.message === "string" ? e.message.toLowerCase() : "";
  if (e?.reason === 1 || message.includes("prohibited")) return SocksReply.notAllowed;
  if (message.includes("refused")) return SocksReply.connectionRefused;
  if (message.includes("network is unreachable")) return SocksReply.networkUnreachable;
  if (/no route|unreachable|name or service|not known|resolve|nodename/.test(message)) {
    return SocksReply.hostUnreachable;
  }
  if (message.includes("timed out")) return SocksReply.ttlExpired;
  return SocksReply.generalFailure;
}
