import { realpathSync } from "node:fs";
import { basename, dirname, posix, resolve } from "node:path";
import { canonicalIpForms, type PolicyTarget, type TargetKind } from "../policy/index.js";

/**
 * The physical path of `path` (symlinks followed, `..` applied after them, as
 * the kernel does), or of its parent when it does not exist yet (a download's
 * destination); null when neither resolves.
 */
function physical(path: string): string | null {
  try {
    return realpathSync.native(path);
  } catch {
    try {
      return resolve(realpathSync.native(dirname(path)), basename(path));
    } catch {
      return null;
    }
  }
}

/**
 * A local path as the deny list sees it (ADR 0020): as given, made absolute
 * and normalised (relative to the server's directory, `.`/`..`/`//` and a
 * trailing slash removed), and with symlinks resolved. The same path spelled
 * another way still shows the spelling a deny pattern was written for; the
 * duplicates collapse in `targetLines`.
 */
export function localPathTargets(kind: TargetKind, path: string): PolicyTarget[] {
  if (path === "") return [];
  const out: PolicyTarget[] = [{ kind, value: path }];
  const absolute = resolve(path);
  out.push({ kind, value: absolute });
  const real = physical(path);
  if (real !== null) out.push({ kind, value: real });
  return out;
}

/** The working directory of a local call; empty = the server's own, which the caller does not choose. */
export function cwdTargets(cwd: string): PolicyTarget[] {
  return localPathTargets("cwd", cwd);
}

/**
 * The targets with the canonical spellings of every `host` that is an address
 * added (`2130706433`, `127.1` and `0x7f.1` are `127.0.0.1`), so an anchored
 * pattern on an address sees it however it was written.
 */
export function withAddressForms(targets: readonly PolicyTarget[]): PolicyTarget[] {
  const out = [...targets];
  for (const t of targets) {
    if (t.kind !== "host") continue;
    for (const form of canonicalIpForms(t.value)) out.push({ kind: "host", value: form });
  }
  return out;
}

/**
 * A path on a remote host: as given, and normalised lexically when that
 * differs (the remote file system cannot be asked before the call is admitted).
 */
export function remotePathTargets(path: string): PolicyTarget[] {
  if (path === "") return [];
  const normal = posix.normalize(path);
  const trimmed = normal.length > 1 && normal.endsWith("/") ? normal.slice(0, -1) : normal;
  return [
    { kind: "remote", value: path },
    { kind: "remote", value: trimmed },
  ];
}
