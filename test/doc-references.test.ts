import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./helpers/server.js";

/**
 * Every document a comment, test or page points at must be in the repository, so a maintainer who
 * clones it can follow each reference. Checked:
 *
 * - markdown links to relative paths (the file must exist; a `#anchor` into a page must be one of
 *   its headings);
 * - mentions of `*.md` files, with an optional `§N.N` after them (the page must have a heading
 *   numbered N.N); inside a page with numbered headings a bare `§N.N` means that page; any other
 *   `§` that belongs to no page of the repository (nor to an RFC or draft) is an error, since
 *   nobody can tell which document it means;
 * - `ADR NNNN`, which always means `docs/adr/NNNN-*.md` of this repository. Design records of other
 *   projects are not cited by number: what they decided is restated in an ADR or page here.
 * - notes that live outside the repository (the upstream contract, its appendices, a sibling
 *   `shared` folder) are never cited.
 */

interface Finding {
  readonly file: string;
  readonly line: number;
  readonly ref: string;
  readonly why: string;
}

interface Heading {
  readonly slug: string;
  readonly number: string | null;
}

const SCANNED_DIRS = ["src", "test", "bench", "docs"];
const SCANNED_FILES = ["README.md", "CHANGELOG.md"];
const TEXT_FILE = /\.(?:ts|mts|cts|js|mjs|cjs|md|sh)$/;

function listFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    // Installed packages (the benchmark's peers under bench/peers) are not the repository's text.
    if (entry.isDirectory()) {
      if (entry.name !== "node_modules") out.push(...listFiles(path));
    } else if (TEXT_FILE.test(entry.name)) out.push(path);
  }
  return out;
}

function lineOf(text: string, index: number): number {
  let line = 1;
  for (let i = text.indexOf("\n"); i !== -1 && i < index; i = text.indexOf("\n", i + 1)) line++;
  return line;
}

/** Ranges of fenced code blocks, where link syntax is example text. */
function fencedRanges(text: string): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  const fence = /^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm;
  for (const match of text.matchAll(fence)) ranges.push([match.index, match.index + match[0].length]);
  return ranges;
}

function inRanges(index: number, ranges: ReadonlyArray<readonly [number, number]>): boolean {
  return ranges.some(([start, end]) => index >= start && index < end);
}

