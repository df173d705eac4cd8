import { statSync } from "node:fs";
import { fail } from "../core/index.js";
import { loadPasskeys, type PasskeysRead } from "./passkeys.js";

/**
 * The operator's passkeys file, re-read whenever it changes, so deleting a
 * line revokes a passkey at once: its next login fails and its open
 * sessions end on their next request.
 */
export interface PasskeyFile {
  /** The keys now, or the problems that make the file unusable (then no one gets in). */
  current(): PasskeysRead;
}

export function watchPasskeyFile(path: string, selfUid: number): PasskeyFile {
  let stamp = "";
  let cached: PasskeysRead = fail(["not read yet"]);
  return {
    current() {
      let now: string;
      try {
        const st = statSync(path);
        now = `${st.ino}:${st.size}:${st.mtimeMs}:${st.mode}:${st.uid}:${st.ctimeMs}`;
      } catch {
        now = "missing";
      }
      if (now !== stamp) {
        cached = loadPasskeys(path, selfUid);
        stamp = now;
      }
      return cached;
    },
  };
}
