import type { Redirect, Unit } from "../shell/script.js";
import { baseName, DYNAMIC } from "../shell/words.js";
import { type Hit, hit } from "./args.js";
import {
  isAuthPath,
  isBlockDevice,
  isCriticalPath,
  isEtcPath,
  isSystemPath,
  normalizePath,
} from "./paths.js";
import { emptiedTier, isLoginGate } from "./targets.js";

const WRITES = new Set([">", ">>", ">|", "&>", "&>>", "<>", ">&"]);

/**
 * `> file` with nothing written empties the file. Which commands print
 * nothing: none at all (a bare redirect), `:`/`true`/`false`, `cat /dev/null`,
 * `echo -n` and `printf ''`; and a filter given the file it writes, which reads it only after
 * the shell has emptied it.
 */
function emptiesTarget(r: Redirect, unit: Unit): boolean {
  if (r.op !== ">" && r.op !== ">|") return false;
  const w = unit.words.map((x) => x.value);
  if (w.length === 0) return true;
  const name = baseName(w[0]!).toLowerCase();
  if ((name === ":" || name === "true" || name === "false") && w.length === 1) return true;
  if (name === "cat" && w.length === 2 && w[1] === "/dev/null") return true;
  // `echo > f` and `echo "" > f` leave one newline.
  if (name === "echo" && (w.length === 1 || (w.length === 2 && (w[1] === "-n" || w[1] === "")))) return true;
  if (name === "printf" && w.length === 2 && w[1] === "") return true;
  return readsItsTarget(r, unit);
}

/** Programs that read the files they are given and print what they make of them. */
const FILTERS = new Set(
  "cat tac sort uniq jq yq gojq sed awk gawk mawk grep egrep fgrep rg cut head tail column fmt fold nl rev paste expand unexpand iconv xmllint base64 strings od xxd hexdump wc zcat gzcat bzcat xzcat zstdcat tr envsubst dos2unix unix2dos".split(
    " ",
  ),
);

/**
 * `sort f > f`, `jq . config.json > config.json`: the shell empties the file before the command
 * opens it, so the command reads nothing and the file's content is gone.
 */
function readsItsTarget(r: Redirect, unit: Unit): boolean {
  const target = r.target;
  if (target === null || target.dynamic) return false;
  const name = baseName(unit.words[0]?.value ?? "").toLowerCase();
  if (!FILTERS.has(name)) return false;
  const same = (v: string) => normalizePath(v).replace(/^(?:\.\/)+/, "");
  const path = same(target.value);
  return unit.words.slice(1).some((w) => !w.dynamic && !w.value.startsWith("-") && same(w.value) === path);
}

/**
 * Writes through a redirection: onto a block device (Tier 3), to the sysrq
 * trigger (Tier 3), emptying a system or database file (Tier 3), clobbering a
 * program or boot file (Tier 3), into the files that gate logins (Tier 3,
 * targets.ts), into /etc or the account files (Tier 2, docs/wire-contract.md
 * §5.7 rows 73/74), into /proc/sys or /sys (Tier 2), emptying any other file
 * (Tier 2). Anything else, such as `echo x > out.txt`, is data.
 */
export function redirectHit(r: Redirect, unit: Unit): Hit | null {
  if (!WRITES.has(r.op) || r.target === null) return null;
  const raw = r.target.value;
  if (raw.startsWith(DYNAMIC) || /^\d+$/.test(raw) || raw === "-") return null;
  const t = normalizePath(raw);
  if (isBlockDevice(t)) return hit(3, "storage_destruction");
  if (t === "/proc/sysrq-trigger") return hit(3, "power_kernel");
  if (t.startsWith("/proc/sys/") || t.startsWith("/sys/")) return hit(2, "host_change");
  const empties = emptiesTarget(r, unit);
  if (isLoginGate(t)) return empties ? hit(3, "file_destruction") : hit(3, "account_access");
  if (isAuthPath(t)) return empties ? hit(3, "file_destruction") : hit(2, "account_access");
  if (isEtcPath(t)) return empties ? hit(3, "file_destruction") : hit(2, "config_change");
  if (isCriticalPath(t))
    return r.op === ">>" || r.op === "&>>" ? hit(2, "filesystem_change") : hit(3, "file_destruction");
  // `: > f`, `cat /dev/null > f`: the file stays, its content is gone. A unit without words is a
  // bare `> f` or a compound statement's redirection (`{ …; } > f`, whose commands print), which
  // the parse does not tell apart: only a named command that prints nothing counts here.
  if (empties && unit.words.length > 0 && !t.startsWith("/dev/") && !t.startsWith("/proc/"))
    return hit(emptiedTier(t), "file_destruction");
  if (isSystemPath(t)) return hit(2, "filesystem_change");
  return null;
}
