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
  { text: "consul kv delete -recurse app/", tier: 3, basis: "data_store_destruction" },
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
  { text: "glab release delete -h", tier: 0, basis: "proven_read" },
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
  { text: "initctl list", tier: 1, basis: "default" },
  { text: "dnf module list nodejs", tier: 1, basis: "default" },
  // bun is a runtime and a package manager: its subcommands are not script files
  { text: "bun info react version", tier: 1, basis: "default" },
  { text: "bun remove lodash", tier: 2, basis: "package_change" },
  { text: "bun pm cache rm", tier: 2, basis: "destructive_subcommand" },
  { text: "bun run build.ts", tier: 2, basis: "script_file" },
  { text: "bun server.ts", tier: 2, basis: "script_file" },
  // a filter given the file it is redirected into reads it after the shell emptied it
  { text: "sort file > file", tier: 2, basis: "file_destruction" },
  { text: "jq . ./config.json > config.json", tier: 2, basis: "file_destruction" },
  { text: "grep -v old /etc/hosts > /etc/hosts", tier: 3, basis: "file_destruction" },
  { text: "echo a > a", tier: 1, basis: "default" },
  { text: "sort -o file file", tier: 1, basis: "default" },
  // runtimes and build tools run the project's code
  { text: "java -jar migrator.jar --apply", tier: 2, basis: "script_file" },
  { text: "java -version", tier: 1, basis: "default" },
  { text: "java -jar cli.jar -s https://ci.example help", tier: 1, basis: "default" },
  { text: "dotnet run --project api", tier: 2, basis: "script_file" },
  { text: "go test ./...", tier: 2, basis: "script_file" },
  { text: "go install example.com/tool@latest", tier: 2, basis: "package_change" },
  { text: "cargo build --release", tier: 2, basis: "script_file" },
  { text: "bun run build", tier: 2, basis: "script_file" },
  { text: "mvn deploy", tier: 2, basis: "script_file" },
  { text: "gradle build", tier: 2, basis: "script_file" },
  { text: "rails db:migrate RAILS_ENV=production", tier: 2, basis: "script_file" },
  { text: "rails db:migrate:status", tier: 1, basis: "default" },
  // configuration management applying to the host, unless told to only report
  { text: "puppet apply manifests/site.pp", tier: 2, basis: "config_change" },
  { text: "puppet agent -t", tier: 2, basis: "config_change" },
  { text: "puppet agent -t --noop", tier: 1, basis: "default" },
  { text: "chef-client", tier: 2, basis: "config_change" },
  { text: "chef-client --why-run", tier: 1, basis: "default" },
  // web servers' control verbs
  { text: "nginx -s reload", tier: 2, basis: "service_change" },
  { text: "docker exec web nginx -s reload", tier: 2, basis: "service_change" },
  { text: "nginx -t", tier: 0, basis: "proven_read" },
  { text: "apachectl graceful", tier: 2, basis: "service_change" },
  { text: "apache2ctl -k stop", tier: 2, basis: "service_change" },
  { text: "apachectl configtest", tier: 0, basis: "proven_read" },
  // a mode change over every item found is a tree's
  { text: "find /srv -type d -exec chmod 755 {} \\;", tier: 2, basis: "permission_change" },
  { text: "find . -name '*.sh' | xargs chmod +x", tier: 2, basis: "permission_change" },
  { text: "hwclock --systohc", tier: 2, basis: "host_change" },
  { text: "ss -K dst 10.0.0.5 dport = 5432", tier: 2, basis: "process_change" },
  { text: "ufw --force reset", tier: 3, basis: "network_lockout" },
  // forced removal of containers the call does not name
  { text: "docker rm -f $(docker ps -aq)", tier: 3, basis: "infrastructure_destruction" },
  { text: "docker container rm -f $(docker ps -aq)", tier: 3, basis: "infrastructure_destruction" },
  { text: "docker rm $(docker ps -aq -f status=exited)", tier: 2, basis: "container_change" },
  { text: "mongosh --eval 'rs.stepDown()'", tier: 2, basis: "data_store_change" },
  // cloud operations that change remote state, and client-side configuration that does not
  {
    text: "aws ec2 authorize-security-group-ingress --group-id sg-1 --protocol tcp --port 22 --cidr 0.0.0.0/0",
    tier: 2,
    basis: "infrastructure_change",
  },
  { text: "aws lambda invoke --function-name report out.json", tier: 2, basis: "infrastructure_change" },
  { text: "aws eks update-kubeconfig --name prod --region eu-west-1", tier: 1, basis: "default" },
  { text: "az lock create -n keep -g rg --lock-type CanNotDelete", tier: 2, basis: "infrastructure_change" },
  {
    text: "mongosh --eval 'db.c.aggregate([{$match: {a: 1}}, {$out: \"x\"}])'",
    tier: 2,
    basis: "data_store_change",
  },
  // an init script is named after its service: /etc/init.d/ssh is the SSH server's, not the client
  { text: "/etc/init.d/ssh stop", tier: 3, basis: "network_lockout" },
  { text: "/etc/init.d/sudo restart", tier: 2, basis: "service_change" },
  // systemd's /run/nologin gates logins as /etc/nologin does
  { text: "echo 'maintenance' > /run/nologin", tier: 3, basis: "account_access" },
  { text: "varnishadm ban.list", tier: 0, basis: "proven_read" },
  {
    text: "certbot -c /etc/letsencrypt/cli.ini delete --cert-name old.example",
    tier: 3,
    basis: "infrastructure_destruction",
  },
  { text: "certbot show_account", tier: 1, basis: "default" },
  {
    text: "amtool silence add alertname=DiskFull instance=db01 --duration=2h",
    tier: 2,
    basis: "remote_change",
  },
  { text: "amtool silence expire 3b1f4c", tier: 2, basis: "remote_change" },
  { text: "amtool silence query", tier: 0, basis: "proven_read" },
  { text: "logrotate -d /etc/logrotate.d/nginx", tier: 0, basis: "proven_read" },
  { text: "logrotate -d -m /tmp/mailer /etc/logrotate.conf", tier: 1, basis: "default" },
  { text: "pfctl -nf /etc/pf.conf", tier: 0, basis: "proven_read" },
  { text: "pfctl -nef /etc/pf.conf", tier: 3, basis: "network_lockout" },
  { text: "mkfs.ext4 -V", tier: 0, basis: "proven_read" },
  { text: "mkfs.ext4 -V /dev/sdb", tier: 3, basis: "storage_destruction" },
  { text: "vault kv metadata delete -h", tier: 0, basis: "proven_read" },
  { text: "vault kv metadata delete secret/app -h", tier: 3, basis: "data_store_destruction" },
  // pulling an image only adds it, as a download adds a file
  { text: "docker pull nginx:1.27", tier: 1, basis: "default" },
  {
    text: "kafka-consumer-groups.sh --bootstrap-server localhost:9092 --group billing --reset-offsets --to-earliest --all-topics",
    tier: 0,
    basis: "proven_read",
  },
  // launchctl asuser and bsexec carry a command, judged on its own as under sudo
  { text: "launchctl asuser 0 rm -rf /tmp/canary", tier: 3, basis: "file_destruction" },
  { text: "launchctl bsexec 1 ls", tier: 2, basis: "privilege_escalation" },
  // `kubectl krew` is the kubectl-krew plugin, judged as itself
  { text: "kubectl krew list", tier: 0, basis: "proven_read" },
  { text: "kubectl krew install ctx", tier: 2, basis: "package_change" },
];
