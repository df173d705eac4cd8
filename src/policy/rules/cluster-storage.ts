import { type Args, type Hit, hit, type RuleInput, table } from "./args.js";

/**
 * Clustered and pooled storage (Ceph, RBD, RADOS, GlusterFS): removing an
 * OSD, a pool, an image, a file system or the objects in a pool destroys the
 * data on it (Tier 3, storage_destruction); taking an OSD out, stopping a
 * volume or changing a pool's settings moves or hides data and comes back
 * (Tier 2). Listing, status and health commands read.
 */

const DESTROY = hit(3, "storage_destruction");
const CHANGE = hit(2, "infrastructure_change");

const CEPH_VALUED = new Set([
  "-c",
  "--conf",
  "-i",
  "--id",
  "--user",
  "-n",
  "--name",
  "--cluster",
  "-k",
  "--keyring",
  "-f",
  "--format",
  "-o",
  "--out-file",
  "-m",
  "-p",
  "--pool",
  "--namespace",
]);

/** The words that are not options, skipping option values, lower-cased. */
function operandsOf(args: Args, valued: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const v = args.values[i]!;
    if (valued.has(v)) i++;
    else if (!(v.startsWith("-") && v.length > 1)) out.push(v.toLowerCase());
  }
  return out;
}

const is = (word: string | undefined, ...names: string[]): boolean =>
  word !== undefined && names.includes(word);

/** `ceph osd purge|destroy|rm`, `ceph osd pool delete|rm`, `ceph fs rm`, `ceph orch osd rm`, `ceph osd out`. */
function ceph({ args }: RuleInput): Hit | null {
  const [a, b, c] = operandsOf(args, CEPH_VALUED);
  if (a === "osd") {
    if (is(b, "purge", "purge-new", "destroy", "rm", "lost")) return DESTROY;
    if (b === "pool" && is(c, "delete", "rm")) return DESTROY;
    if (b === "pool" && is(c, "set", "rename", "mksnap", "rmsnap", "set-quota")) return CHANGE;
    if (is(b, "out", "down", "reweight", "crush", "set", "unset", "pause", "primary-affinity")) return CHANGE;
    return null;
  }
  if (a === "fs" && is(b, "rm", "delete")) return DESTROY;
  if (a === "fs" && is(b, "fail", "set", "reset")) return CHANGE;
  if (a === "orch" && b === "osd" && is(c, "rm", "zap")) return DESTROY;
  if (a === "orch" && is(b, "rm", "host", "daemon", "apply")) return CHANGE;
  if (a === "mon" && is(b, "remove", "rm")) return CHANGE;
  if (a === "auth" && is(b, "del", "rm")) return CHANGE;
  return null;
}

/** `ceph-volume lvm zap` wipes a device; `--destroy` removes its volume groups too. */
function cephVolume({ args }: RuleInput): Hit | null {
  const ops = operandsOf(args, new Set(["--cluster", "--log-level", "--log-path"]));
  return ops.includes("zap") ? DESTROY : null;
}

/** rbd: removing an image or purging snapshots loses data; rolling back overwrites it; trash is reversible. */
function rbd({ args }: RuleInput): Hit | null {
  const [a, b] = operandsOf(args, CEPH_VALUED);
  if (is(a, "rm", "remove")) return DESTROY;
  if (a === "snap" && is(b, "purge", "rm", "remove", "rollback", "revert")) return DESTROY;
  if (a === "trash" && is(b, "rm", "remove", "purge")) return DESTROY;
  if (a === "resize" && (args.long("allow-shrink") || args.values.includes("--allow-shrink"))) return DESTROY;
  if (is(a, "trash", "mv", "rename", "resize", "flatten", "create", "map", "unmap", "device", "feature"))
    return CHANGE;
  return null;
}

/** rados: `purge` empties a pool, `rm`/`rmpool`/`cleanup` delete objects or a pool. */
function rados({ args }: RuleInput): Hit | null {
  const [a] = operandsOf(args, CEPH_VALUED);
  if (is(a, "purge", "rm", "rmpool", "cleanup", "rmomapkey", "truncate")) return DESTROY;
  return is(a, "put", "mkpool", "cp", "setxattr", "rmxattr", "create") ? CHANGE : null;
}

/** gluster volume delete / brick removal destroy data; stop, reset and set change it. */
function gluster({ args }: RuleInput): Hit | null {
  const ops = operandsOf(args, new Set(["--mode", "--remote-host"]));
  const [a, b] = ops;
  if (a === "volume" && (is(b, "delete") || ops.includes("remove-brick"))) return DESTROY;
  if (a === "snapshot" && is(b, "delete", "restore")) return DESTROY;
  if (a === "volume" && is(b, "stop", "reset", "set", "replace-brick", "rebalance", "create", "start"))
    return CHANGE;
  if (a === "peer" && is(b, "detach")) return CHANGE;
  return null;
}

export const CLUSTER_STORAGE_RULES = table([
  ["ceph", ceph],
  ["ceph-volume", cephVolume],
  [
    ["ceph-deploy"],
    ({ args }) => (args.values.some((v) => /^(?:purge|purgedata|zap)$/.test(v)) ? DESTROY : null),
  ],
  ["rbd", rbd],
  ["rados", rados],
  ["gluster", gluster],
]);
