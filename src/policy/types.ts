import type { Tier } from "../core/index.js";

/**
 * Why a call got its tier: one constant per rule family. The runner carries it
 * into notices and structuredContent; docs/policy.md lists every value.
 */
export type Basis =
  // fixed by the tool, text ignored or floored
  | "read_only_tool" // Tier 0 by tool name
  | "proven_read" // Tier 0: every part of the command is proven to only read (ADR 0033)
  | "mutating_tool" // floor 2: the tool changes state by design (transfer, forward)
  | "default" // Tier 1: nothing matched
  // Tier 3 families
  | "storage_destruction" // mkfs, wipefs, dd/redirect onto block devices, zpool destroy, lvremove, shred ...
  | "file_destruction" // rm -r/-f, find -delete, rsync --delete, truncating system files ...
  | "data_store_destruction" // DROP/TRUNCATE, FLUSHALL, dropDatabase
  | "remote_destruction" // an HTTP DELETE request (curl -X DELETE, http DELETE url)
  | "system_removal" // removing a package the system needs to boot or manage itself (libc, systemd, coreutils, dpkg)
  | "history_destruction" // git push --force, reset --hard, clean -f, branch -D
  | "infrastructure_destruction" // terraform/pulumi destroy, kubectl delete namespace, docker volume rm/system prune
  | "power_kernel" // shutdown/reboot/halt/poweroff, sysrq, sysctl -w, init 0/6
  | "process_kill" // kill -9 1, killall, pkill broad
  | "account_access" // userdel, passwd, gpasswd, sudoers, authorized_keys, PAM
  | "network_lockout" // iptables -F / -P DROP, nft flush, ip link down
  | "fork_bomb"
  | "windows_destructive" // PowerShell / cmd Tier-3 rules (SSH targets)
  // opaque execution: what cannot be seen before it runs
  | "dynamic_command" // command name built at run time ($x, $(...))
  | "piped_to_shell" // data piped / fed into a shell or interpreter
  | "remote_code" // downloaded content executed (curl | sh, bash <(curl ...))
  | "decoded_code" // decoded data executed (base64 -d | sh)
  | "inline_interpreter" // python -c, perl -e, node -e, ruby -e ...
  // Tier 2 families
  | "privilege_escalation" // sudo, doas, pkexec, runas, su
  | "service_change"
  | "package_change"
  | "container_change"
  | "config_change" // edits/redirects under /etc, sed -i, tee /etc
  | "permission_change" // chmod, chown, chgrp, setfacl
  | "filesystem_change" // ln -s, mv/cp of system paths, mount/umount
  | "schedule_change" // crontab, at, systemd timers
  | "account_change" // useradd, usermod, groupadd
  | "vcs_change" // git push/commit/merge/rebase
  | "firewall_change" // ufw allow/deny, ssh-copy-id
  | "host_change" // hostnamectl, timedatectl, sysctl read-write
  | "windows_stateful" // PowerShell / cmd Tier-2 rules (SSH targets)
  | "infrastructure_change" // terraform/tofu apply, pulumi up, cloud CLI create/update
  | "process_change" // kill -HUP, plain kill PID, renice, ionice: signals a process or changes its priority
  | "remote_change" // an HTTP request that sends data or uses POST/PUT/PATCH
  | "data_store_change" // INSERT, UPDATE … WHERE, ALTER, CREATE, GRANT in a database client
  // nesting too deep to inspect (wrappers, re-parsed strings): treated as unseen
  | "nesting_limit"
  // parser fell back to the pattern tables
  | "pattern_fallback"
  // Tier 2: a destructive verb as the subcommand of a tool no table names (`<tool> delete …`)
  | "destructive_subcommand"
  // programs the classifier cannot read
  | "script_file" // a script file handed to a shell or interpreter (bash f.sh, . f, python3 f.py)
  | "opaque_program" // a program without a grammar here, or Python code only known at run time
  | "startup_env" // an environment overlay that makes a shell, interpreter or the loader run code
  | "interactive_program"; // a shell, REPL, console or debugger started on a terminal: its later input runs commands

export interface Classification {
  tier: Tier;
  basis: Basis;
  /** The part of the command that set the tier (for example `rm -rf /x`), at most 120 characters; "" when none. */
  part: string;
}

export interface ClassifyOptions {
  /** Also apply the Windows/PowerShell rules of docs/wire-contract.md §5.6 (SSH targets). */
  windows?: boolean;
  /**
   * The parts of a local command tool's input, when the tool knows them
   * apart. The classifier then reads the program in its own language, with
   * the stdin text bound to its commands' standard input, instead of the
   * joined text.
   */
  input?: ProgramInput;
  /**
   * The command starts on a terminal whose later input the caller types (shell_spawn,
   * ssh_spawn): a program that reads commands from it, or a blank command (a login shell),
   * is at least Tier 2 (`interactive_program`).
   */
  terminal?: boolean;
}

/** The language a program is written in: shell (sh, bash) or Python. */
export type ProgramLanguage = "shell" | "python";

/** A program, what it reads on stdin, and its environment overlay, as the tool will run them. */
export interface ProgramInput {
  language: ProgramLanguage;
  program: string;
  /** Text the program's top-level commands read on stdin ("" = nothing). */
  stdin: string;
  /** The env_json overlay as given ("" = none). */
  env: string;
}

export interface Classifier {
  /** Classify shell text. Never throws; linear in the input size. */
  classify(text: string, options?: ClassifyOptions): Classification;
}

export type { PolicyMode } from "../config/index.js";

/** How a tool's tier is decided (docs/wire-contract.md §2.1 Tier column). */
export type TierSpec =
  | { kind: "fixed"; tier: 0 | 1 | 2 } // fixed tier; text ignored for the tier, still fed to the deny list
  | { kind: "heuristic"; floor: 0 | 1 | 2; windows: boolean; terminal?: boolean };

export interface PolicyDecision {
  allowed: boolean;
  tier: Tier;
  basis: Basis;
  part: string;
  /** docs/wire-contract.md §1.2 reasons: `permitted`, `matched RELAY_SHELL_POLICY_DENY`, ... */
  reason: string;
  /** The label of the deny or allow pattern that decided (policy_explain names it); null when none did. */
  matched: string | null;
}
