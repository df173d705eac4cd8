import { join } from "node:path";
import type { Settings } from "../config/index.js";
import { type Clock, RelayError } from "../core/index.js";
import { createDialer } from "./dial.js";
import { createHostDirectory } from "./directory.js";
import { loadInventory } from "./inventory.js";
import { createKnownHostsStore } from "./known-hosts-store.js";
import { createSshPool } from "./pool.js";
import { createSshService, type SshService } from "./service.js";
import { loadSshConfig } from "./ssh-config.js";

/** What the SSH layer needs from its surroundings; the CLI reads these from the environment. */
export interface SshLayerDeps {
  clock: Clock;
  /** The service account's home directory. */
  home: string;
  /** The service account's user name: the SSH user when nothing else names one. */
  localUser: string;
  /** SSH_AUTH_SOCK, or "" without an agent. */
  agentSocket: string;
  /** Base for relative key paths (the server's working directory). */
  cwd: string;
}

type SshSettings = Pick<
  Settings,
  | "inventory"
  | "sshConfig"
  | "sshKnownHosts"
  | "sshKnownHostsFile"
  | "sshAllowWeakerKnownHosts"
  | "sshConnectTimeout"
  | "sshKeepalive"
  | "sshIdleTimeout"
  | "maxConns"
>;

/**
 * Build the SSH layer from settings. A malformed inventory (or an ssh_config
 * the parser rejects) throws here, so the server refuses to start instead of
 * dialling literal alias names later.
 */
export function createSshLayer(settings: SshSettings, deps: SshLayerDeps): SshService {
  const inventory = loadInventory(settings.inventory);
  let sshConfig: ReturnType<typeof loadSshConfig>;
  try {
    sshConfig = loadSshConfig(settings.sshConfig);
  } catch (err) {
    throw new RelayError(
      "ConfigError",
      `RELAY_SHELL_SSH_CONFIG: ${settings.sshConfig}: ${(err as Error).message}`,
    );
  }
  const directory = createHostDirectory({
    inventory,
    sshConfig,
    defaultMode: settings.sshKnownHosts,
    allowWeaker: settings.sshAllowWeakerKnownHosts,
    home: deps.home,
    localUser: deps.localUser,
    cwd: deps.cwd,
  });
  // The relay writes only its own file; the account's OpenSSH file is trusted read-only.
  const knownHosts = createKnownHostsStore({
    pinFile: settings.sshKnownHostsFile,
    readOnlyFiles: [join(deps.home, ".ssh", "known_hosts")].filter((f) => f !== settings.sshKnownHostsFile),
  });
  const dial = createDialer({ knownHosts, auth: { home: deps.home, agentSocket: deps.agentSocket } });
  const pool = createSshPool(
    {
      maxConns: settings.maxConns,
      idleTimeoutSeconds: settings.sshIdleTimeout,
      keepaliveSeconds: settings.sshKeepalive,
      connectTimeoutSeconds: settings.sshConnectTimeout,
    },
    { dial, clock: deps.clock },
  );
  return createSshService({ directory, pool, knownHosts, clock: deps.clock });
}
