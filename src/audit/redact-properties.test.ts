import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { redactArgs, redactString, scrubSecrets } from "./redact.js";

const cp = (s: string): number => [...s].length;

// No rule can fire without one of the letters c e k p w z g x y (either case),
// an upper-case I, `_` or `@`: every keyword, flag, header, anchor, program
// name (`curl`, `sqlcmd`, `http`, `pass:`) and the placeholder itself needs at
// least one of them.
const SAFE_CHARS = [
  ..."abdfhijlmnoqrstuvABDFHJLMNOQRSTUV0123456789",
  ..." \t\n\r-=:'\"/\\.|&;,()[]{}#%+!?<>*~$^`",
  "é",
  "ß",
  "日",
  "😀",
  "\u00a0",
];
const safeText = fc.string({ unit: fc.constantFrom(...SAFE_CHARS), maxLength: 300 });

const SAFE_WORDS = [
  "ls",
  "-la",
  "/var/log",
  "echo",
  "hello",
  "grep",
  "-r",
  "|",
  "&&",
  ";",
  '"',
  "'",
  "\\",
  "42",
  "secretariat",
  "tokens",
  "passwords",
  "description=hello",
  "ls --color=auto",
  "count=42",
  "ssh -p22 user@host",
  "nmap -p1-1000 host.example",
  "Get-Credential -Message hi",
  "http://host:8080/path",
  "sk-build-step",
  "glpat-short",
  "ghp_short",
  "AKIASHORT",
  "net user bob NewP@ss",
  "key",
  "they",
  "日本語",
  "😀",
];
const safeWords = fc
  .array(fc.tuple(fc.constantFrom(...SAFE_WORDS), fc.constantFrom(" ", "\n", "\t")), { maxLength: 40 })
  .map((parts) => parts.map(([word, sep]) => word + sep).join(""));

// Fragments that make rules fire and overlap, to look for rule interactions.
const FRAGMENTS = [
  "password",
  "DB_PASSWORD",
  "token",
  "secret_access_key",
  "api-key",
  "Authorization",
  "Proxy-",
  "Bearer",
  "Credential",
  ":",
  "=",
  " ",
  "\t",
  "\n",
  '"',
  "'",
  "\\",
  "--",
  "-",
  "://",
  "user",
  "@",
  "/",
  "&&",
  " | ",
  ";",
  "[REDACTED]",
  "ghp_",
  "abcdefghijklmnopqrstuvwxyz0123",
  "-----BEGIN RSA PRIVATE KEY-----",
  "-----END RSA PRIVATE KEY-----",
  "ConvertTo-SecureString ",
  "-Force ",
  "$x",
  "mysql",
  "-p",
  "AccountKey=",
  "?sig=",
  "&sig=",
  "eyJhbGciOiJIUzI1NiJ9",
  ".",
  "eyJzdWIiOiIxIn0",
  "sk-",
  "AKIA",
  "0000000000000000",
  "hooks.slack.com/services/",
  "https",
  "`",
  ",",
  "{",
  "}",
  "é",
  "😀",
  "sshpass",
  "curl",
  "-u",
  "-su",
  "htpasswd",
  "-b",
  "-nb",
  "docker",
  "login",
  "smbclient",
  "-U",
  "%",
  "openssl",
  "-passin",
  "pass:",
  "DB_PASS",
  "SECRET_KEY",
  "--db-password",
  "credentials",
  "[",
  "]",
  "redis-cli",
  "-a",
  "ldapsearch",
  "-w",
];
const secretish = fc.array(fc.constantFrom(...FRAGMENTS), { maxLength: 30 }).map((parts) => parts.join(""));

const anyText = fc.oneof(
  fc.string({ unit: "binary", maxLength: 200 }),
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 200 }),
  secretish,
);

