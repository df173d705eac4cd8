import { join } from "node:path";
import type { AnyAuthMethod, AuthHandlerMiddleware, ParsedKey } from "ssh2";
import { fail, ok, RelayError, type Result } from "../core/index.js";
import { readBoundedFile } from "../files/index.js";
import { loadSsh2 } from "./ssh2-module.js";
import { endpointText, type SshTarget } from "./target.js";

export interface AuthConfig {
  /** The service account's home: where the default keys are looked for. */
  home: string;
  /** SSH_AUTH_SOCK of the server's environment, or "" when there is no agent. */
  agentSocket: string;
}

export interface AuthPlan {
  handler: AuthHandlerMiddleware;
  /** What will be offered, for the message when every method fails. */
  offered: string[];
}

const MAX_KEY_BYTES = 1024 * 1024;
const DEFAULT_KEYS = ["id_ed25519", "id_ecdsa", "id_rsa"];

function readKeyFile(path: string): Buffer | null {
  return readBoundedFile(path, { maxBytes: MAX_KEY_BYTES, what: "key file" });
}

/** A key file read: its private key, or why it cannot be used. null when there is no such file. */
function loadKey(path: string): Result<ParsedKey, string> | null {
  const data = readKeyFile(path);
  if (data === null) return null;
  const parsed = loadSsh2().utils.parseKey(data);
  if (parsed instanceof Error) {
    const why = /passphrase/i.test(parsed.message)
      ? "it is passphrase-protected (load it into ssh-agent instead)"
      : parsed.message;
    return fail(why);
  }
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!key?.isPrivateKey()) return fail("it holds no private key");
  return ok(key);
}

/**
 * The credentials one dial offers, in order: the key files named for this
 * host, the agent, then (only when no file was named, as OpenSSH does) the
 * default keys in ~/.ssh. Keys are read at dial time, never kept elsewhere.
 */
export function planAuth(target: SshTarget, config: AuthConfig): AuthPlan {
  const methods: AnyAuthMethod[] = [];
  const offered: string[] = [];
  const skipped: string[] = [];
  const username = target.user;

  for (const path of target.identityFiles) {
    const loaded = loadKey(path);
    if (loaded === null) {
      if (target.identitiesRequired) throw new RelayError("FileNotFoundError", `key file not found: ${path}`);
      continue;
    }
    if (!loaded.ok) {
      if (target.identitiesRequired)
        throw new RelayError("ValueError", `cannot use key file ${path}: ${loaded.error}`);
      skipped.push(`${path} (${loaded.error})`);
      continue;
    }
    methods.push({ type: "publickey", username, key: loaded.value });
    offered.push(`key ${path}`);
  }
  if (config.agentSocket !== "") {
    methods.push({ type: "agent", username, agent: config.agentSocket });
    offered.push("ssh-agent");
  }
  if (target.identityFiles.length === 0) {
    for (const name of DEFAULT_KEYS) {
      const path = join(config.home, ".ssh", name);
      const loaded = loadKey(path);
      if (loaded === null) continue;
      if (!loaded.ok) {
        skipped.push(`${path} (${loaded.error})`);
        continue;
      }
      methods.push({ type: "publickey", username, key: loaded.value });
      offered.push(`key ${path}`);
    }
  }
  if (methods.length === 0) {
    const note = skipped.length > 0 ? `; skipped ${skipped.join(", ")}` : "";
    throw new RelayError(
      "PermissionDenied",
      `no credentials to offer ${endpointText(target)}: no key_path or identity_file, no readable default key ` +
        `in ${join(config.home, ".ssh")}, no agent (SSH_AUTH_SOCK)${note}`,
    );
  }

  let next = 0;
  const handler: AuthHandlerMiddleware = (methodsLeft, _partial, callback) => {
    // Offer only what the server still accepts; "publickey" covers agent keys too.
    while (next < methods.length) {
      const method = methods[next++];
      if (!method) break;
      const kind = method.type === "agent" ? "publickey" : method.type;
      if (methodsLeft === null || methodsLeft === undefined || methodsLeft.includes(kind)) {
        callback(method);
        return;
      }
    }
    callback(false as unknown as AnyAuthMethod);
  };
  return { handler, offered };
}