/** The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to dashes. */
function slugOf(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

const headingCache = new Map<string, Heading[]>();

function headingsOf(path: string): Heading[] {
  const cached = headingCache.get(path);
  if (cached) return cached;
  const text = readFileSync(path, "utf8");
  const fences = fencedRanges(text);
  const seen = new Map<string, number>();
  const headings: Heading[] = [];
  for (const match of text.matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    if (inRanges(match.index, fences)) continue;
    const title = match[1] ?? "";
    const base = slugOf(title);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    const number = /^(\d+(?:\.\d+)*)\.?(?:\s|$)/.exec(title)?.[1] ?? null;
    headings.push({ slug: count === 0 ? base : `${base}-${count}`, number });
  }
  headingCache.set(path, headings);
  return headings;
}

/**
 * Where a `.md` mention in `file` points, or null when no such file is in the repository. A bare
 * name may also be a page of docs/ or an ADR, as code that opens a page by name writes it.
 */
function resolveDoc(root: string, file: string, mention: string): string | null {
  const candidates = [resolve(dirname(file), mention), resolve(root, mention)];
  if (!mention.includes("/"))
    candidates.push(join(root, "docs", mention), join(root, "docs", "adr", mention));
  for (const candidate of candidates) {
    if (!candidate.startsWith(root)) continue;
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return null;
}

function sectionMissing(doc: string, section: string): boolean {
  return !headingsOf(doc).some((heading) => heading.number === section);
}

/** Separators between a document name and its `§`: spaces, line breaks and comment markers. */
const TRAILING_SEPARATORS = /(?:\s|\*|\/\/)+$/;
const EXTERNAL_OWNER = /(?:\bRFC[\s-]?\d+|\bdraft-[\w.-]+)$/;
const DOC_OWNER = /(?<![\w/.:-])((?:\.{1,2}\/)?[\w.-]+(?:\/[\w.-]+)*\.md)$/;
const PREVIOUS_SECTION = /§\s?\d+(?:\.\d+)*(?:\s*#\d+)?(?:\s*\([^()§\n]{0,40}\))?\s*(?:,|;|\/|and|or|–|-)?$/;

/** All findings for one file's text. `root` is the repository root; `file` an absolute path in it. */
function scanText(root: string, file: string, text: string): Finding[] {
  const findings: Finding[] = [];
  const rel = relative(root, file);
  const add = (index: number, ref: string, why: string) =>
    findings.push({ file: rel, line: lineOf(text, index), ref: ref.replace(/\s+/g, " "), why });
  const isMarkdown = file.endsWith(".md");
  const fences = isMarkdown ? fencedRanges(text) : [];

  // Markdown links; a `§` in a link's text belongs to the link's target.
  const linkRanges: Array<[number, number]> = [];
  const sectionOwners = new Map<number, string | "external" | null>();
  if (isMarkdown) {
    for (const match of text.matchAll(/\[([^\]\n]*)\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      if (inRanges(match.index, fences)) continue;
      const label = match[1] ?? "";
      const target = match[2] ?? "";
      linkRanges.push([match.index, match.index + match[0].length]);
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) {
        for (const s of label.matchAll(/§/g)) sectionOwners.set(match.index + 1 + s.index, "external");
        continue;
      }
      const [pathPart = "", anchor] = target.split("#", 2);
      const path = pathPart === "" ? file : resolve(dirname(file), pathPart);
      if (!path.startsWith(root) || !existsSync(path)) {
        add(match.index, match[0], "link target does not exist in the repository");
        continue;
      }
      const isDoc = path.endsWith(".md") && statSync(path).isFile();
      if (anchor !== undefined && isDoc && !headingsOf(path).some((h) => h.slug === anchor)) {
        add(match.index, match[0], `no heading with the anchor #${anchor} in ${relative(root, path)}`);
      }
      for (const s of label.matchAll(/§\s?(\d+(?:\.\d+)*)/g)) {
        const at = match.index + 1 + s.index;
        sectionOwners.set(at, isDoc ? path : null);
        if (isDoc && sectionMissing(path, s[1] ?? "")) {
          add(at, `${target} ${s[0]}`, `${relative(root, path)} has no section ${s[1]}`);
        }
      }
    }
  }

  // Mentions of `.md` files anywhere. A bare lower-case name that resolves nowhere is taken for data
  // (a file name in an example command); notes are named in capitals, like README.md.
  for (const match of text.matchAll(/(?<![\w/.:-])((?:\.{1,2}\/)?[\w.-]+(?:\/[\w.-]+)*\.md)\b/g)) {
    const mention = match[1] ?? "";
    if (inRanges(match.index, linkRanges)) continue;
    if (!mention.includes("/") && !/^[A-Z][A-Z0-9_-]*\.md$/.test(mention)) {
      if (resolveDoc(root, file, mention) === null && !/^[A-Z]/.test(mention)) continue;
    }
    if (resolveDoc(root, file, mention) === null) add(match.index, mention, "no such file in the repository");
  }

  // Section signs: each must follow a document of the repository (or an RFC), directly or as the
  // next item of a list of sections (`§6.8, §12`).
  for (const match of text.matchAll(/§\s?(\d+(?:\.\d+)*)?/g)) {
    if (sectionOwners.has(match.index)) continue;
    const start = Math.max(0, match.index - 300);
    const before = text.slice(start, match.index).replace(TRAILING_SEPARATORS, "");
    let owner: string | "external" | null = null;
    const doc = DOC_OWNER.exec(before);
    if (doc) owner = resolveDoc(root, file, doc[1] ?? "");
    else if (EXTERNAL_OWNER.test(before)) owner = "external";
    else if (PREVIOUS_SECTION.test(before))
      owner = sectionOwners.get(start + before.lastIndexOf("§")) ?? null;
    else if (/\bCONTRACT$/.test(before)) owner = null;
    else if (isMarkdown && headingsOf(file).some((heading) => heading.number !== null)) owner = file;
    else {
      add(match.index, match[0], "a section sign that names no document of the repository");
      sectionOwners.set(match.index, null);
      continue;
    }
    sectionOwners.set(match.index, owner);
    const section = match[1];
    if (owner && owner !== "external" && section && sectionMissing(owner, section)) {
      add(
        match.index,
        `${relative(root, owner)} ${match[0]}`,
        `${relative(root, owner)} has no section ${section}`,
      );
    }
  }

  // ADR numbers always mean this repository's docs/adr/.
  const adrDir = join(root, "docs", "adr");
  const adrs = existsSync(adrDir) ? readdirSync(adrDir) : [];
  for (const match of text.matchAll(/\bADRs?(?:\s|\*|\/\/)+(\d{4}(?:\s*(?:,|and|&)\s*\d{4})*)/g)) {
    for (const number of (match[1] ?? "").match(/\d{4}/g) ?? []) {
      if (!adrs.some((name) => name.startsWith(`${number}-`) && name.endsWith(".md"))) {
        add(match.index, `ADR ${number}`, `no docs/adr/${number}-*.md`);
      }
    }
  }
  const foreignAdr = [
    /\b(?:design\s+records?'?s?|their|Python(?:\s+(?:project|release))?'?s?)\s+ADRs?(?:\s|\*|\/\/)+\d{4}/gi,
    /\bADRs?(?:\s|\*|\/\/)+\d{4}\s+of\s+the\s+(?:design\s+records?|Python\b)/gi,
  ];
  for (const pattern of foreignAdr) {
    for (const match of text.matchAll(pattern)) {
      add(match.index, match[0], "an ADR of another project's design records: cite this repository's ADR");
    }
  }

  // Notes that only exist outside the repository.
  const outside: Array<[RegExp, string]> = [
    [
      /\bCONTRACT\b(?:(?:\s|\*|\/\/)*(?:§\s?[\d.]*\d(?:\s+item\s+\d+|\s*#\d+)?|rows?\s+\d+(?:\s*(?:\/|and|,)\s*\d+)*|Appendix\s+[A-Z]))?/g,
      "the upstream contract is not in the repository: cite docs/wire-contract.md",
    ],
    [
      /\bAppendix\s+[AB]\b(?:\s+\d+(?:\s*,\s*\d+)*)?/g,
      "an appendix of the upstream contract: cite docs/wire-contract.md or an ADR",
    ],
    [/(?:\.\.\/|\/work\/)shared\b/g, "a folder outside the repository"],
  ];
  for (const [pattern, why] of outside) {
    for (const match of text.matchAll(pattern)) add(match.index, match[0], why);
  }
  return findings;
}

function format(findings: readonly Finding[]): string[] {
  return findings.map((f) => `${f.file}:${f.line}: ${f.ref} (${f.why})`);
}

function scanRepository(root: string): Finding[] {
  // This file's own examples are checked by the cases below, not by the scan.
  const self = join(root, "test", "doc-references.test.ts");
  const files = [
    ...SCANNED_DIRS.flatMap((dir) => listFiles(join(root, dir))).filter((path) => path !== self),
    ...SCANNED_FILES.map((name) => join(root, name)).filter((path) => existsSync(path)),
  ];
  return files.flatMap((file) => scanText(root, file, readFileSync(file, "utf8")));
}

describe("document references", () => {
  it("every reference in src/, test/, bench/, docs/, README.md and CHANGELOG.md resolves in the repository", () => {
    expect(format(scanRepository(REPO_ROOT))).toEqual([]);
  });
});

describe("the reference scanner", () => {
  const file = join(REPO_ROOT, "src", "example.ts");
  const page = join(REPO_ROOT, "docs", "example.md");
  const scan = (text: string, at = file) =>
    format(scanText(REPO_ROOT, at, text)).map((s) => s.split(": ")[1]);

  it("accepts references that resolve", () => {
    expect(scan("// see docs/architecture.md and ADR 0001, ADRs 0002 and 0003")).toEqual([]);
    expect(scan("/** RFC 6749 §3.1 and RFC 8252\n * §7.3 */")).toEqual([]);
    expect(
      scan("[tools](tools.md#result-grammar), [ADR](adr/0001-parser-based-classifier.md)", page),
    ).toEqual([]);
  });

  it("flags missing files, anchors and ADRs", () => {
    expect(scan("// docs/nowhere.md")).toEqual(["docs/nowhere.md (no such file in the repository)"]);
    expect(scan("[x](tools.md#no-such-heading)", page)).toHaveLength(1);
    expect(scan("[x](missing.md)", page)).toHaveLength(1);
    expect(scan("// ADR 9999")).toEqual(["ADR 9999 (no docs/adr/9999-*.md)"]);
    expect(scan("// docs/tools.md §3")).toHaveLength(1);
  });

  it("flags section signs without a document, and notes kept outside the repository", () => {
    expect(scan("// transport (§4.2)")).toHaveLength(1);
    expect(scan(`// ${"CONTR"}ACT §2.4`)).toHaveLength(1);
    expect(scan(`// ${"Appen"}dix B 9`)).toHaveLength(1);
    expect(scan(`// ${"DESI"}GN.md`)).toHaveLength(1);
    expect(scan(`// ${".."}/shared/notes.txt`)).toHaveLength(1);
    expect(scan("// the design record's ADR 0011")).toHaveLength(1);
    expect(scan("// ADR 0011 of the design records")).toHaveLength(1);
    expect(scan("/* after the design record's ADR\n * 0013 */")).toHaveLength(1);
  });
});
