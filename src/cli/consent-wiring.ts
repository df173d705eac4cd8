import { dirname, join } from "node:path";
import { consoleOrigin, type Settings } from "../config/index.js";
import {
  type ApprovalVerifier,
  type ConsentStore,
  channelVerifier,
  createPasskeyVerifier,
  createSshsigVerifier,
  describeAct,
  fileCounters,
  ledgerPath,
  openLedger,
  openSqliteStore,
  rememberConsumedNonces,
  withLedger,
} from "../consent/index.js";
import { type Clock, cryptoIds } from "../core/index.js";
import { createConsentGate, type Gate } from "../runner/index.js";
import type { ConsentActs } from "../tools/index.js";

/** What the console needs to approve and deny: the gate's own store and passkey verifier. */
export interface ConsoleApprovals {
  store: ConsentStore;
  verifier: ApprovalVerifier;
}

interface OpenedConsent {
  gate: Gate;
  approvals: ConsoleApprovals | null;
  endSession(session: string): void;
  pending(): number | null;
  close(): void;
}

/** How long a consent transaction waits for another process's lock before the call is refused. */
const CONSENT_BUSY_TIMEOUT_MS = 2000;

/**
 * The consent gate over the operator's allowed-signers file and the consent
 * store (docs/consent.md). Throws, so start-up fails, when the file is one
 * the relay could have written, names no signer, or the store cannot be opened.
 */
export function openConsent(settings: Settings, deps: { clock: Clock; actOf: ConsentActs }): OpenedConsent {
  if (settings.consentAllowedSigners === "") {
    throw new Error(
      "RELAY_SHELL_CONSENT=true needs RELAY_SHELL_CONSENT_ALLOWED_SIGNERS, the operator's allowed-signers file",
    );
  }
  const passkey = settings.consolePasskeys === "" ? null : openPasskeyChannel(settings);
  const verifier = channelVerifier({
    sshsig: createSshsigVerifier(settings.consentAllowedSigners, process.geteuid?.() ?? 0),
    ...(passkey ? { passkey } : {}),
  });
  const opened = openSqliteStore(settings.consentDb, {
    clock: deps.clock,
    ids: cryptoIds,
    busyTimeoutMs: CONSENT_BUSY_TIMEOUT_MS,
  });
  if (!opened.ok)
    throw new Error(`the consent store ${settings.consentDb} cannot be opened: ${opened.detail}`);
  // The database is writable by this process's own user: withdrawals and spent nonces are also in
  // the operator's append-only ledger beside the allowed-signers file (whose directory the
  // verifier above checked), and consumed nonces in memory.
  const ledger = openLedger(ledgerPath(settings.consentAllowedSigners), { clock: deps.clock });
  if (!ledger.ok) {
    opened.value.close();
    throw new Error(`the consent ledger cannot be used: ${ledger.detail}`);
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
    pending() {
      const listed = store.listRequests();
      return listed.ok ? listed.value.filter((r) => r.status === "pending").length : null;
    },
    close: () => store.close(),
  };
}

/**
 * The passkey channel of consent: approvals given in the operator console
 * with a passkey of the operator's passkeys file, for the configured
 * relying party and origin (docs/consent.md, "The passkey channel"). The
 * sign counters are the relay's own state, kept beside the consent store.
 * Throws, so start-up fails, on an unsafe or unparsable file.
 */
function openPasskeyChannel(settings: Settings): ApprovalVerifier {
  // The console's own origin: the setting, or localhost on the port the console is served on.
  const origin = consoleOrigin(settings);
  try {
    return createPasskeyVerifier(settings.consolePasskeys, {
      selfUid: process.geteuid?.() ?? 0,
      rpId: settings.consoleRpId,
      origin,
      counters: fileCounters(join(dirname(settings.consentDb), "passkey-counters.json")),
    });
  } catch (err) {
    throw new Error(
      `RELAY_SHELL_CONSOLE_PASSKEYS: the passkeys file cannot be used: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}
