import { subsOf, tablePart } from "./define.js";
import { operands } from "./programs-files.js";
import type { ReadEntry } from "./spec.js";

/**
 * Secrets and certificates in their reading forms: a file decrypted to stdout, a key's public
 * half or a certificate printed, the certificates a client manages listed. Encrypting or
 * decrypting in place, writing a file, rotating keys and asking a CA for anything are left out
 * (rules/secrets.ts judges them). gpg and ssh-keygen are in programs-tools.ts and programs-host.ts.
 */

const { entries, spec } = tablePart();

/**
 * sops: `-d`/`--decrypt FILE` (or `sops decrypt FILE`) prints the plain text; `filestatus` says
 * whether a file is encrypted. Without them sops opens an editor; -i, --output, --set, --unset,
 * rotation and its key options write the file, and --config or --keyservice point sops elsewhere.
 */
const SOPS_VALUED = ["--extract", "--input-type", "--output-type", "--filename-override", "--indent"];
spec("sops", {
  valued: SOPS_VALUED,
  deny: [
    "-i",
    "--in-place",
    "--output",
    "-e",
    "--encrypt",
    "-r",
    "--rotate",
    "--set",
    "--unset",
    "--config",
    "--keyservice",
  ],
  check: (args) => {
    if (args.some((w) => /^--(?:add|rm)-/.test(w.value))) return false;
    const ops = operands(args, SOPS_VALUED);
    if (ops.length === 2 && /^(?:decrypt|filestatus)$/.test(ops[0]!.value)) return true;
    return ops.length === 1 && args.some((w) => w.value === "-d" || w.value === "--decrypt");
  },
});

// age prints what it encrypts or decrypts unless -o names a file; -j runs a plugin it names.
spec("age", {
  valued: ["-i", "--identity", "-r", "--recipient", "-R", "--recipients-file"],
  deny: ["-o", "--output", "-j"],
});
// age-keygen prints a new identity, or with -y the recipient of one; -o writes the file.
spec("age-keygen", { deny: ["-o", "--output"] });

/**
 * smallstep's `step`: certificates, tokens and keys inspected, verified or fingerprinted, the CA's
 * health and its provisioners and admins listed. Creating, signing, renewing, revoking and
 * installing a certificate are not reads.
 */
spec("step", {
  deny: ["--out", "--output-file"],
  subs: {
    certificate: { subs: subsOf(["inspect", "verify", "fingerprint", "lint", "needs-renewal"]) },
    crypto: {
      subs: {
        jwt: { subs: subsOf(["inspect", "verify"]) },
        key: { subs: subsOf(["inspect", "fingerprint"]) },
        jwk: { subs: subsOf(["thumbprint"]) },
      },
    },
    ca: {
      subs: { health: true, provisioner: { subs: subsOf(["list"]) }, admin: { subs: subsOf(["list"]) } },
    },
    ssh: { subs: subsOf(["inspect", "fingerprint", "list", "hosts"]) },
    context: { subs: subsOf(["list", "current"]) },
    path: true,
    version: true,
  },
});

/**
 * certbot lists the certificates it manages and its plugins (writing nothing but its own log);
 * without a subcommand it obtains and installs a certificate. `plugins --init --prepare` sets
 * the plugins up, and -c reads another configuration file.
 */
spec("certbot", {
  valued: ["--config-dir", "--work-dir", "--logs-dir", "--cert-name", "-d", "--domains", "--server"],
  deny: ["-c", "--config"],
  bare: false,
  subs: { certificates: true, plugins: { deny: ["--init", "--prepare"] } },
});

export const SECRET_PROGRAMS: ReadonlyMap<string, ReadEntry> = entries;
