import { OAuthStateError, type TokenRecord } from "./oauth-state.js";

/** Access tokens remembered at once; past it the oldest is forgotten (it is then only refused in an outage). */
const MAX_REMEMBERED = 4096;

/**
 * The access tokens this relay verified against the shared state, kept only to bridge an outage of
 * that state (docs/scaling.md): while the database answers, every request is checked there, so a
 * revocation anywhere takes effect at once; while it cannot be reached, a token this relay already
 * saw valid keeps working until its own expiry, and every other is refused. Only digests are kept.
 */
export interface KnownTokens {
  remember(digest: string, record: TokenRecord): void;
  forget(digest: string): void;
  /**
   * The record `read` finds in the state; when the state is unreachable (a transient failure), the
   * record of a token verified before and not expired at `nowSeconds`, else that failure again.
   */
  lookUp(
    digest: string,
    nowSeconds: number,
    read: () => Promise<TokenRecord | null | undefined>,
  ): Promise<TokenRecord | null | undefined>;
}

export function createKnownTokens(max = MAX_REMEMBERED): KnownTokens {
  const known = new Map<string, TokenRecord>();
  return {
    remember(digest, record) {
      known.delete(digest);
      known.set(digest, record);
      while (known.size > max) {
        const oldest = known.keys().next();
        if (oldest.done) break;
        known.delete(oldest.value);
      }
    },
    forget: (digest) => void known.delete(digest),
    async lookUp(digest, nowSeconds, read) {
      try {
        return await read();
      } catch (err) {
        const record = err instanceof OAuthStateError && err.transient ? known.get(digest) : undefined;
        if (!record || record.expires_at < nowSeconds) throw err;
        return record;
      }
    },
  };
}
