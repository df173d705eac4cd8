/**
 * Derives bench/corpus/tldr-subcommands.jsonl from a tldr-pages git checkout.
 *
 *   node --import tsx bench/corpus/extract.ts <tldr git dir> [commit]
 *
 * Reads every page of the POSIX platforms at the given commit, substitutes the
 * `{{placeholders}}` of each example with plain words and keeps only the rows
 * that one of the mechanical labelling rules below accepts. The description
 * sentences are read to label a row but never written out. See README.md.
 */
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

export type Label = "destructive" | "destructive-option" | "readonly" | "readonly-verb" | "help";

export interface CorpusRow {
  label: Label;
  command: string;
  page: string;
}

/** Platforms whose examples are POSIX shell commands. */
const PLATFORMS = new Set(["common", "linux", "osx", "freebsd", "netbsd", "openbsd", "sunos", "android"]);

/** Leading verbs of a description that announce a destructive action. */
const DESTRUCTIVE_DESCRIPTION = new Set([
  "delete",
  "remove",
  "destroy",
  "uninstall",
  "purge",
  "prune",
  "wipe",
  "drop",
  "kill",
  "terminate",
  "reset",
  "revoke",
  "unregister",
  "deregister",
  "erase",
]);

/** Subcommand words (or hyphen/underscore segments of them) that name a destructive action. */
const DESTRUCTIVE_WORD = new Set([...DESTRUCTIVE_DESCRIPTION, "rm", "del", "rmi", "rmdir", "autoremove"]);

/** Leading verbs of a description that announce a read-only action. */
const READONLY_DESCRIPTION = new Set([
  "list",
  "show",
  "display",
  "get",
  "view",
  "describe",
  "print",
  "check",
  "inspect",
]);

/** Subcommand words of a read-only action. */
const READONLY_WORD = new Set(["list", "ls", "show", "get", "status", "describe", "view", "info", "inspect"]);

const HELP_DESCRIPTION_VERB = new Set(["display", "show", "print", "get", "view", "output", "check", "see"]);
const HELP_TOKEN = new Set([
  "--help",
  "-h",
  "-help",
  "help",
  "--version",
  "-v",
  "-V",
  "-version",
  "version",
  "--usage",
  "-?",
]);

