import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../helpers/server.js";

/**
 * Credentials in tool arguments never reach the audit file, and what surrounds
 * them does: through the built server, reading the file it wrote.
 */

const secretFor = (n: number) => `Zq${n}x-Sekr3t.val`;

// [label, command with S for the secret, the command as it must be recorded]
const COMMANDS: ReadonlyArray<readonly [string, string, string]> = [
  [
    "sshpass -p, with ssh's own -p port kept",
    "sshpass -p @S@ ssh -p 22 admin@db1 uptime",
    "sshpass -p [REDACTED] ssh -p 22 admin@db1 uptime",
  ],
  [
    "docker login -p",
    "docker login -u bob -p @S@ registry.example && docker run -p 8080:80 nginx",
    "docker login -u bob -p [REDACTED] registry.example && docker run -p 8080:80 nginx",
  ],
  [
    "curl -u",
    "curl -fsS -u admin:@S@ https://api.example/x",
    "curl -fsS -u admin:[REDACTED] https://api.example/x",
  ],
  [
    "curl --user",
    "curl --user admin:@S@ https://api.example/x",
    "curl --user admin:[REDACTED] https://api.example/x",
  ],
  [
    "ldapsearch -w",
    "ldapsearch -x -D cn=admin -w @S@ -b dc=example",
    "ldapsearch -x -D cn=admin -w [REDACTED] -b dc=example",
  ],
  ["redis-cli -a", "redis-cli -h cache -p 6380 -a @S@ ping", "redis-cli -h cache -p 6380 -a [REDACTED] ping"],
  [
    "smbclient -U",
    "smbclient //srv/share -U admin%@S@ -c ls",
    "smbclient //srv/share -U admin%[REDACTED] -c ls",
  ],
  [
    "htpasswd -b",
    "htpasswd -b /etc/nginx/.htpasswd admin @S@",
    "htpasswd -b /etc/nginx/.htpasswd admin [REDACTED]",
  ],
  [
    "openssl -passin pass:",
    "openssl rsa -in k.pem -passin pass:@S@ -out k2.pem",
    "openssl rsa -in k.pem -passin pass:[REDACTED] -out k2.pem",
  ],
  [
    "mysql --password=",
    "mysql --password=@S@ -h db -e 'select 1'",
    "mysql --password=[REDACTED] -h db -e 'select 1'",
  ],
  [
    "psql URL",
    "psql postgresql://app:@S@@db:5432/app -c 'select 1'",
    "psql postgresql://[REDACTED]@db:5432/app -c 'select 1'",
  ],
  [
    "git clone URL",
    "git clone https://bob:@S@@git.example/r.git /srv/r",
    "git clone https://[REDACTED]@git.example/r.git /srv/r",
  ],
  [
    "Authorization header",
    "curl -H 'Authorization: Bearer @S@' https://api.example/x",
    "curl -H 'Authorization: [REDACTED]' https://api.example/x",
  ],
  ["--password", "deploy --password @S@ --host db1", "deploy --password [REDACTED] --host db1"],
  [
    "an upper-case *_PASS variable",
    "DB_PASS=@S@ ./migrate --env prod",
    "DB_PASS=[REDACTED] ./migrate --env prod",
  ],
  [
    "a mixed-case *_Token variable",
    "export Vault_Token=@S@\nvault status",
    "export Vault_Token=[REDACTED]\nvault status",
  ],
];

describe("secrets stay out of the audit file (refused calls)", () => {
  let s: TestServer;
  beforeAll(async () => {
    // A deny-all list: nothing runs (readonly would admit the proven reads among these), and every
    // refusal is still recorded with its arguments.
    s = await startServer({ RELAY_SHELL_POLICY_MODE: "readonly", RELAY_SHELL_POLICY_DENY: "." });
  });
  afterAll(async () => {
    await s?.close();
  });

  it.each(COMMANDS.map((row, i) => [...row, i] as const))("%s", async (_label, template, recorded, i) => {
    const secret = secretFor(i);
    await s.call("shell_exec", { command: template.replaceAll("@S@", secret) });
    const record = s.records().at(-1);
    expect(record).toMatchObject({ tool: "shell_exec", denied: true, args: { command: recorded } });
    expect(s.auditText()).not.toContain(secret);
  });

  it("an Authorization header in a remote command is hidden too", async () => {
    const secret = secretFor(100);
    await s.call("ssh_exec", {
      host: "127.0.0.1",
      command: `curl -s -H "Authorization: token ${secret}" http://localhost:8080/health`,
    });
    expect(s.records().at(-1)).toMatchObject({
      tool: "ssh_exec",
      args: { command: 'curl -s -H "Authorization: [REDACTED]" http://localhost:8080/health' },
    });
    expect(s.auditText()).not.toContain(secret);
  });
});

describe("secrets stay out of the audit file (calls that ran)", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer();
  });
  afterAll(async () => {
    await s?.close();
  });

  it("env_json: a *_PASS variable and a credentials key", async () => {
    const pass = secretFor(200);
    const creds = secretFor(201);
    const env = JSON.stringify({ DB_PASS: pass, credentials: `admin:${creds}`, APP_DIR: "/srv/app" });
    const r = await s.call("shell_exec", { command: 'echo "$APP_DIR"', env_json: env });
    expect(r.text).toBe("[exit 0]\n/srv/app\n");
    expect(s.records().at(-1)).toMatchObject({
      tool: "shell_exec",
      denied: false,
      args: {
        command: 'echo "$APP_DIR"',
        env_json: '{"DB_PASS":"[REDACTED]","credentials":"[REDACTED]","APP_DIR":"/srv/app"}',
      },
    });
    expect(s.auditText()).not.toContain(pass);
    expect(s.auditText()).not.toContain(creds);
  });

  it("a script that quotes a SECRET_KEY value", async () => {
    const secret = secretFor(202);
    const script = `SECRET_KEY="${secret} with spaces"\necho "len=\${#SECRET_KEY}"`;
    const r = await s.call("shell_script", { script });
    expect(r.text).toBe(`[exit 0]\nlen=${secret.length + " with spaces".length}\n`);
    expect(s.records().at(-1)).toMatchObject({
      tool: "shell_script",
      args: { script: 'SECRET_KEY="[REDACTED]"\necho "len=${#SECRET_KEY}"' },
    });
    expect(s.auditText()).not.toContain(secret);
  });

  it("keystrokes sent to a session", async () => {
    const secret = secretFor(203);
    const spawned = await s.call("shell_spawn", { command: "cat" });
    const id = String(spawned.structured.session_id);
    await s.call("session_send", { session_id: id, data: `Authorization: Basic ${secret}` });
    expect(s.records().at(-1)).toMatchObject({
      tool: "session_send",
      args: { data: "Authorization: [REDACTED]" },
    });
    await s.call("session_kill", { session_id: id, signal_name: "KILL", close: true });
    expect(s.auditText()).not.toContain(secret);
  });
});
