import { subsOf, tablePart } from "./define.js";
import type { ReadEntry, ReadSpec } from "./spec.js";

/**
 * Object-storage clients in their listing and printing forms: MinIO's `mc`, rclone, s3cmd, azcopy
 * and gsutil (`aws s3` is in programs-cloud.ts). Every form that copies, syncs, deletes, sets a
 * bucket's configuration or writes a report file is left out. An OAuth remote of rclone may have
 * its access token refreshed into rclone's configuration during a listing; that is the client
 * renewing its own grant, as gcloud and az do in their credential caches during the listings
 * proven there, and changes no remote state, so the listing stays a proof. `--config` and the
 * like, which point a client at other settings, are refused. programs-backup.ts adds these entries
 * to its part of the table.
 */

const { entries, spec } = tablePart();

const words = (list: string): string[] => list.split(" ");
const only = (list: string): ReadSpec => ({ subs: subsOf(words(list)) });

// MinIO's client. The same name is Midnight Commander's, a file manager that runs commands typed
// into it: alone it is not proven, and nothing may arrive on its stdin (`mc pipe` uploads stdin).
const MC: ReadSpec = {
  sendsStdin: true,
  bare: false,
  valued: words("--limit-upload --limit-download -H --custom-header --resolve --rewind --version-id"),
  // find --exec runs a command per object.
  deny: words("-C --config-dir --exec"),
  subs: {
    ...subsOf(words("ls cat head stat du tree find diff ping ready watch")),
    alias: only("list ls"),
    anonymous: only("get get-json list links"),
    legalhold: only("info"),
    retention: only("info"),
    tag: only("list"),
    ilm: { subs: { ls: true, rule: only("ls list export"), tier: only("ls list info") } },
    event: only("ls list"),
    quota: only("info"),
    replicate: only("ls list status"),
    encrypt: only("info"),
    version: only("info"),
    share: only("list"),
    admin: {
      subs: {
        info: true,
        trace: true,
        user: only("list ls info"),
        group: only("list ls info"),
        policy: only("list ls info entities"),
        config: only("get export"),
      },
    },
  },
};
spec("mc", MC);
spec("mcli", MC);

// rclone: listings, sizes, hashes and comparisons. check and checksum write report files with
// --combined, --match, --differ, --error and --missing-on-*; tree and hashsum with -o/--output-file.
// A remote's options may be given in its name (`:sftp,ssh="…":path`), and the sftp and webdav
// backends run the programs their `ssh`, `server-command` and `bearer-token-command` options name.
const RCLONE_PLAIN: ReadSpec = { check: (args) => !args.some((w) => /^:?[\w.-]*,[^:]*=/.test(w.value)) };
spec("rclone", {
  valued: words(
    "--max-depth --include --exclude --filter --include-from --exclude-from --filter-from --min-size " +
      "--max-size --min-age --max-age --bwlimit --transfers --checkers --timeout --contimeout --retries " +
      "--tpslimit --user-agent --log-level --stats",
  ),
  deny: words(
    "--config --log-file --password-command --rc -o --output --output-file --combined --match --differ " +
      "--error --missing-on-src --missing-on-dst --cache-dir --sftp-ssh --sftp-server-command " +
      "--webdav-bearer-token-command",
  ),
  subs: {
    ...Object.fromEntries(
      words(
        "ls lsd lsl lsf lsjson size cat check cryptcheck checksum tree about listremotes md5sum sha1sum " +
          "hashsum version",
      ).map((k) => [k, RCLONE_PLAIN]),
    ),
    config: only("show file paths providers dump redacted"),
    backend: only("features"),
  },
});

// s3cmd: listings, disk usage, bucket and object information, pending multipart uploads, and URLs
// signed locally. --configure writes the configuration; --cache-file keeps sync's hash cache.
spec("s3cmd", {
  valued: words("--access_key --secret_key --access_token --region --bucket-location --host --host-bucket"),
  deny: words("-c --config --configure --cache-file"),
  subs: subsOf(
    words("ls la du info multipart listmp signurl sign ws-info getlifecycle getnotification cflist cfinfo"),
  ),
});

// azcopy: listings and the local job records; `jobs resume` runs a transfer again.
spec("azcopy", {
  valued: words("--log-level --output-type --output-level --trusted-microsoft-suffixes --cap-mbps"),
  subs: { list: true, env: true, jobs: only("list ls show"), login: only("status") },
});

// gsutil: listings, printing and the `get` forms of bucket settings. -o overrides the boto
// configuration, which names credential helpers and other code.
const GSUTIL_GET = only("get");
spec("gsutil", {
  valued: ["-h", "-u", "-i"],
  valuedLetters: "hui",
  deny: ["-o"],
  subs: {
    ...subsOf(words("ls du cat stat hash version")),
    ...Object.fromEntries(
      words(
        "acl defacl iam lifecycle cors logging versioning web label retention ubla pap rpo autoclass " +
          "defstorageclass requesterpays bucketpolicyonly",
      ).map((k) => [k, GSUTIL_GET]),
    ),
    notification: only("list"),
  },
});

export const OBJECT_STORE_PROGRAMS: ReadonlyMap<string, ReadEntry> = entries;
