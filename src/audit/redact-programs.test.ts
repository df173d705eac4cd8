import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { redactString, scrubSecrets } from "./redact.js";

/**
 * Credential shapes that used to reach the audit log in clear. `@S@` marks
 * the secret in the input; the output is the exact text expected, so the test
 * proves both that the secret is gone and that everything around it is kept.
 */
const SHAPES: ReadonlyArray<readonly [string, string]> = [
  ["DB_PASS=@S@", "DB_PASS=[REDACTED]"],
  ['{"DB_PASS": "@S@", "HOME": "/root"}', '{"DB_PASS": "[REDACTED]", "HOME": "/root"}'],
  ['{"credentials": "@S@", "HOME": "/root"}', '{"credentials": "[REDACTED]", "HOME": "/root"}'],
  ['SECRET_KEY="@S@"', 'SECRET_KEY="[REDACTED]"'],
  ["secret_key='@S@'", "secret_key='[REDACTED]'"],
  ["export App_Passwd=@S@", "export App_Passwd=[REDACTED]"],
  ["DB_PWD=@S@", "DB_PWD=[REDACTED]"],
  ["vault_Token=@S@", "vault_Token=[REDACTED]"],
  ["STRIPE_KEY=@S@", "STRIPE_KEY=[REDACTED]"],
  ["client_SECRET: @S@", "client_SECRET: [REDACTED]"],
  ["curl -u admin:@S@ https://example.com/x", "curl -u admin:[REDACTED] https://example.com/x"],
  ["curl -fsS --user admin:@S@ https://x", "curl -fsS --user admin:[REDACTED] https://x"],
  ["curl -su admin:@S@ https://x", "curl -su admin:[REDACTED] https://x"],
  ["/usr/bin/curl -uadmin:@S@ https://x", "/usr/bin/curl -uadmin:[REDACTED] https://x"],
  ["sshpass -p @S@ ssh -p 22 admin@host uptime", "sshpass -p [REDACTED] ssh -p 22 admin@host uptime"],
  ["sshpass -p@S@ scp -P 2222 f host:", "sshpass -p[REDACTED] scp -P 2222 f host:"],
  ["docker login -u bob -p @S@ registry.example", "docker login -u bob -p [REDACTED] registry.example"],
  ["podman login --password @S@ quay.io", "podman login --password [REDACTED] quay.io"],
  ["tool --password @S@ --verbose", "tool --password [REDACTED] --verbose"],
  ["tool --password=@S@ --verbose", "tool --password=[REDACTED] --verbose"],
  ["mysql --password=@S@ -h db -P 3306", "mysql --password=[REDACTED] -h db -P 3306"],
  ["ldapsearch -x -D cn=admin -w @S@ -b dc=ex", "ldapsearch -x -D cn=admin -w [REDACTED] -b dc=ex"],
  ["redis-cli -h db -p 6380 -a @S@ ping", "redis-cli -h db -p 6380 -a [REDACTED] ping"],
  ["smbclient //srv/share -U admin%@S@ -c ls", "smbclient //srv/share -U admin%[REDACTED] -c ls"],
  ["htpasswd -b /etc/nginx/.htpasswd admin @S@", "htpasswd -b /etc/nginx/.htpasswd admin [REDACTED]"],
  ["htpasswd -nbB admin @S@", "htpasswd -nbB admin [REDACTED]"],
  [
    "openssl rsa -in k.pem -passin pass:@S@ -out k2.pem",
    "openssl rsa -in k.pem -passin pass:[REDACTED] -out k2.pem",
  ],
  [
    "psql postgresql://app:@S@@db:5432/app -c 'select 1'",
    "psql postgresql://[REDACTED]@db:5432/app -c 'select 1'",
  ],
  ["git clone https://bob:@S@@git.example/r.git", "git clone https://[REDACTED]@git.example/r.git"],
  ['curl -H "Authorization: Bearer @S@" https://x', 'curl -H "Authorization: [REDACTED]" https://x'],
  ["printf 'Authorization: token @S@'", "printf 'Authorization: [REDACTED]'"],
  ['{"headers": {"authorization": "Basic @S@"}}', '{"headers": {"authorization": "[REDACTED]"}}'],
  ["tool --db-password @S@ --verbose", "tool --db-password [REDACTED] --verbose"],
  ["wget --http-password=@S@ http://x", "wget --http-password=[REDACTED] http://x"],
  ["ipmitool -H bmc -U admin -P @S@ power status", "ipmitool -H bmc -U admin -P [REDACTED] power status"],
  ["sqlcmd -S db -U sa -P @S@ -Q x", "sqlcmd -S db -U sa -P [REDACTED] -Q x"],
  ["mongosh -u admin -p @S@ db", "mongosh -u admin -p [REDACTED] db"],
  ["keytool -list -keystore k.jks -storepass @S@", "keytool -list -keystore k.jks -storepass [REDACTED]"],
  ['bash -c "sshpass -p @S@ ssh h"', 'bash -c "sshpass -p [REDACTED] ssh h"'],
  ['{"CMD": "sshpass -p @S@ ssh h"}', '{"CMD": "sshpass -p [REDACTED] ssh h"}'],
  ["sudo -u ops curl -u admin:@S@ http://x", "sudo -u ops curl -u admin:[REDACTED] http://x"],
  [
    "vault login hvs.CAESI@S@abcdefghijklmnopqrstuvwxyz && vault status",
    "vault login [REDACTED] && vault status",
  ],
];

