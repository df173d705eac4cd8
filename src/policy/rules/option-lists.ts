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
