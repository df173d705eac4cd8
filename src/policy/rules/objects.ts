import { interpreterName, SHELLS } from "../opaque/invocation.js";
import { baseName } from "../shell/words.js";
import { type Args, type Hit, hit, type Rule, type RuleInput } from "./args.js";
import { writesPaths } from "./files.js";
import { isBlockDevice, isCriticalPath, normalizePath } from "./paths.js";

/**
 * Object-storage clients and local archives, by kind. Objects written, moved or deleted by name,
 * a bucket made or removed while empty, a bucket's settings changed: Tier 2
 * (infrastructure_change), as for `aws s3` (infra.ts). Deleting many objects at once (recursive,
 * every version, a forced bucket removal, `rclone delete` and `purge`) or a sync that deletes at
 * its destination what the source lacks: Tier 3, infrastructure_destruction at a remote
 * destination, file_destruction at a local one. A download or an extraction writes files and is
 * judged by where it writes (files.ts): Tier 1 in a home or a scratch directory, Tier 2 under
 * /etc or the system's trees, Tier 3 onto a login gate. An archive that deletes its sources
 * (`tar --remove-files`, `zip -m` of a tree) deletes a tree. Each client's own dry run reports
 * and changes nothing.
 */

const INFRA = hit(2, "infrastructure_change");
const INFRA_LOSS = hit(3, "infrastructure_destruction");
const FILE_LOSS = hit(3, "file_destruction");
const MOUNT = hit(2, "filesystem_change");

const set = (list: string): ReadonlySet<string> => new Set(list.split(" "));

/** The operands of a command in their own case, skipping the values of the named options. */
export function operandsOf(args: Args, valued: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const v = args.values[i]!;
    if (i > args.optionEnd) out.push(v);
    else if (i === args.optionEnd) continue;
    else if (valued.has(v)) i++;
    else if (!(v.startsWith("-") && v.length > 1)) out.push(v);
  }
  return out;
}

/**
 * A copy or sync onto `dest`: objects written at a remote destination, files where it is local;
 * with `deletes`, what the source lacks is removed at the destination too.
 */
function transfer(dest: string | undefined, remote: (p: string) => boolean, deletes: boolean): Hit | null {
  if (dest === undefined) return null;
  if (remote(dest)) return deletes ? INFRA_LOSS : INFRA;
  return deletes ? FILE_LOSS : writesPaths([dest]);
}

const MC_VALUED = set(
  "-C --config-dir --limit-upload --limit-download -H --custom-header --resolve --rewind --older-than " +
    "--newer-than --storage-class --attr --tags --encrypt-key --version-id --region --exec --name --path",
);
/** mc names objects `alias/bucket/key`; a path written as a local one is a file. */
const mcRemote = (p: string): boolean => !/^(?:\/|~|\.{1,2}(?:\/|$))/.test(p);
const MC_SETTINGS = set(
  "retention legalhold tag anonymous policy ilm event quota replicate encrypt version cors batch",
);
const MC_WRITES = set(
  "set set-json clear remove rm add edit update import enable disable suspend resync start cancel restore " +
    "create attach detach unset reset restart stop freeze unfreeze",
);

/** `mc admin`: users, access keys and policies are who may reach the data. */
function mcAdmin(group: string | undefined, verb: string | undefined): Hit | null {
  const removes = verb === "remove" || verb === "rm";
  const writes = MC_WRITES.has(verb ?? "");
  if (group === "user" || group === "accesskey" || group === "svcacct")
    return removes ? hit(3, "account_access") : writes ? hit(2, "account_change") : null;
  if (group === "group") return writes ? hit(2, "account_change") : null;
  if (group === "policy" || group === "idp") return writes ? hit(2, "account_access") : null;
  if (group === "service") return writes ? hit(2, "service_change") : null;
  if (group === "config") return writes ? hit(2, "config_change") : null;
  if (group === "update") return hit(2, "package_change");
  return group === "heal" || writes ? INFRA : null;
}