/** Shell operators: rows holding one are compound and left out, so a label speaks for one command. */
const COMPOUND = /[|;&<>`]|\$\(/;
const PRIVILEGE = /^(?:sudo|doas|pkexec|su)\b/;

interface Word {
  text: string;
  /** Written by the page as the tool's own syntax, not a `{{value}}` for the reader to fill in. */
  literal: boolean;
}

/** Replace each `{{…}}`: an alternative list `[a|b]` by its last (long) form, a value by its name. */
function substitute(raw: string): string {
  return raw.replace(/\{\{(.*?)\}\}/g, (_m, inner: string) => {
    const alt = /^\[(.*)\]$/.exec(inner);
    if (alt !== null) return alt[1]!.split("|").at(-1)!;
    return inner.replace(/\s+/g, "_");
  });
}

/** Split the raw example into words, remembering which were written literally. */
function words(raw: string): Word[] {
  const out: Word[] = [];
  for (const w of raw.match(/(?:\{\{.*?\}\}|[^\s{]+|\{)+/g) ?? []) {
    const literal = !/\{\{(?!\[)/.test(w);
    for (const part of substitute(w).split(/\s+/)) if (part !== "") out.push({ text: part, literal });
  }
  return out;
}

/** The first non-option words after the program; a placeholder right after an option is its value. */
function subcommands(ws: Word[], count: number): Word[] {
  const out: Word[] = [];
  for (let i = 1; i < ws.length && out.length < count; i++) {
    const w = ws[i]!;
    if (w.text.startsWith("-")) continue;
    if (!w.literal && ws[i - 1]!.text.startsWith("-")) continue;
    out.push(w);
  }
  return out;
}

const segments = (w: string): string[] => w.toLowerCase().split(/[-_:]/);

function label(description: string, raw: string): Label | null {
  if (COMPOUND.test(raw) || PRIVILEGE.test(raw)) return null;
  const ws = words(raw);
  if (ws.length < 2) return null;
  const lead = /^[a-z]+/i.exec(description)?.[0]?.toLowerCase() ?? "";
  if (
    HELP_DESCRIPTION_VERB.has(lead) &&
    /\b(?:help|usage|version)\b/i.test(description) &&
    ws.slice(1).some((w) => w.literal && HELP_TOKEN.has(w.text))
  ) {
    return "help";
  }
  const subs = subcommands(ws, 2);
  const first = subs[0];
  if (first === undefined || !first.literal) return null;
  if (DESTRUCTIVE_DESCRIPTION.has(lead)) {
    const named = subs.some((w) => w.literal && segments(w.text).some((s) => DESTRUCTIVE_WORD.has(s)));
    return named ? "destructive" : "destructive-option";
  }
  if (READONLY_DESCRIPTION.has(lead)) {
    const named = subs.some((w) => w.literal && segments(w.text).some((s) => READONLY_WORD.has(s)));
    return named ? "readonly-verb" : "readonly";
  }
  return null;
}

/** Every `- description:` / `` `example` `` pair of a page. */
export function examples(page: string): { description: string; raw: string }[] {
  const out: { description: string; raw: string }[] = [];
  let description = "";
  for (const line of page.split("\n")) {
    if (line.startsWith("- ")) description = line.slice(2);
    else if (line.startsWith("`") && line.endsWith("`") && line.length > 2 && description !== "") {
      out.push({ description, raw: line.slice(1, -1) });
      description = "";
    }
  }
  return out;
}

export function extract(gitDir: string, commit: string): CorpusRow[] {
  const listing = execFileSync("git", ["-C", gitDir, "ls-tree", "-r", commit, "pages"], {
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  const blobs: { id: string; page: string }[] = [];
  for (const line of listing.split("\n")) {
    const m = /^\d+ blob ([0-9a-f]+)\tpages\/([^/]+)\/(.+)\.md$/.exec(line);
    if (m !== null && PLATFORMS.has(m[2]!)) blobs.push({ id: m[1]!, page: `${m[2]}/${m[3]}` });
  }
  const batch = execFileSync("git", ["-C", gitDir, "cat-file", "--batch"], {
    input: blobs.map((b) => b.id).join("\n"),
    maxBuffer: 256 << 20,
  });
  const rows: CorpusRow[] = [];
  const seen = new Set<string>();
  let at = 0;
  for (const blob of blobs) {
    const header = batch.subarray(at, batch.indexOf(10, at)).toString("utf8");
    const size = Number(header.split(" ")[2]);
    const start = batch.indexOf(10, at) + 1;
    const text = batch.subarray(start, start + size).toString("utf8");
    at = start + size + 1;
    for (const ex of examples(text)) {
      const l = label(ex.description, ex.raw);
      if (l === null) continue;
      const command = substitute(ex.raw).trim();
      const key = `${l}\t${command}`;
      if (seen.has(key)) continue;
      seen.add(key);
      rows.push({ label: l, command, page: blob.page });
    }
  }
  return rows;
}

if (process.argv[1]?.endsWith("extract.ts")) {
  const gitDir = process.argv[2] ?? "/work/.mirror/tldr-pages+tldr/repo";
  const commit = process.argv[3] ?? "08e345f42639f67d99282813247ac670dc6e87cb";
  const rows = extract(gitDir, commit);
  const out = join(import.meta.dirname, "tldr-subcommands.jsonl");
  writeFileSync(out, `${rows.map((r) => JSON.stringify(r)).join("\n")}\n`);
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(r.label, (counts.get(r.label) ?? 0) + 1);
  console.log(`${rows.length} rows → ${out}`, Object.fromEntries(counts));
}