/** Useful evidence that must survive: flags that look like password flags to other programs. */
const KEPT: readonly string[] = [
  "ssh -p 22 admin@host",
  "scp -P 2222 f host:/tmp",
  "mkdir -p /tmp/a/b",
  "docker run -p 8080:80 nginx",
  "docker compose -p proj up",
  "ls -a /etc",
  "tar -a -cf x.tar y",
  "netstat -a -n",
  "grep -w error log",
  "openssl x509 -key key.pem -in c.pem",
  "openssl rsa -passin env:PW -in k.pem",
  "openssl rsa -passin file:/run/pw -in k.pem",
  "curl -u admin https://x",
  "smbclient //srv/share -U admin",
  "htpasswd -D /etc/htp admin",
  "htpasswd /etc/htp admin",
  "redis-cli -h db ping",
  "SECRET_KEY_FILE=/run/secrets/k",
  "DB_PASS_FILE=/run/secrets/db",
  "AWS_ACCESS_KEY_ID_PATH=/x",
  "--ssh-key=/home/op/.ssh/id_ed25519",
  "openssl req -newkey rsa:2048",
  "bypass=yes",
  "docker login registry.example",
  "git clone https://git.example/r.git",
  "make -j4 install",
  "mysql -u root -p mydb",
  "sshpass -f /run/pw ssh -p 22 host",
  "sshpass -e ssh -p 22 host",
  "docker run --user 1000:1000 img",
  "chown -R www:www /srv/app",
  'curl -u "$API_USER" https://x',
  "vault login -method=oidc",
  "ls hvs.short",
];

describe("credential shapes", () => {
  it.each(SHAPES)("%j", (input, expected) => {
    const value = input.includes("hvs.") ? "Wk7qp4ssword" : "Wk7q-p4ss.word";
    expect(redactString(input.replaceAll("@S@", value))).toBe(expected);
  });

  it.each(KEPT)("keeps %j", (text) => {
    expect(redactString(text)).toBe(text);
  });

  // Found by the property below: a password (positional, or attached to its flag) ending in `=`,
  // `:` or `/` and a program's name was taken for the start of that program's command, and left
  // in the clear.
  it.each([
    ["htpasswd -b /etc/nginx/.htpasswd admin Qaaa=xh", "htpasswd -b /etc/nginx/.htpasswd admin [REDACTED]"],
    ["htpasswd -nb admin x/sshpass && echo ok", "htpasswd -nb admin [REDACTED] && echo ok"],
    ["htpasswd -b f a=curl pw", "htpasswd -b f a=curl [REDACTED]"],
    ["htpasswd -b f admin pw; curl -u u:p x", "htpasswd -b f admin [REDACTED]; curl -u u:[REDACTED] x"],
    ["sshpass -pQaaa:Xh scp -P 2222 f host:", "sshpass -p[REDACTED] scp -P 2222 f host:"],
    ["curl -uadmin:x/sshpass https://x", "curl -uadmin:[REDACTED] https://x"],
  ])("hides a password that looks like a program name: %j", (input, expected) => {
    expect(redactString(input)).toBe(expected);
  });
});

