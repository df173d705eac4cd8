import { accessSync, constants, readFileSync } from "node:fs";
import { userInfo } from "node:os";
import { defaultLauncherKind } from "../exec/index.js";
import type { RuntimeInfo } from "../tools/index.js";

/** Facts about this process and this install, read once by whoever starts a program. */
const SUDO_CANDIDATES = ["/usr/bin/sudo", "/bin/sudo", "/usr/local/bin/sudo"];

export function readRuntimeInfo(): RuntimeInfo {
  let user = "";
  try {
    user = userInfo().username;
  } catch {
    // No passwd entry for this uid (containers): the contract reports "".
  }
  const sudoBinary =
    SUDO_CANDIDATES.find((path) => {
      try {
        accessSync(path, constants.X_OK);
        return true;
      } catch {
        return false;
      }
    }) ?? "";
  return {
    uid: process.getuid?.() ?? -1,
    euid: process.geteuid?.() ?? -1,
    user,
    sudoBinary,
    launcher: defaultLauncherKind(),
  };
}

export function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
      version?: unknown;
    };
    return typeof pkg.version === "string" ? pkg.version : "0.0.0";
  } catch {
    return "0.0.0";
  }
}
