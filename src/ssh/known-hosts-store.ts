import { closeSync, fstatSync, mkdirSync, openSync, readSync, statSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { readBoundedFile } from "../files/index.js";
import {
  entryMatches,
  formatKnownHostsLine,
  type KnownHostEntry,
  keyTypeOfBlob,
  knownHostsName,
  parseKnownHosts,
  sameKey,
} from "./known-hosts.js";

/** Bigger than any sane known_hosts file; a runaway file is refused, not read into memory. */
const MAX_FILE_BYTES = 16 * 1024 * 1024;

type HostKeyVerdict =
  | { kind: "match"; entry: KnownHostEntry }
  | { kind: "unknown" }
  /** The host is listed, but with other key(s): the ones it had before. */
  | { kind: "changed"; pinned: KnownHostEntry[] }
  | { kind: "revoked"; entry: KnownHostEntry };

export interface KnownHostsStoreConfig {
  /** The relay's own file: read, and the only file ever written. */
  pinFile: string;
  /** Further files trusted read-only (the service account's ~/.ssh/known_hosts). */
  readOnlyFiles?: readonly string[];
}

export interface KnownHostsStore {
  readonly pinFile: string;
  /** Look the offered key up in every file as it is now (a pin written by another process counts). */
  lookup(host: string, port: number, blob: Buffer): HostKeyVerdict;
  /** Key types already known for the host, so the dial can ask the server for those first. */
  knownKeyTypes(host: string, port: number): string[];
  /**
   * Pin a key learned on first contact. Re-checks the files first, so two
   * dials that learned the same host at once write one line; a different key
   * pinned in between makes this fail as a changed key.
   */
  pin(host: string, port: number, blob: Buffer): "added" | "present" | { changed: KnownHostEntry[] };
}

function readBounded(path: string): string {
  return (
    readBoundedFile(path, { maxBytes: MAX_FILE_BYTES, what: "known_hosts file" })?.toString("utf8") ?? ""
  );
}

/** What identifies a file's content without reading it: a write, a rename over it or a truncation changes it. */
function identityOf(path: string): string {
  const st = statSync(path, { bigint: true, throwIfNoEntry: false });
  return st ? `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}` : "";
}

export function createKnownHostsStore(config: KnownHostsStoreConfig): KnownHostsStore {
  const files = [config.pinFile, ...(config.readOnlyFiles ?? [])];
  // Each file parsed once per version: a fan-out dials a thousand hosts against the same files.
  const parsed = new Map<string, { identity: string; entries: readonly KnownHostEntry[] }>();

  /** The file's entries as they are now: re-read whenever it changed since the last look. */
  function entriesOf(file: string): readonly KnownHostEntry[] {
    const identity = identityOf(file);
    const cached = parsed.get(file);
    if (cached && cached.identity === identity) return cached.entries;
    const entries = identity === "" ? [] : parseKnownHosts(readBounded(file), file).entries;
    parsed.set(file, { identity, entries });
    return entries;
  }

  function entriesFor(host: string, port: number): KnownHostEntry[] {
    const name = knownHostsName(host, port);
    const found: KnownHostEntry[] = [];
    for (const file of files) {
      for (const entry of entriesOf(file)) {
        if (entry.marker !== "cert-authority" && entryMatches(entry, name)) found.push(entry);
      }
    }
    return found;
  }

  function verdict(host: string, port: number, blob: Buffer): HostKeyVerdict {
    const entries = entriesFor(host, port);
    const revoked = entries.find((e) => e.marker === "revoked" && sameKey(e.key, blob));
    if (revoked) return { kind: "revoked", entry: revoked };
    const plain = entries.filter((e) => e.marker === "");
    const match = plain.find((e) => sameKey(e.key, blob));
    if (match) return { kind: "match", entry: match };
    // Any other key for this host, of any type, means the identity moved: the
    // dial asks for the pinned types first, so a server that still had its
    // pinned key would have shown it.
    return plain.length > 0 ? { kind: "changed", pinned: plain } : { kind: "unknown" };
  }

  return {
    pinFile: config.pinFile,
    lookup: verdict,
    knownKeyTypes(host, port) {
      const types = entriesFor(host, port)
        .filter((e) => e.marker === "")
        .map((e) => e.keyType);
      return [...new Set(types)];
    },
    pin(host, port, blob) {
      const now = verdict(host, port, blob);
      if (now.kind === "match") return "present";
      if (now.kind === "changed") return { changed: now.pinned };
      if (now.kind === "revoked") return { changed: [now.entry] };
      const line = formatKnownHostsLine(host, port, blob);
      if (keyTypeOfBlob(blob) === "") throw new Error("cannot pin a key without a type");
      mkdirSync(dirname(config.pinFile), { recursive: true, mode: 0o700 });
      const fd = openSync(config.pinFile, "a", 0o600);
      try {
        // A hand-edited file may lack its final newline; never glue our line onto the last one.
        const size = fstatSync(fd).size;
        let prefix = "";
        if (size > 0) {
          const last = Buffer.alloc(1);
          const rfd = openSync(config.pinFile, "r");
          try {
            readSync(rfd, last, 0, 1, size - 1);
          } finally {
            closeSync(rfd);
          }
          if (last[0] !== 0x0a) prefix = "\n";
        }
        writeSync(fd, `${prefix}${line}\n`);
      } finally {
        closeSync(fd);
      }
      return "added";
    },
  };
}
