import type { KnownHostsMode } from "../config/index.js";
import { RelayError } from "../core/index.js";
import { algorithmsForKeyType, fingerprintOf, keyTypeOfBlob, knownHostsName } from "./known-hosts.js";
import type { KnownHostsStore } from "./known-hosts-store.js";

/** What one dial learned about the server's identity. */
type HostKeyStatus = "verified" | "learned" | "unchecked";

export interface HostKeyReport {
  host: string;
  port: number;
  mode: KnownHostsMode;
  status: HostKeyStatus;
  key_type: string;
  fingerprint: string;
}

/** Strength order of the modes; a per-call value may not go below the host's own mode unless allowed. */
export const MODE_STRENGTH: Record<KnownHostsMode, number> = { ignore: 0, "accept-new": 1, strict: 2 };

export function strongerMode(a: KnownHostsMode, b: KnownHostsMode): KnownHostsMode {
  return MODE_STRENGTH[a] >= MODE_STRENGTH[b] ? a : b;
}

const HOST_KEY_ERROR = "HostKeyNotVerifiable";

/** The ssh2 default host-key algorithms, in its order; pinned types are moved to the front. */
const DEFAULT_HOST_KEY_ALGORITHMS = [
  "ssh-ed25519",
  "ecdsa-sha2-nistp256",
  "ecdsa-sha2-nistp384",
  "ecdsa-sha2-nistp521",
  "rsa-sha2-512",
  "rsa-sha2-256",
  "ssh-rsa",
];

export interface HostKeyGuard {
  /** The ssh2 hostVerifier: true admits the key. Every connection has one (ssh2 accepts anything without). */
  verify(blob: Buffer): boolean;
  /** Why verify refused, for the error the dial reports. */
  rejection(): RelayError | null;
  /**
   * Called once the handshake and authentication succeeded: a key learned on
   * first contact is pinned only now, so a peer that could not prove it owns
   * the key it showed never gets written into the file.
   */
  settle(): HostKeyReport;
  /** Host-key algorithms to offer, pinned types first (undefined: ssh2's defaults). */
  algorithms(): string[] | undefined;
}

export interface HostKeyTarget {
  host: string;
  port: number;
  mode: KnownHostsMode;
}

export function createHostKeyGuard(store: KnownHostsStore, target: HostKeyTarget): HostKeyGuard {
  const name = knownHostsName(target.host, target.port);
  let offered: Buffer | null = null;
  let refused: RelayError | null = null;
  let status: HostKeyStatus = target.mode === "ignore" ? "unchecked" : "verified";

  const refuse = (code: string, message: string): boolean => {
    refused = new RelayError(HOST_KEY_ERROR, message, { code });
    return false;
  };

  return {
    verify(blob) {
      offered = Buffer.from(blob);
      if (target.mode === "ignore") return true;
      const type = keyTypeOfBlob(blob);
      const fp = fingerprintOf(blob);
      let verdict: ReturnType<KnownHostsStore["lookup"]>;
      try {
        verdict = store.lookup(target.host, target.port, blob);
      } catch (err) {
        return refuse("host_key_unreadable", `cannot read known_hosts: ${(err as Error).message}`);
      }
      switch (verdict.kind) {
        case "match":
          status = "verified";
          return true;
        case "revoked":
          return refuse(
            "host_key_revoked",
            `host key for ${name} (${type} ${fp}) is marked @revoked in ${verdict.entry.file}:${verdict.entry.line}`,
          );
        case "changed": {
          const first = verdict.pinned[0];
          const where = first ? `${first.file}:${first.line}` : store.pinFile;
          const pinned = first ? `${first.keyType} ${fingerprintOf(first.key)}` : "another key";
          return refuse(
            "host_key_changed",
            `host key for ${name} has CHANGED: the server offered ${type} ${fp} but ${where} pins ${pinned}. ` +
              "Someone may be intercepting the connection, or the host was rebuilt; if the change is expected, " +
              "remove that line and call again",
          );
        }
        case "unknown":
          if (target.mode === "strict") {
            return refuse(
              "host_key_unknown",
              `host key for ${name} is not known and known_hosts=strict refuses unknown hosts ` +
                `(the server offered ${type} ${fp}); add it to ${store.pinFile} (ssh_keyscan prints it) or use accept-new`,
            );
          }
          status = "learned";
          return true;
      }
    },
    rejection: () => refused,
    settle() {
      const blob = offered ?? Buffer.alloc(0);
      if (status === "learned") {
        const result = store.pin(target.host, target.port, blob);
        if (typeof result === "object") {
          // Another dial pinned a different key while this one was in flight.
          const first = result.changed[0];
          throw new RelayError(
            HOST_KEY_ERROR,
            `host key for ${name} has CHANGED while connecting: ${first ? `${first.file}:${first.line}` : store.pinFile} ` +
              `now pins ${first ? fingerprintOf(first.key) : "another key"}, the server offered ${fingerprintOf(blob)}`,
            { code: "host_key_changed" },
          );
        }
      }
      return {
        host: target.host,
        port: target.port,
        mode: target.mode,
        status,
        key_type: keyTypeOfBlob(blob),
        fingerprint: blob.length > 0 ? fingerprintOf(blob) : "",
      };
    },
    algorithms() {
      if (target.mode === "ignore") return undefined;
      let known: string[];
      try {
        known = store.knownKeyTypes(target.host, target.port).flatMap(algorithmsForKeyType);
      } catch {
        // An unreadable file fails the dial in verify(), with the reason; ordering does not matter then.
        return undefined;
      }
      if (known.length === 0) return undefined;
      const rest = DEFAULT_HOST_KEY_ALGORITHMS.filter((a) => !known.includes(a));
      return [...new Set([...known, ...rest])];
    },
  };
}
