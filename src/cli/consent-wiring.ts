import { consoleOrigin, type Settings } from "../config/index.js";
import {
  type ApprovalVerifier,
  type ConsentStore,
  channelVerifier,
  createPasskeyVerifier,
  createSshsigVerifier,
  describeAct,
  ledgerPath,
  openLedger,
  openPgStore,
  openSqliteStore,
  type PasskeyCounters,
  rememberConsumedNonces,
  withLedger,
} from "../consent/index.js";
import { type Clock, cryptoIds } from "../core/index.js";
import { createConsentGate, type Gate } from "../runner/index.js";
import type { PgState } from "../state/index.js";
import type { ConsentActs } from "../tools/index.js";

/** What the console needs to approve and deny: the gate's own store and passkey verifier. */
export interface ConsoleApprovals {
  store: ConsentStore;
  verifier: ApprovalVerifier;
}

interface OpenedConsent {
  gate: Gate;
  approvals: ConsoleApprovals | null;
  endSession(session: string): Promise<void>;
  pending(): Promise<number | null>;
  close(): Promise<void>;
}

/** How long a consent transaction waits for another process's lock before the call is refused. */
const CONSENT_BUSY_TIMEOUT_MS = 2000;

/**
 * The consent gate over the operator's allowed-signers file and the consent
 * store (docs/consent.md). Throws, so start-up fails, when the file is one
 * the relay could have written, names no signer, or the store cannot be opened.
 */
export async function openConsent(
  settings: Settings,
  deps: { clock: Clock; actOf: ConsentActs; shared: PgState | null; counters: PasskeyCounters | null },
): Promise<OpenedConsent> {
  if (settings.consentAllowedSigners === "") {
    throw new Error(
      "RELAY_SHELL_CONSENT=true needs RELAY_SHELL_CONSENT_ALLOWED_SIGNERS, the operator's allowed-signers file",
    );
  }
  const passkey = deps.counters === null ? null : openPasskeyChannel(settings, deps.counters);
  const verifier = channelVerifier({
    sshsig: createSshsigVerifier(settings.consentAllowedSigners, process.geteuid?.() ?? 0),
    ...(passkey ? { passkey } : {}),
  });
  // Several relays share one PostgreSQL store (docs/scaling.md); one relay keeps its own SQLite file.
  const opened = deps.shared
    ? await openPgStore(deps.shared, { clock: deps.clock, ids: cryptoIds })
    : openSqliteStore(settings.consentDb, {
        clock: deps.clock,
        ids: cryptoIds,
        busyTimeoutMs: CONSENT_BUSY_TIMEOUT_MS,
      });
  if (!opened.ok) {
    const where = deps.shared ? `on PostgreSQL at ${deps.shared.target}` : settings.consentDb;
    throw new Error(`the consent store ${where} cannot be opened: ${opened.error.detail}`);
  }
  // The database is writable by this process's own user: withdrawals and spent nonces are also in
  // the operator's append-only ledger beside the allowed-signers file (whose directory the
  // verifier above checked), and consumed nonces in memory.
  const ledger = openLedger(ledgerPath(settings.consentAllowedSigners), { clock: deps.clock });
  if (!ledger.ok) {
    await opened.value.close();
    throw new Error(`the consent ledger cannot be used: ${ledger.error}`);
  }
  const store = withLedger(rememberConsumedNonces(opened.value, deps.clock), ledger.value);
  const gate = createConsentGate({
    store,
    actOf: deps.actOf,
    describe: (request, expiresInSeconds) =>
      describeAct({
        id: request.id,
        act: request.act,
        basis: request.basis,
        expiresInSeconds,
        session: request.session,
        clientId: request.clientId,
      }),
    verifier,
    clock: deps.clock,
    ledger: ledger.value,
    settings: {
      leaseMode: settings.consentLeaseMode,
      leaseTtlSeconds: settings.consentLeaseTtl,
      leaseBudget: settings.consentLeaseBudget,
      sessionIdleSeconds: settings.consentSessionIdle,
      approvalTtlSeconds: settings.consentApprovalTtl,
      waitSeconds: settings.consentWait,
    },
  });
  return {
    gate,
    // One store and one verifier (and so one counters file) for the gate and the console.
    approvals: passkey ? { store, verifier: passkey } : null,
    endSession: (session) => gate.endSession(session),
    async pending() {
      const listed = await store.listRequests();
      return listed.ok ? listed.value.filter((r) => r.status === "pending").length : null;
    },
    close: () => store.close(),
  };
}

/**
 * The passkey channel of consent: approvals given in the operator console
 * with a passkey of the operator's passkeys file, for the configured
 * relying party and origin (docs/consent.md, "The passkey channel"). The
 * sign counters are the relay's own state, the same store the console's logins count in.
 * Throws, so start-up fails, on an unsafe or unparsable file.
 */
function openPasskeyChannel(settings: Settings, counters: PasskeyCounters): ApprovalVerifier {
  // The console's own origin: the setting, or localhost on the port the console is served on.
  const origin = consoleOrigin(settings);
  try {
    return createPasskeyVerifier(settings.consolePasskeys, {
      selfUid: process.geteuid?.() ?? 0,
      rpId: settings.consoleRpId,
      origin,
      counters,
    });
  } catch (err) {
    throw new Error(
      `RELAY_SHELL_CONSOLE_PASSKEYS: the passkeys file cannot be used: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}
