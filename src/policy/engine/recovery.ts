import type { Best } from "../best.js";

/**
 * Error recovery for a text the grammar cannot parse whole: the text is cut
 * in several ways and each part is classified again, so that a broken part
 * never hides a complete command next to it. Parts only add to what the whole
 * text gave: they can raise a tier, never prove a read (the caller has
 * already doubted the text). The caller says how a part is parsed and charged.
 */

/** Pieces of an unparsable text that are parsed on their own (the pattern tables already saw all of it). */
const MAX_PIECES = 256;

/**
 * A parse error can swallow what follows it (`echo 'x; kubectl delete ns prod`
 * puts the second command in an unterminated string). The text is cut at
 * separator characters, ignoring quotes, and each piece is parsed alone:
 * ambiguity rounds up. Pieces are bounded in number; the pattern tables have
 * already seen the whole text.
 */
export function piecesInto(text: string, best: Best, parsed: (piece: string) => void): void {
  let count = 0;
  const seen = new Set<string>();
  // Cut into lines, cut keeping pipelines whole (`x | perl` stays piped), cut at every
  // operator, and cut with the quote characters blanked (an unbalanced quote hides the rest).
  const variants = [
    () => [text.replace(/['"`]/g, " ")],
    () => text.split("\n"),
    () => text.split(/[\n;&]+/),
    () => text.split(/[\n;&|]+/),
    () => text.replace(/['"`]/g, " ").split(/[\n;&]+/),
  ];
  for (const variant of variants) {
    for (const piece of variant()) {
      if (best.done || count >= MAX_PIECES) return;
      if (piece.trim() === "" || piece === text || seen.has(piece)) continue;
      seen.add(piece);
      count++;
      parsed(piece);
    }
  }
}

/**
 * Error recovery can swallow every line after a broken one, a here-doc body
 * included (`[+⏎python3 <<EOF⏎…` reads as one test expression in which `<<`
 * is a shift), and the pieces above cut a here-doc from its body. So the text
 * from each later line start, and from after each list or pipe operator, is
 * also parsed alone, in order: a broken part never hides a complete command
 * after it. The text before each such operator is parsed too, since a broken
 * tail changes how the grammar recovers what came before it (`a;&$` alone
 * holds a command `$` that `a;&$ && ` loses). These parts, and what they nest,
 * draw on the call's recovery budget rather than on the one that decides
 * "unseen": the pass stops, silently, when a suffix no longer fits with room
 * for what it nests, and the total work stays linear in the input. The
 * pattern tables have already seen the whole text.
 */
export function cutPartsInto(
  text: string,
  best: Best,
  recovery: { bytes: number },
  parsed: (part: string) => void,
): void {
  let count = 0;
  // A line start, or the end of a run of list and pipe operators (`ls && ;rm -rf x`): where a
  // command may begin once the broken part before it is dropped.
  const boundary = /\n|[;&|]+/g;
  const cuts: number[] = [];
  for (let m = boundary.exec(text); m !== null && cuts.length < 4 * MAX_PIECES; m = boundary.exec(text)) {
    cuts.push(m.index, m.index + m[0].length);
  }
  // The suffixes first, as they always were; then the prefixes, while the budget lasts.
  const parts = [
    ...cuts.filter((_, i) => i % 2 === 1).map((at) => text.slice(at)),
    ...cuts.filter((_, i) => i % 2 === 0).map((at) => text.slice(0, at)),
  ];
  for (const part of parts) {
    if (best.done || part.trim() === "") continue;
    if (count++ >= 2 * MAX_PIECES || recovery.bytes < 2 * part.length) return;
    recovery.bytes -= part.length;
    parsed(part);
  }
}
