import type { Tier } from "../core/index.js";
import type { Basis, Classification } from "./types.js";

const PART_LIMIT = 120;

/** Collapse whitespace and cut to 120 characters without splitting a surrogate pair. */
export function toPart(text: string): string {
  const flat = text.length > 4 * PART_LIMIT ? text.slice(0, 4 * PART_LIMIT) : text;
  const oneLine = flat.replace(/\s+/g, " ").trim();
  if (oneLine.length <= PART_LIMIT) return oneLine;
  let cut = PART_LIMIT - 1;
  const code = oneLine.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut--;
  return `${oneLine.slice(0, cut)}…`;
}

/**
 * The running maximum over all parts; on equal tiers the first part found stays.
 *
 * Beside the maximum it keeps the Tier-0 proof (ADR 0033): whether any part
 * could not be proven to only read. Every place that meets a part of a command
 * (a program, a wrapper, a redirection, an assignment) answers for it, and
 * everything the classifier cannot vouch for (a program outside the read-only
 * table, a write redirection, a parse error, the pattern tables, a program in
 * another language) calls `doubt`. A text is Tier 0 when nothing raised it and
 * nothing was doubted: a text in which nothing runs (blank, a comment) is too.
 */
export class Best {
  tier: Tier = 1;
  basis: Basis = "default";
  part = "";
  private doubted = false;

  /** Record one part's proof: proven read-only, or not. */
  prove(ok: boolean): void {
    if (!ok) this.doubted = true;
  }

  /** Some part cannot be proven read-only. */
  doubt(): void {
    this.doubted = true;
  }

  consider(tier: Tier, basis: Basis, part: string): void {
    if (tier > this.tier) {
      this.tier = tier;
      this.basis = basis;
      this.part = toPart(part);
    }
  }

  merge(other: Classification): void {
    if (other.tier > this.tier) {
      this.tier = other.tier;
      this.basis = other.basis;
      this.part = other.part;
    }
  }

  /** Nothing can raise a Tier-3 result, so callers may stop looking. */
  get done(): boolean {
    return this.tier === 3;
  }

  /** Every part seen so far is proven read-only. */
  get readOnly(): boolean {
    return !this.doubted && this.tier === 1 && this.basis === "default";
  }

  result(): Classification {
    if (this.readOnly) return { tier: 0, basis: "proven_read", part: "" };
    return { tier: this.tier, basis: this.basis, part: this.part };
  }
}