/** MinIO's client (also `mcli`): `rm -r`, `--versions` and `rb --force` delete whole prefixes and buckets. */
function mc({ args }: RuleInput): Hit | null {
  if (args.long("dry-run")) return null;
  const ops = operandsOf(args, MC_VALUED);
  const [a, b, c] = ops.map((o) => o.toLowerCase());
  const dest = ops[ops.length - 1];
  switch (a) {
    case "rm":
      return args.short("r") ||
        args.long("recursive") ||
        args.long("versions") ||
        args.long("non-current") ||
        args.long("stdin") ||
        args.long("purge")
        ? INFRA_LOSS
        : INFRA;
    case "rb":
      return args.long("force") || args.long("dangerous") ? INFRA_LOSS : INFRA;
    case "mirror":
      return transfer(dest, mcRemote, args.long("remove"));
    case "cp":
    case "od":
    case "put":
      return ops.length >= 3 ? transfer(dest, mcRemote, false) : null;
    case "mv":
      return ops.slice(1).some(mcRemote) ? INFRA : writesPaths(ops.slice(1));
    case "mb":
    case "undo":
      return INFRA;
    case "pipe":
      return transfer(ops[1], mcRemote, false);
    case "admin":
      return mcAdmin(b, c);
  }
  return MC_SETTINGS.has(a ?? "") && ops.slice(1).some((o) => MC_WRITES.has(o.toLowerCase())) ? INFRA : null;
}

const RCLONE_VALUED = set(
  "--config --transfers --checkers --max-depth --include --exclude --filter --include-from --exclude-from " +
    "--filter-from --files-from --bwlimit --backup-dir --suffix --log-file --log-level --min-age --max-age " +
    "--min-size --max-size --timeout --retries --order-by",
);
/** An rclone remote is `name:path`, `name,option=value:path` or `:backend:path`; a drive letter is not one. */
const rcloneRemote = (p: string): boolean => /^(?::|[\w.-]{2,}[:,])/.test(p);

/**
 * rclone: `delete` removes every file under its path and `purge` the path itself; `cleanup` empties
 * the trash and old versions; `dedupe` deletes duplicates. `sync` and `bisync` delete what the
 * other side lacks, unless `--backup-dir` keeps it.
 */
function rclone({ args }: RuleInput): Hit | null {
  const ops = operandsOf(args, RCLONE_VALUED);
  const verb = ops[0]?.toLowerCase() ?? "";
  const target = ops[1];
  const dest = ops[ops.length - 1];
  if (verb === "sync" || verb === "bisync") {
    if (ops.length < 3) return null;
    const kept = args.optionValue("--backup-dir") !== undefined;
    return verb === "bisync" && ops.slice(1).some(rcloneRemote)
      ? INFRA_LOSS
      : transfer(dest, rcloneRemote, !kept);
  }
  if (set("delete purge cleanup dedupe").has(verb) && target !== undefined)
    return rcloneRemote(target) ? INFRA_LOSS : FILE_LOSS;
  if (set("deletefile rmdir rmdirs").has(verb))
    return target !== undefined && rcloneRemote(target) ? INFRA : null;
  if (verb === "move" || verb === "moveto")
    return ops.slice(1).some(rcloneRemote) ? INFRA : writesPaths(ops.slice(1));
  if (set("copy copyto copyurl rcat touch mkdir settier link").has(verb))
    return transfer(dest, rcloneRemote, false);
  if (set("mount nfsmount cmount").has(verb)) return MOUNT;
  return verb === "selfupdate" ? hit(2, "package_change") : null;
}

const gsRemote = (p: string): boolean => /^(?:gs|s3):\/\//i.test(p);
const GSUTIL_SETTINGS = set(
  "acl defacl iam lifecycle cors logging versioning web label retention ubla pap rpo autoclass " +
    "defstorageclass requesterpays bucketpolicyonly notification kms",
);

/** gsutil: `rb` removes only an empty bucket; `rsync -d` deletes what the source lacks. */
function gsutil({ args }: RuleInput): Hit | null {
  const ops = operandsOf(args, set("-o -h -u -i"));
  const [verb, sub] = ops.map((o) => o.toLowerCase());
  const dest = ops[ops.length - 1];
  if (verb === "rm")
    return args.short("rRaI") || args.long("recursive") || args.long("all-versions") ? INFRA_LOSS : INFRA;
  if (verb === "rsync") return ops.length >= 3 ? transfer(dest, gsRemote, args.short("d")) : null;
  if (verb === "cp") return ops.length >= 3 ? transfer(dest, gsRemote, false) : null;
  if (set("mv rb mb compose setmeta rewrite perfdiag").has(verb ?? "")) return INFRA;
  if (GSUTIL_SETTINGS.has(verb ?? ""))
    return sub === undefined || sub === "get" || sub === "list" ? null : INFRA;
  return verb === "update" ? hit(2, "package_change") : null;
}

