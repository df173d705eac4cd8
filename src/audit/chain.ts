import { readdirSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { canonicalJson } from "../core/index.js";
import { readLastLines } from "./read-lines.js";
import { sha256Hex } from "./record.js";
import type { AuditRecord } from "./types.js";

/** The `prev` of the first record of a chain. */
export const GENESIS = "0".repeat(64);

/** Where the next record attaches: its `seq` and `prev`. */
export interface ChainAnchor {
  seq: number;
  prev: string;
}

export interface ResumedAnchor {
  anchor: ChainAnchor;
  /** Which file the anchor came from, or why the chain starts at genesis. */
  source: string;
}

/** `sha256_hex(prev + canonical(record without chain))`. */
export function chainHash(prev: string, body: Record<string, unknown>): string {
  return sha256Hex(prev + canonicalJson(body));
}

/**
 * Adds `seq`, `prev` and `chain` to a record (after its other fields, the
 * order of docs/wire-contract.md §6.1). The caller advances its anchor only once the line
 * is written, so a failed write does not leave a gap in the sequence.
 */
export function sealRecord(record: AuditRecord, anchor: ChainAnchor): AuditRecord {
  record.seq = anchor.seq;
  record.prev = anchor.prev;
  record.chain = chainHash(anchor.prev, record as unknown as Record<string, unknown>);
  return record;
}

/** `{seq, prev, chain}` of a parsed line when it carries well-typed chain fields. */
export function chainFields(value: unknown): { seq: number; prev: string; chain: string } | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const { seq, prev, chain } = value as Record<string, unknown>;
  if (typeof seq !== "number" || !Number.isSafeInteger(seq) || seq < 0) return null;
  if (typeof prev !== "string" || typeof chain !== "string") return null;
  return { seq, prev, chain };
}

function anchorAfter(line: string): ChainAnchor | null {
  try {
    const fields = chainFields(JSON.parse(line));
    return fields === null ? null : { seq: fields.seq + 1, prev: fields.chain };
  } catch {
    return null; // not JSON: the caller restarts at genesis, which is the visible seam we want
  }
}

/**
 * Rotated copies of `path` as logrotate names them: `<file>-<digits>` (dateext)
 * or `<file>.<digits>`, optionally `.gz`. Anything else beside the file
 * (`audit.jsonl.tmp`, editor backups) is ignored. Newest by mtime first.
 */
export function rotatedSiblings(path: string): string[] {
  const dir = dirname(path);
  const base = basename(path);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return []; // an unreadable directory has no usable siblings; the chain restarts at genesis
  }
  const candidates: Array<{ file: string; mtime: number; name: string }> = [];
  for (const name of names) {
    if (!name.startsWith(base) || name.length === base.length) continue;
    if (!/^[-.][0-9]+(?:\.gz)?$/.test(name.slice(base.length))) continue;
    const file = join(dir, name);
    const st = statSync(file, { throwIfNoEntry: false });
    if (st?.isFile()) candidates.push({ file, mtime: st.mtimeMs, name });
  }
  // Ties on mtime (same-second rotations) fall back to the name, which for
  // dateext and for compressed numbered copies both sort newest-last.
  candidates.sort((a, b) => b.mtime - a.mtime || (a.name < b.name ? 1 : a.name > b.name ? -1 : 0));
  return candidates.map((c) => c.file);
}

/**
 * The anchor a writer starting now must continue from (docs/wire-contract.md §6.7):
 * the last non-blank line of the active file when there is one; when the
 * active file is empty, the newest rotated sibling's last line; genesis when
 * that line is not a chained record. Never throws.
 */
export function resumeAnchor(path: string): ResumedAnchor {
  const genesis = (why: string): ResumedAnchor => ({ anchor: { seq: 0, prev: GENESIS }, source: why });
  try {
    const active = readLastLines(path, 1);
    const last = active?.[0];
    if (last !== undefined) {
      const anchor = anchorAfter(last);
      return anchor === null
        ? genesis(`last line of ${path} is not a chained record`)
        : { anchor, source: path };
    }
    const newest = rotatedSiblings(path)[0];
    if (newest === undefined) return genesis("no earlier records");
    const line = readLastLines(newest, 1)?.[0];
    const anchor = line === undefined ? null : anchorAfter(line);
    return anchor === null
      ? genesis(`last line of ${newest} is not a chained record`)
      : { anchor, source: newest };
  } catch (err) {
    return genesis(`cannot read the previous chain: ${(err as Error).message}`);
  }
}
