import type { GoldenRow } from "./index.js";

/**
 * The long tail of command-line tools (docs/adr/0018-long-tail-subcommands.md):
 * destructive subcommands of tools no rule table names, help and version
 * requests, read-only subcommands, and the argument positions where a verb is
 * only a value.
 */
export const LONGTAIL_ROWS: readonly GoldenRow[] = [
  // a destructive verb as the subcommand, at any depth of the subcommand path
  { text: "asdf uninstall nodejs 18.0.0", tier: 2, basis: "destructive_subcommand" },
  { text: "glab release delete v1.2.0", tier: 3, basis: "destructive_subcommand" },
  { text: "aws s3api delete-bucket --bucket logs", tier: 3, basis: "infrastructure_destruction" },
  { text: "aws cognito-idp admin-delete-user --username bob", tier: 2, basis: "destructive_subcommand" },
  { text: "ykman fido credentials delete abc", tier: 3, basis: "destructive_subcommand" },
  { text: "ykman openpgp reset", tier: 2, basis: "destructive_subcommand" },
  { text: "dokku apps:destroy web", tier: 3, basis: "destructive_subcommand" },
  { text: "calibredb remove 12", tier: 2, basis: "destructive_subcommand" },
  { text: "consul kv delete -recurse app/", tier: 3, basis: "destructive_subcommand" },
  { text: "vault lease revoke -prefix aws/", tier: 2, basis: "destructive_subcommand" },
  { text: "tmux kill-server", tier: 2, basis: "destructive_subcommand" },
  {
    text: "ceph osd pool delete data data --yes-i-really-really-mean-it",
    tier: 3,
    basis: "storage_destruction",
  },
  { text: "mycli --profile prod drop cache", tier: 2, basis: "destructive_subcommand" },
  { text: "sudo flatpak uninstall --unused", tier: 2, basis: "privilege_escalation" },
  { text: "xargs -n1 crane delete < tags.txt", tier: 3, basis: "destructive_subcommand" },
  {
    text: "env AWS_PROFILE=prod eksctl delete cluster --name c1",
    tier: 3,
    basis: "infrastructure_destruction",
  },
  { text: "gpg-card factory-reset", tier: 2, basis: "destructive_subcommand" },
  { text: "fdupes --recurse --delete photos", tier: 2, basis: "destructive_subcommand" },
  // the tables keep their own, higher verdicts
  { text: "pulumi destroy --stack dev --yes", tier: 3, basis: "infrastructure_destruction" },
  { text: "zfs destroy tank/old", tier: 3, basis: "storage_destruction" },
  // a verb that is a value, not a subcommand
  { text: "grep delete app.log", tier: 0, basis: "proven_read" },
  { text: "echo remove all", tier: 0, basis: "proven_read" },
  { text: "tldr uninstall", tier: 0, basis: "proven_read" },
  { text: "hub commit -m delete", tier: 1, basis: "default" },
  { text: "hub checkout remove-stale-keys", tier: 1, basis: "default" },
  { text: "mycli upload path/to/delete", tier: 1, basis: "default" },
  { text: "hg status --deleted", tier: 1, basis: "default" },
  { text: "mycli prune --dry-run", tier: 1, basis: "default" },
  // help and version requests
  { text: "kubectl delete --help", tier: 0, basis: "proven_read" },
  { text: "docker rm --help", tier: 0, basis: "proven_read" },
  { text: "glab release delete -h", tier: 1, basis: "default" },
  { text: "git help reset", tier: 0, basis: "proven_read" },
  { text: "aws s3 rm help", tier: 0, basis: "proven_read" },
  { text: "passwd --help", tier: 0, basis: "proven_read" },
  { text: "mkfs --version", tier: 0, basis: "proven_read" },
  { text: "shutdown --help", tier: 0, basis: "proven_read" },
  { text: "kubectl delete --help; rm -rf /srv/x", tier: 3, basis: "file_destruction" },
  { text: "rm -rf /srv --help", tier: 3, basis: "file_destruction" },
  { text: "shutdown -h", tier: 3, basis: "power_kernel" },
  { text: "docker run alpine --help", tier: 2, basis: "container_change" },
  { text: "kubectl delete namespace prod --help", tier: 3, basis: "infrastructure_destruction" },
  // read-only subcommands of tools the tables flag as a whole
  { text: "conda env list", tier: 1, basis: "default" },
  { text: "uv pip show requests", tier: 1, basis: "default" },
  { text: "launchctl list", tier: 1, basis: "default" },
  { text: "dnf module list nodejs", tier: 1, basis: "default" },
  // bun is a runtime and a package manager: its subcommands are not script files
  { text: "bun info react version", tier: 1, basis: "default" },
  { text: "bun remove lodash", tier: 2, basis: "package_change" },
  { text: "bun pm cache rm", tier: 2, basis: "destructive_subcommand" },
  { text: "bun run build.ts", tier: 2, basis: "script_file" },
  { text: "bun server.ts", tier: 2, basis: "script_file" },
];
