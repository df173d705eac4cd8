import { fail, ok, type Result } from "../core/index.js";
import { type TreeListing, toByteString } from "./manifest.js";

/**
 * Reading what `rsync --list-only -r` prints about a run directory, and what
 * `--itemize-changes` prints about a transfer. rsync writes one entry per
 * line: the mode string, the size (digits grouped with `,` or `.`), date,
 * time and the name, with any non-printable byte of a name escaped as
 * `\#ooo`; names come back as byte strings (manifest.ts). Symlinks print ` -> target` after the name; they, devices and
 * other special files are reported as `other`, never followed.
 */

const ENTRY =
  /^([-dlcbps])[-rwxsStT]{9}[+.@]?\s+([0-9][0-9,.]*)\s+\d{4}\/\d{2}\/\d{2}\s+\d{2}:\d{2}:\d{2}\s(.+)$/;

interface ParsedListing extends TreeListing {
  /** Entries that are neither a directory nor a regular file. */
  other: string[];
  total_bytes: number;
}

/** The listing, or the first line that cannot be read (at most 200 characters of it). */
type ListingResult = Result<ParsedListing, string>;

/**
 * The bytes of a name rsync printed, as a byte string (one character per
 * byte, see manifest.ts): each `\#ooo` is one byte, and the text between
 * escapes is taken as the UTF-8 it was read as. rsync escapes every byte its
 * C locale cannot print (all of 0x80..0xff, control characters) and a `\`
 * that would read as an escape, so the decoding is exact.
 */
export function unescapeName(name: string): string {
  const parts: Buffer[] = [];
  let at = 0;
  for (const match of name.matchAll(/\\#([0-7]{3})/g)) {
    parts.push(
      Buffer.from(name.slice(at, match.index), "utf8"),
      Buffer.of(Number.parseInt(match[1] ?? "0", 8)),
    );
    at = match.index + match[0].length;
  }
  parts.push(Buffer.from(name.slice(at), "utf8"));
  return toByteString(Buffer.concat(parts));
}

/**
 * Parse the listing of `<remote root>/runs/<run id>`. Names are made relative
 * to the run directory whether rsync printed them under `./` (a trailing
 * slash on the path) or under `<run id>/` (none). A line that is not an
 * entry, or output cut before its final newline, makes the whole listing
 * unreadable: a partial listing must not pass for a complete one.
 */
export function parseListing(output: string, runId: string): ListingResult {
  const directories = new Set<string>();
  const files = new Map<string, { size: number }>();
  const other: string[] = [];
  let total = 0;
  if (output !== "" && !output.endsWith("\n")) return fail(lastLine(output));
  for (const line of output.split("\n")) {
    if (line === "") continue;
    const match = ENTRY.exec(line);
    if (match === null) return fail(line.slice(0, 200));
    const [, type = "", sizeText = "", rawName = ""] = match;
    let name = type === "l" ? rawName.replace(/ -> .*$/, "") : rawName;
    name = unescapeName(name);
    const path = relativeToRun(name, runId);
    if (path === null) continue;
    const size = Number(sizeText.replace(/[,.]/g, ""));
    if (type === "d") directories.add(path);
    else if (type === "-") {
      files.set(path, { size });
      total += size;
    } else other.push(path);
  }
  return ok({ directories, files, other, total_bytes: total });
}

function lastLine(output: string): string {
  return output.slice(output.lastIndexOf("\n") + 1).slice(0, 200);
}

/** `null` for the run directory itself. */
function relativeToRun(name: string, runId: string): string | null {
  const trimmed = name.endsWith("/") ? name.slice(0, -1) : name;
  if (trimmed === "." || trimmed === runId) return null;
  if (trimmed.startsWith("./")) return trimmed.slice(2);
  if (trimmed.startsWith(`${runId}/`)) return trimmed.slice(runId.length + 1);
  return trimmed;
}

/** Lines of `--itemize-changes` output (`<f+++++++++ path`, `cd+++++++++ dir/`), the run directory's own excepted. */
export function countItemized(output: string): number {
  let count = 0;
  for (const line of output.split("\n")) {
    if (/^[<>ch.*][fdLDS][^ ]{9} /.test(line) && !/^\S+ \.\/$/.test(line)) count += 1;
  }
  return count;
}

/**
 * The receiver's answer when the listed path does not exist: rsync's own
 * (`change_dir ... failed: No such file or directory`, `link_stat ...`), or
 * rrsync's, which opens a sender's path itself before starting rsync and
 * reports a missing one as `post-realpath open failed (race detected): <path>
 * No such file or directory`. Either way the run directory is absent, which
 * is what a new run needs.
 */
export function saysAbsent(text: string): boolean {
  return /(change_dir|link_stat|post-realpath open failed)\b[^\n]*No such file or directory/.test(text);
}
