import type { InfraContext, Remote } from "./types.js";

/** Options of the transport that do not come from a profile. */
export interface RemoteOptions {
  /** `$CREDENTIALS_DIRECTORY` (systemd LoadCredential=), or null. */
  credentialsDirectory: string | null;
  /** The explicit fallback: read `<dir>/<credential id>` from this operator-owned 0600 directory instead. */
  keyFileDirectory: string | null;
}

/** Placeholder signature only: the ssh/rsync transport replaces it. */
export function createRemote(ctx: Omit<InfraContext, "remote">, options: RemoteOptions): Remote {
  throw new Error(
    `the transport is not built yet (${ctx.stateDir}, ${String(options.credentialsDirectory)})`,
  );
}
