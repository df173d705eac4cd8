import type { Clock } from "../core/index.js";

/** A token bucket's shape: tokens added per second, and the most it holds. */
interface BucketConfig {
  perSecond: number;
  burst: number;
}

/** What one caller may cost the broker (ADR 0036). */
export interface AdmissionConfig {
  /** Frames served per second to one uid a profile lists. */
  knownFrames: BucketConfig;
  /** Frames served per second to one uid no profile lists. */
  strangerFrames: BucketConfig;
  /** Frames served per second to every uid no profile lists, together: strangers share one budget. */
  strangersTogether: BucketConfig;
  /** Refusals of one uid that get a receipt of their own; the rest go into that uid's summary receipt. */
  refusalReceipts: BucketConfig;
}

export const DEFAULT_ADMISSION: AdmissionConfig = {
  knownFrames: { perSecond: 50, burst: 200 },
  strangerFrames: { perSecond: 10, burst: 20 },
  strangersTogether: { perSecond: 20, burst: 40 },
  refusalReceipts: { perSecond: 1, burst: 16 },
};

/** Buckets kept at most; full ones are forgotten first, since a full bucket is the default. */
const MAX_BUCKETS = 4096;

interface Bucket {
  tokens: number;
  at: number;
}

/** A set of token buckets keyed by uid, on the monotonic clock. */
function createBuckets(clock: Clock, config: BucketConfig) {
  const buckets = new Map<number, Bucket>();

  function refilled(key: number): Bucket {
    const now = clock.monotonic();
    const bucket = buckets.get(key) ?? { tokens: config.burst, at: now };
    bucket.tokens = Math.min(config.burst, bucket.tokens + ((now - bucket.at) / 1000) * config.perSecond);
    bucket.at = now;
    if (!buckets.has(key)) {
      if (buckets.size >= MAX_BUCKETS) {
        for (const [k, b] of buckets) if (b.tokens >= config.burst) buckets.delete(k);
      }
      buckets.set(key, bucket);
    }
    return bucket;
  }

  return {
    /** Milliseconds until `key` has a whole token; 0 when it has one now. */
    wait(key: number): number {
      const bucket = refilled(key);
      if (bucket.tokens >= 1) return 0;
      // Less a hair, so the float error of the refill does not round a whole millisecond up.
      return Math.max(1, Math.ceil(((1 - bucket.tokens) * 1000) / config.perSecond - 1e-6));
    },
    take(key: number): void {
      refilled(key).tokens -= 1;
    },
  };
}

export interface Admission {
  /**
   * Take one frame's token for `uid`; 0 when it was taken, else how many
   * milliseconds to wait before asking again (nothing is taken then).
   */
  frame(uid: number, known: boolean): number;
  /** Whether this refusal of `uid` gets a receipt of its own (a token is taken), or joins the summary. */
  ownRefusalReceipt(uid: number): boolean;
}

/** The all-strangers budget's key: no uid is negative. */
const STRANGERS = -1;

/**
 * What a caller may cost: frames per uid are served at a bounded rate (the
 * server waits, reading nothing more from the connection meanwhile, so a
 * flood fills the kernel's buffer, not the broker's disk), and uids no
 * profile lists share one more budget, so many accounts together still
 * cannot crowd out the relay's own principal.
 */
export function createAdmission(deps: { clock: Clock }, config: AdmissionConfig): Admission {
  const known = createBuckets(deps.clock, config.knownFrames);
  const strangers = createBuckets(deps.clock, config.strangerFrames);
  const together = createBuckets(deps.clock, config.strangersTogether);
  const refusals = createBuckets(deps.clock, config.refusalReceipts);

  return {
    frame(uid, isKnown) {
      if (isKnown) {
        const wait = known.wait(uid);
        if (wait === 0) known.take(uid);
        return wait;
      }
      const wait = Math.max(strangers.wait(uid), together.wait(STRANGERS));
      if (wait === 0) {
        strangers.take(uid);
        together.take(STRANGERS);
      }
      return wait;
    },
    ownRefusalReceipt(uid) {
      if (refusals.wait(uid) > 0) return false;
      refusals.take(uid);
      return true;
    },
  };
}