const ALNUM = [..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"];
// Secrets inside a URL cannot hold `@`, `/` or `:` unescaped, a token recognised by its shape is
// alphanumeric; elsewhere a secret may hold punctuation.
const secret = (shape: string) => {
  const punctuation = shape.includes("hvs.") ? [] : [..."._~+=^*!-"];
  const urlUnsafe = shape.includes("://") || shape.includes("hvs.") ? [] : ["@", "/", ":", "%"];
  return fc
    .string({ unit: fc.constantFrom(...ALNUM, ...punctuation, ...urlUnsafe), minLength: 6, maxLength: 40 })
    .map((s) => `Q${s}`);
};

// Surroundings in the test's own words (no `Q`), including flags that only look like secrets.
const surroundings = fc
  .array(fc.constantFrom(...KEPT, "echo done", "ls -la /var/log", "grep -r x .", "uptime"), { maxLength: 4 })
  .map((parts) => parts.join(" && "));

describe("credential shapes (property)", () => {
  it("the secret never survives, and the text around it survives exactly", () => {
    const shapeWithSecret = fc
      .constantFrom(...SHAPES)
      .chain((shape) => fc.tuple(fc.constant(shape), secret(shape[0])));
    fc.assert(
      fc.property(
        shapeWithSecret,
        fc.constantFrom("\n", " && ", " || "),
        surroundings,
        surroundings,
        ([[template, expected], s], sep, before, after) => {
          const head = before === "" ? "" : `${before}${sep}`;
          const tail = after === "" ? "" : `${sep}${after}`;
          const out = scrubSecrets(`${head}${template.replaceAll("@S@", s)}${tail}`);
          expect(out).not.toContain(s);
          expect(out).toBe(`${head}${expected}${tail}`);
        },
      ),
      { numRuns: 1500 },
    );
  });
});

function timed(run: () => void): number {
  const start = performance.now();
  run();
  return performance.now() - start;
}

describe("the program rules stay linear", () => {
  it("adversarial megabyte inputs", () => {
    const size = 1 << 20;
    const fill = (unit: string) => unit.repeat(Math.ceil(size / unit.length));
    const inputs = [
      fill("sshpass "),
      fill("sshpass -p "),
      fill("curl -u "),
      fill("curl -su"),
      fill("htpasswd -b "),
      fill("htpasswd -nb a "),
      fill("docker login -p "),
      fill('"sshpass '),
      fill("/sshpass"),
      fill("sshpass -p '"),
      `sshpass -p "${fill("a ")}`,
      `curl -u ${fill("a")}`,
      `curl ${fill("-u=")}`,
      fill("openssl -passin pass:"),
      fill("a_pass="),
      fill("_pass="),
      fill("pass:"),
      fill("X_KEY="),
      `--${fill("a-")}`,
      `--${fill("a")}`,
      fill("--a-b-c "),
      fill("credentials: {"),
      fill("credentials: ["),
      `credentials: ${fill("{")}`,
      `credentials: {${fill('"a')}`,
      fill('{"credentials": "'),
      `${"a".repeat(size)}!`,
      fill("x_"),
    ];
    // Generous for a shared machine: the growth test below is the sharper check.
    for (const text of inputs) {
      expect(timed(() => scrubSecrets(text))).toBeLessThan(4000);
    }
  });

  it("cost grows linearly with the input", () => {
    const unit = 'sshpass -p x curl -su a:b htpasswd -nb u p DB_PASS=y --db-pass z credentials: {"k": 1} ';
    const small = unit.repeat(Math.ceil((1 << 18) / unit.length));
    const large = unit.repeat(Math.ceil((1 << 20) / unit.length));
    for (let i = 0; i < 2; i++) scrubSecrets(small);
    const best = (text: string) =>
      Math.min(...Array.from({ length: 3 }, () => timed(() => scrubSecrets(text))));
    // Four times the input: well under sixteen times the time (quadratic), even on a loaded machine.
    expect(best(large) / best(small)).toBeLessThan(10);
  });
});
