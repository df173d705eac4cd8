/**
 * The setup guide of docs/infra-broker.md as a test reads it: the shell
 * blocks of one section, in order, each with the role its first line gives it,
 * and the transcripts of the cycle it shows.
 */

/** Who a block is for, from its first line. */
type BlockRole =
  /** No marker: the broker's host. */
  | "broker"
  /** `# on the receiver` */
  | "receiver"
  /** `# with systemd` */
  | "systemd"
  /** `# without systemd` */
  | "without-systemd"
  /** `# without systemd, in the foreground`: a process that keeps running. */
  | "foreground"
  /** `# the MCP client's command`: what an MCP client starts over stdio. */
  | "client";

export interface GuideBlock {
  role: BlockRole;
  /** The block as written, marker line included. */
  text: string;
}

const MARKERS: ReadonlyArray<[string, BlockRole]> = [
  ["# on the receiver", "receiver"],
  ["# with systemd", "systemd"],
  ["# without systemd, in the foreground", "foreground"],
  ["# without systemd", "without-systemd"],
  ["# the MCP client's command", "client"],
];

/** The text of the `## <title>` section, up to the next `## ` heading. */
export function section(markdown: string, title: string): string {
  const start = markdown.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`no section "## ${title}"`);
  const end = markdown.indexOf("\n## ", start + 1);
  return markdown.slice(start, end < 0 ? undefined : end);
}

/** The fenced blocks of `lang` in `text`, in order, without their fences. */
function fencedBlocks(text: string, lang: string): string[] {
  const out: string[] = [];
  for (const match of text.matchAll(/^```([a-z]*)\n([\s\S]*?)^```$/gm)) {
    if (match[1] === lang) out.push(match[2] ?? "");
  }
  return out;
}

/** The `sh` blocks of a section, with their roles. */
export function guideBlocks(sectionText: string): GuideBlock[] {
  return fencedBlocks(sectionText, "sh").map((text) => {
    const first = text.split("\n", 1)[0] ?? "";
    const role = first.startsWith("#") ? MARKERS.find(([marker]) => first === marker)?.[1] : "broker";
    if (role === undefined) throw new Error(`a guide block starts with an unknown marker: ${first}`);
    return { role, text };
  });
}

/** A block as one command line: comment lines dropped, `\` continuations joined. */
export function commandOf(block: GuideBlock): string {
  return block.text
    .split("\n")
    .filter((line) => !line.startsWith("#"))
    .join("\n")
    .replace(/\\\n\s*/g, "")
    .trim();
}

/**
 * Textual substitutions, each applied everywhere it occurs; a replacement is
 * computed when the block that holds it runs (a key exists only after its
 * step). `unused()` names the ones that never matched, so a guide that
 * changed under the test does not pass unnoticed.
 */
export function substitutions(table: ReadonlyArray<[string, () => string]>) {
  const used = new Set<string>();
  return {
    apply(text: string): string {
      let out = text;
      for (const [from, to] of table) {
        if (!out.includes(from)) continue;
        used.add(from);
        out = out.split(from).join(to());
      }
      return out;
    },
    unused: (): string[] => table.map(([from]) => from).filter((from) => !used.has(from)),
  };
}

/** One tool call of a transcript: the `>>>` line and the answer's lines. */
export interface TranscriptEntry {
  call: string;
  lines: string[];
}

/** The entries of every `text` block of `sectionText` that shows tool calls. */
export function transcriptEntries(sectionText: string): TranscriptEntry[] {
  const entries: TranscriptEntry[] = [];
  for (const block of fencedBlocks(sectionText, "text")) {
    for (const chunk of block.split(/^(?=>>> )/m)) {
      if (!chunk.startsWith(">>> ")) continue;
      const [call = "", ...lines] = chunk.trimEnd().split("\n");
      entries.push({ call, lines });
    }
  }
  return entries;
}

/** A result's text as the guide shows it: the Tier-2 notice cut. */
export function shownText(text: string): string {
  const notice = text.indexOf("\n[NOTICE ");
  return (notice < 0 ? text : text.slice(0, notice)).trimEnd();
}

/** What may differ between two runs of the same cycle: ids, numbers, times. */
export function normalized(line: string): string {
  return line
    .replace(/r-[0-9a-f]{24}/g, "r-ID")
    .replace(/[0-9a-f]{12,}/g, "HEX")
    .replace(/\d+/g, "N");
}