const s3Remote = (p: string): boolean => /^s3:\/\//i.test(p);
const S3CMD_WRITES = set(
  "put cp mv modify mb restore setacl setpolicy delpolicy setcors delcors setlifecycle dellifecycle " +
    "setnotification delnotification setversioning setownership setblockpublicaccess payer expire fixbucket " +
    "ws-create ws-delete cfcreate cfmodify cfinval abortmp",
);

/** s3cmd: `del -r`, `rb -r`/`--force` and `sync --delete-removed` delete many objects; cfdelete a distribution. */
function s3cmd({ args }: RuleInput): Hit | null {
  const ops = operandsOf(args, set("-c --config --access_key --secret_key --region --host --host-bucket"));
  const verb = ops[0]?.toLowerCase() ?? "";
  const many = args.short("r") || args.long("recursive");
  if (verb === "del" || verb === "rm") return many ? INFRA_LOSS : INFRA;
  if (verb === "rb") return many || args.long("force") ? INFRA_LOSS : INFRA;
  if (verb === "cfdelete") return INFRA_LOSS;
  if (verb === "sync" || verb === "get")
    return ops.length >= 3 ? transfer(ops[ops.length - 1], s3Remote, args.long("delete-removed")) : null;
  if (verb === "accesslog")
    return args.long("access-logging-target-prefix") || args.long("no-access-logging") ? INFRA : null;
  return S3CMD_WRITES.has(verb) ? INFRA : null;
}

const azRemote = (p: string): boolean => /^https?:\/\//i.test(p);

/** azcopy: `sync --delete-destination=true` (or `prompt`) deletes at the destination; `remove --recursive` a tree. */
function azcopy({ args }: RuleInput): Hit | null {
  if (args.long("dry-run")) return null;
  const ops = operandsOf(args, set("--delete-destination --overwrite --from-to --log-level --output-type"));
  const [verb, sub] = ops.map((o) => o.toLowerCase());
  const dest = ops[ops.length - 1];
  if (verb === "copy" || verb === "cp") return ops.length >= 3 ? transfer(dest, azRemote, false) : null;
  if (verb === "sync") {
    const deletes = /^(?:true|prompt)$/i.test(args.optionValue("--delete-destination") ?? "");
    return ops.length >= 3 ? transfer(dest, azRemote, deletes) : null;
  }
  if (verb === "remove" || verb === "rm") return args.long("recursive") ? INFRA_LOSS : INFRA;
  if (verb === "jobs") return sub === "resume" ? INFRA : null;
  return set("make mk set-properties bench").has(verb ?? "") ? INFRA : null;
}

export const OBJECT_STORE_RULES: readonly [string | string[], Rule][] = [
  [["mc", "mcli"], mc],
  ["rclone", rclone],
  ["gsutil", gsutil],
  ["s3cmd", s3cmd],
  ["azcopy", azcopy],
];

/** tar's short options that take a value: the rest of the cluster, or the next word. */
const TAR_VALUED_LETTERS = "fCTXbHVgNILKF";
const TAR_VALUED = set(
  "--file --directory --files-from --exclude-from --blocking-factor --format --label --listed-incremental " +
    "--newer --after-date --use-compress-program --tape-length --starting-file --info-script " +
    "--new-volume-script --owner --group --mode --mtime --transform --xform --exclude --to-command " +
    "--strip-components --suffix --index-file --volno-file --rsh-command --rmt-command --record-size",
);
const TAR_LONG_MODES: Readonly<Record<string, string>> = {
  "--extract": "x",
  "--get": "x",
  "--create": "c",
  "--append": "r",
  "--update": "u",
  "--catenate": "A",
  "--concatenate": "A",
  "--absolute-names": "P",
  "--to-stdout": "O",
};

interface TarCall {
  /** Every short option letter given, and the letters of the long modes. */
  letters: string;
  archives: string[];
  directories: string[];
  members: string[];
  /** Long options with their values (`--to-command=sh`). */
  longs: Map<string, string>;
}

