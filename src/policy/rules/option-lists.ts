/**
 * Option lists that the rule tables and the read-only table both need to
 * find a program's subcommand: the options whose value is the next word.
 */

/** systemctl options whose value is the next word. */
export const SYSTEMCTL_VALUED: ReadonlySet<string> = new Set([
  "-H",
  "--host",
  "-M",
  "--machine",
  "-t",
  "--type",
  "-p",
  "--property",
  "-n",
  "--lines",
  "-o",
  "--output",
  "-s",
  "--signal",
  "--kill-whom",
  "--kill-value",
  "--state",
  "--root",
  "--what",
  "--when",
  "--message",
  "--job-mode",
  "--timestamp",
  "--drop-in",
]);

/** nodetool's connection options, whose value is the next word. */
export const NODETOOL_VALUED: ReadonlySet<string> = new Set([
  "-h",
  "--host",
  "-p",
  "--port",
  "-u",
  "--username",
  "-pw",
  "--password",
  "-pwf",
]);

/** Nomad's global options (one dash, Go style), whose value is the next word. */
export const NOMAD_VALUED: ReadonlySet<string> = new Set([
  "-address",
  "-region",
  "-namespace",
  "-token",
  "-ca-cert",
  "-ca-path",
  "-client-cert",
  "-client-key",
  "-tls-server-name",
]);
