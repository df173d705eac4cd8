import { type Args, type Hit, hit, type RuleInput, table } from "./args.js";
import { isEtcPath } from "./paths.js";

/**
 * Keys, secrets and certificates. Deleting a key from a keyring cannot be undone unless someone
 * kept a copy, and a revoked certificate stays revoked (Tier 3). Importing or generating keys,
 * editing trust, re-encrypting a file in place, installing a root certificate into the system's
 * trust store and changing a CA's provisioners are Tier 2. A key or a certificate written to a
 * new file is Tier 1, unless it replaces one under /etc (a host key, a service's certificate).
 */

const KEYRING_CHANGE = hit(2, "data_store_change");
const CONFIG = hit(2, "config_change");

/** gpg commands (long options, in any abbreviation gpg accepts) that add to or change a keyring. */
const GPG_CHANGES =
  /^(?:import|import-ownertrust|(?:full-|quick-)?gen(?:erate)?-key|quick-add-(?:key|uid)|quick-revoke-(?:uid|sig)|quick-set-(?:expire|primary-uid)|(?:quick-)?l?sign-key|edit-key|recv-keys|receive-keys|refresh-keys|fetch-keys|locate-keys|update-trustdb|change-passphrase|passwd|card-edit|edit-card)$/;

/**
 * gpg: `--delete-keys`, `--delete-secret-keys` and `--delete-secret-and-public-key` remove keys
 * from the keyring (a secret key with no copy elsewhere is gone, and everything encrypted to it
 * with it); `--send-keys` publishes to a key server, which never forgets.
 */
function gpg({ args }: RuleInput): Hit | null {
  const longs = args.longs();
  if (longs.some((l) => /^delete-./.test(l))) return hit(3, "data_store_destruction");
  if (longs.includes("send-keys")) return hit(2, "remote_change");
  return longs.some((l) => GPG_CHANGES.test(l)) ? KEYRING_CHANGE : null;
}

/** ssh-keygen's modes that only print: fingerprints, public halves, lookups, certificates, verification. */
const SSH_KEYGEN_READS = /^-[A-Za-z]*[lyFLQeiB]/;

/**
 * ssh-keygen writes the file -f names (a new key, a changed passphrase or comment, a signed
 * certificate, a rewritten known_hosts). Under /etc that is a host key or the system's known
 * hosts: clients see another host, or trust other keys (Tier 2). `-A` creates the missing host
 * keys there.
 */
function sshKeygen({ args }: RuleInput): Hit | null {
  if (args.has("-A")) return CONFIG;
  if (args.values.some((v) => SSH_KEYGEN_READS.test(v)) || args.has("-Y") || args.has("-E")) return null;
  const file = args.optionValue("-f");
  return file !== undefined && isEtcPath(file) ? CONFIG : null;
}

/** sops subcommands that rewrite the file they are given. */
const SOPS_REWRITES = new Set(["updatekeys", "set", "unset", "groups"]);

/**
 * sops: re-encrypting, decrypting, rotating or editing values in place (`-i`, `updatekeys`,
 * `rotate -i`, `set`, `unset`, `groups`) changes the file a deployment reads (Tier 2, as config).
 * `--output` writes the result where it points. `exec-env` and `exec-file` run the command they are
 * given with the secrets, which is not read here; `publish` uploads the file.
 */
function sops({ args }: RuleInput): Hit | null {
  const sub = args.subcommand(new Set(["--extract", "--input-type", "--output-type", "--output"]));
  const verb = sub?.value;
  if (args.short("i") || args.long("in-place", 4) || (verb !== undefined && SOPS_REWRITES.has(verb)))
    return CONFIG;
  if (verb === "exec-env" || verb === "exec-file") return hit(2, "opaque_program");
  if (verb === "publish") return hit(2, "remote_change");
  const output = args.optionValue("--output");
  return output !== undefined && isEtcPath(output) ? CONFIG : null;
}

/** step's command words: a group, a verb, and the objects or verbs of the CA's administration. */
function stepWords(args: Args): string[] {
  return args.values.filter((v) => !v.startsWith("-")).slice(0, 5);
}

const CA_OBJECTS = new Set(["provisioner", "admin", "policy", "acme"]);

/**
 * smallstep's `step`: revoking a certificate is final (Tier 3, as `certbot revoke`); installing or
 * removing a root in the system's trust store, changing the CA's provisioners, admins or policy,
 * and a renewal that runs a command or keeps running are Tier 2. Creating, signing, renewing into
 * files and asking the CA for a certificate are Tier 1.
 */
function step({ args }: RuleInput): Hit | null {
  const words = stepWords(args);
  const [group, verb] = words;
  if (verb === "revoke") return hit(3, "infrastructure_destruction");
  if (group === "certificate" && (verb === "install" || verb === "uninstall")) return CONFIG;
  if (group === "ca" && verb === "bootstrap" && args.long("install")) return CONFIG;
  if (group === "ca" && verb === "renew" && (args.long("exec") || args.long("daemon")))
    return hit(2, "service_change");
  const administers = words.slice(2).some((w) => /^(?:add|update|remove|allow|deny)$/.test(w));
  return group === "ca" && CA_OBJECTS.has(verb ?? "") && administers ? CONFIG : null;
}

export const SECRET_RULES = table([
  [["gpg", "gpg2"], gpg],
  ["ssh-keygen", sshKeygen],
  ["sops", sops],
  ["step", step],
]);