/** Read tar's three option styles: old (`xvf a.tar`, values in order after it), short clusters, long. */
function tarCall(args: Args): TarCall {
  const call: TarCall = { letters: "", archives: [], directories: [], members: [], longs: new Map() };
  const take = (letter: string, value: string | undefined) => {
    if (value === undefined) return;
    if (letter === "f") call.archives.push(value);
    if (letter === "C") call.directories.push(value);
  };
  const v = args.values;
  let k = 0;
  if (v[0] !== undefined && /^[A-Za-z]+$/.test(v[0])) {
    call.letters += v[0];
    k = 1;
    for (const ch of v[0]) if (TAR_VALUED_LETTERS.includes(ch)) take(ch, v[k++]);
  }
  for (; k < v.length; k++) {
    const w = v[k]!;
    if (k >= args.optionEnd) {
      if (k > args.optionEnd) call.members.push(w);
    } else if (w.startsWith("--")) {
      const eq = w.indexOf("=");
      const name = eq < 0 ? w : w.slice(0, eq);
      const value = eq < 0 ? (TAR_VALUED.has(name) ? v[++k] : "") : w.slice(eq + 1);
      call.longs.set(name, value ?? "");
      call.letters += TAR_LONG_MODES[name] ?? "";
      take(name === "--file" ? "f" : name === "--directory" ? "C" : "", value);
    } else if (w.startsWith("-") && w.length > 1) {
      for (let c = 1; c < w.length; c++) {
        call.letters += w[c];
        if (!TAR_VALUED_LETTERS.includes(w[c]!)) continue;
        take(w[c]!, c + 1 < w.length ? w.slice(c + 1) : v[++k]);
        break;
      }
    } else {
      call.members.push(w);
    }
  }
  return call;
}

/** A command line whose program is a shell or an interpreter, which runs what arrives on its stdin. */
function runsStdin(command: string): boolean {
  const program = baseName(command.trim().split(/\s+/)[0] ?? "").toLowerCase();
  return SHELLS.has(program) || interpreterName(program) !== null;
}

/**
 * tar: an extraction writes into its -C directory, or the members named under it, and with -P the
 * absolute names it holds; --recursive-unlink empties directories first. Creating an archive onto
 * a disk overwrites the disk. --to-command feeds each member to a program, a shell when it names
 * one; the volume scripts and `--checkpoint-action=exec=` run commands through the shell.
 */
function tar({ args }: RuleInput): Hit | null {
  const call = tarCall(args);
  const feed = call.longs.get("--to-command");
  if (feed !== undefined && runsStdin(feed)) return hit(3, "piped_to_shell");
  const scripts =
    ["--info-script", "--new-volume-script"].some((o) => call.longs.has(o)) || call.letters.includes("F");
  if (scripts || /(?:^|,)exec=/.test(call.longs.get("--checkpoint-action") ?? ""))
    return hit(2, "script_file");
  if (call.longs.has("--remove-files")) return FILE_LOSS;
  if (call.letters.includes("x")) {
    if (call.longs.has("--recursive-unlink")) return FILE_LOSS;
    if (call.letters.includes("O")) return null;
    const rooted = call.letters.includes("P") ? call.members.filter((m) => m.startsWith("/")) : [];
    const under = call.directories.flatMap((d) =>
      call.members.length === 0 ? [d] : call.members.map((m) => normalizePath(`${d}/${m}`)),
    );
    return writesPaths([...under, ...rooted]);
  }
  if (!/[cruA]/.test(call.letters)) return null;
  return call.archives.some((a) => isBlockDevice(a))
    ? hit(3, "storage_destruction")
    : writesPaths(call.archives);
}

/** unzip: listing, testing and printing forms write nothing; otherwise into -d, or the members named under it. */
function unzip({ args }: RuleInput): Hit | null {
  if (args.short("lvtZpcz")) return null;
  const dir = args.optionValue("-d");
  if (dir === undefined) return null;
  const members = operandsOf(args, set("-d")).slice(1);
  return writesPaths(members.length === 0 ? [dir] : members.map((m) => normalizePath(`${dir}/${m}`)));
}

/** zip -m moves its sources into the archive: a recursive move deletes the trees, a named system file is gone. */
function zip({ args }: RuleInput): Hit | null {
  if (!(args.short("m") || args.long("move"))) return null;
  if (args.short("rR") || args.long("recurse-paths") || args.long("recurse-patterns")) return FILE_LOSS;
  const sources = operandsOf(args, set("-b -n -t -tt -P -O -s -x -i")).slice(1);
  return sources.some((s) => isCriticalPath(s)) ? FILE_LOSS : null;
}

export const ARCHIVE_RULES: readonly [string | string[], Rule][] = [
  ["tar", tar],
  ["unzip", unzip],
  ["zip", zip],
];
