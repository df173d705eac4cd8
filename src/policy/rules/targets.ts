import { isCriticalPath, normalizePath } from "./paths.js";

/**
 * Files that gate remote and local logins themselves: who may log in with a
 * key (`authorized_keys`), how sshd and PAM admit anyone (`sshd_config`,
 * `pam.d`), and the host-wide allow/deny lists (`hosts.allow`, `hosts.deny`,
 * `nologin`, `security/access.conf`). One line written there lets a stranger
 * in or keeps every operator out, and the session that could repair it may be
 * the one refused: a write or append is Tier 3 (account_access).
 *
 * The account databases (`passwd`, `group`, `shadow`, `sudoers`) stay with
 * the Tier-2 account writes: docs/wire-contract.md §5.7 rows 73 and 74 pin
 * `echo x >> /etc/passwd` and `echo x > /etc/sudoers` there.
 */
const LOGIN_GATE =
  /^\/etc\/(?:ssh\/sshd_config(?:$|\.d\/)|pam\.d\/|pam\.conf$|hosts\.(?:allow|deny)$|nologin$|security\/access\.conf$)/;

export function isLoginGate(path: string): boolean {
  const p = normalizePath(path);
  // pam_nologin reads /run/nologin (systemd's) as well as /etc/nologin.
  return LOGIN_GATE.test(p) || p === "/run/nologin" || /(?:^|\/)authorized_keys2?$/.test(p);
}

/** A database's data directory or file: emptying a file there corrupts or empties the database. */
const DATABASE_DIR =
  /(?:^|\/)(?:mysql|mariadb|postgresql|pgsql|pgdata|mongodb|redis|clickhouse|cassandra|elasticsearch|opensearch|etcd|influxdb|couchdb|neo4j)(?:\/|$)/i;
const DATABASE_FILE = /\.(?:db|sqlite3?|ibd|myd|wt|rdb|aof)$/i;

export function isDatabasePath(path: string): boolean {
  const p = normalizePath(path);
  return DATABASE_DIR.test(p) || DATABASE_FILE.test(p);
}

/**
 * Emptying a file in place (`: > f`, `cp /dev/null f`, `truncate -s 0 f`):
 * Tier 3 where the system boots, runs or keeps its state (/etc, /boot, /usr,
 * /var/lib, the program directories) and in a database's files; Tier 2
 * anywhere else, since the file stays but its content is gone.
 */
export function emptiedTier(path: string): 2 | 3 {
  const p = normalizePath(path);
  return isCriticalPath(p) || /^\/var\/lib(?:\/|$)/.test(p) || isDatabasePath(p) ? 3 : 2;
}