describe("redaction properties", () => {
  it("never throws and never grows past the bound", () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const out = redactString(text);
        expect(typeof out).toBe("string");
        expect(cp(out)).toBeLessThanOrEqual(500 + "...(+99999)".length);
      }),
      { numRuns: 1000 },
    );
  });

  it("is idempotent", () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const once = scrubSecrets(text);
        expect(scrubSecrets(once)).toBe(once);
        const bounded = redactString(text);
        // A cut string ends with its marker, which a second cut would count again.
        if (!/\.\.\.\(\+\d+\)$/.test(bounded)) expect(redactString(bounded)).toBe(bounded);
      }),
      { numRuns: 2000 },
    );
  });

  it("leaves secret-free text unchanged", () => {
    fc.assert(
      fc.property(fc.oneof(safeText, safeWords), (text) => {
        const out = redactString(text);
        if (cp(text) <= 500) expect(out).toBe(text);
        else expect(out).toBe(`${[...text].slice(0, 500).join("")}...(+${cp(text) - 500})`);
      }),
      { numRuns: 1000 },
    );
  });

  it("removes every generated Bearer, URL, flag and key=value secret", () => {
    const templates: ((s: string) => string)[] = [
      (s) => `curl -H "Authorization: Bearer ${s}" https://api.example`,
      (s) => `Bearer ${s}`,
      (s) => `git clone https://deploy:${s}@git.example/repo.git`,
      (s) => `--password ${s}`,
      (s) => `--token=${s}`,
      (s) => `--api-key "${s} second"`,
      (s) => `-Password ${s}`,
      (s) => `-Credential '${s}'`,
      (s) => `export DB_PASSWORD=${s}`,
      (s) => `api_key: ${s}`,
      (s) => `{"client_secret": "${s}"}`,
      (s) => `AWS_SECRET_ACCESS_KEY=${s}`,
      (s) => `mysql -u root -p${s} db`,
      (s) => `ConvertTo-SecureString '${s}' -AsPlainText -Force`,
    ];
    const secret = fc.string({
      unit: fc.constantFrom(..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
      minLength: 12,
      maxLength: 40,
    });
    fc.assert(
      fc.property(
        safeWords,
        fc.constantFrom(...templates),
        secret,
        safeWords,
        (before, template, value, after) => {
          // The leading `W` is not in the safe text, so the value cannot also occur there.
          const s = `W${value}`;
          const out = redactString(`${before} ${template(s)} ${after}`);
          expect(out).not.toContain(s);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("preserves the key set of the args mapping", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 })), (args) => {
        expect(Object.keys(redactArgs(args))).toEqual(Object.keys(args));
      }),
      { numRuns: 300 },
    );
  });
});

function timed(run: () => void): number {
  const start = performance.now();
  run();
  return performance.now() - start;
}

/** Deterministic pseudo-random command text of `size` UTF-16 units. */
function randomCommand(size: number, seed: number): string {
  const words = [
    "ls",
    "-la",
    "/etc",
    "|",
    "grep",
    "token=abc123",
    "--password",
    "hunter2",
    '"quoted text"',
    "Authorization: Bearer x",
    "https://u:p@h/x",
    "&&",
    "echo",
    "日本",
    "😀",
    "ghp_abcdefghijklmnopqrstuvwxyz0123",
    "\n",
  ];
  let state = seed;
  const parts: string[] = [];
  let length = 0;
  while (length < size) {
    state = (state * 1103515245 + 12345) % 2147483648;
    const word = words[state % words.length] ?? "x";
    parts.push(word, " ");
    length += word.length + 1;
  }
  return parts.join("").slice(0, size);
}

describe("redaction stays linear", () => {
  it("1.2 MB of DB_PASSWORD assignments", () => {
    const text = "DB_PASSWORD=hunter2 ".repeat(60_000);
    expect(timed(() => redactString(text))).toBeLessThan(3000);
    // Without the window too: the rules themselves are linear.
    let out = "";
    expect(timed(() => (out = scrubSecrets(text)))).toBeLessThan(3000);
    expect(out).not.toContain("hunter2");
  });

  it("6400 unterminated private-key headers", () => {
    for (const sep of ["\n", '" ', ";"]) {
      const text = `-----BEGIN RSA PRIVATE KEY-----${sep}`.repeat(6400);
      expect(timed(() => redactString(text))).toBeLessThan(5000);
      expect(timed(() => scrubSecrets(text))).toBeLessThan(5000);
    }
  });

  it("adversarial megabyte inputs without the window", () => {
    const size = 1 << 20;
    const fill = (unit: string) => unit.repeat(Math.ceil(size / unit.length));
    const inputs = [
      fill("DB_PASSWORD="),
      fill('--token "'),
      fill('"Authorization: '),
      fill("Authorization: a "),
      fill("://a:b"),
      `ey${fill("a")}`,
      fill("eyAAAAAAAAAAAAAAAAAAAA.ey"),
      fill("ConvertTo-SecureString -A "),
      fill("' | ConvertTo-SecureString"),
      `mysql ${fill("-p'")}`,
      fill('\\"password\\": \\"'),
      fill("&sig=aaaa"),
      fill("-----END RSA PRIVATE KEY-----"),
      fill("AccountKey="),
    ];
    for (const text of inputs) {
      expect(timed(() => scrubSecrets(text))).toBeLessThan(2000);
    }
  });

  it("a 1 MiB random command after warm-up", () => {
    const text = randomCommand(1 << 20, 7);
    for (let i = 0; i < 3; i++) redactString(text);
    const runs = Array.from({ length: 5 }, () => timed(() => redactString(text))).sort((a, b) => a - b);
    expect(runs[2]).toBeLessThan(100);
  });
});
