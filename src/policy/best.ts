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

/** The running maximum over all parts; on equal tiers the first part found stays. */
export class Best {
  tier: Tier = 1;
  basis: Basis = "default";
  part = "";

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

  result(): Classification {
    return { tier: this.tier, basis: this.basis, part: this.part };
  }
}
