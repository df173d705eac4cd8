import { describe, expect, it } from "vitest";
import { redactArgs, redactString, scrubSecrets } from "./redact.js";

const HF_TOKEN = `hf_${"abcdefghijklmnopqrstuvwxyzabcdefgh"}`;

describe("redactString: contract conformance table", () => {
  it.each<[string, string]>([
    ["Authorization: Bearer abcdef123456", "Authorization: [REDACTED]"],
    [
      'curl -H "Authorization: Bearer abc.def-ghi" trailing-arg',
      'curl -H "Authorization: [REDACTED]" trailing-arg',
    ],
    [": Authorization: cover && echo suffix-output", ": Authorization: [REDACTED] && echo suffix-output"],
    ["Proxy-Authorization: Basic dXNlcjpwYXNzd29yZA==", "Proxy-Authorization: [REDACTED]"],
    ["Bearer abc.def-ghi", "Bearer [REDACTED]"],
    ["password: topsecret", "password: [REDACTED]"],
    ["token=abc next", "token=[REDACTED] next"],
    ["export DB_PASSWORD=prod-p@ss", "export DB_PASSWORD=[REDACTED]"],
    ['{"password": "hunter2", "host": "db01"}', '{"password": "[REDACTED]", "host": "db01"}'],
    ["AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AWS_SECRET_ACCESS_KEY=[REDACTED]"],
    ["SECRET_ACCESS_KEY_PATH=/x", "SECRET_ACCESS_KEY_PATH=/x"],
    [
      "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==;EndpointSuffix=core.windows.net",
      "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=[REDACTED];EndpointSuffix=core.windows.net",
    ],
    [
      "https://acct.blob.core.windows.net/c/b?sv=2021-08-06&sig=aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
      "https://acct.blob.core.windows.net/c/b?sv=2021-08-06&sig=[REDACTED]",
    ],
    ["--password topsecret extra-arg", "--password [REDACTED] extra-arg"],
    ["--password=topsecret", "--password=[REDACTED]"],
    ['--password "top secret pass" --host db', "--password [REDACTED] --host db"],
    ["--password top\\ secret --host db", "--password [REDACTED] --host db"],
    ["mytool -token=go-secret -verbose", "mytool -token=[REDACTED] -verbose"],
    ["mysql --password --host db.example -u root", "mysql --password --host db.example -u root"],
    ["client --token -abc123DashSecret --quiet", "client --token [REDACTED] --quiet"],
    ["-Credential MyP@ssw0rd", "-Credential [REDACTED]"],
    [
      "ConvertTo-SecureString 'P@ss123' -AsPlainText -Force",
      "ConvertTo-SecureString [REDACTED] -AsPlainText -Force",
    ],
    ["ConvertTo-SecureString $encrypted -Key $k", "ConvertTo-SecureString $encrypted -Key $k"],
    ["Get-Credential -Message hi", "Get-Credential -Message hi"],
    ["https://user:pass@host/repo.git", "https://[REDACTED]@host/repo.git"],
    ["http://host:8080/path", "http://host:8080/path"],
    ["mysql -uroot -pleaked-pw -h db", "mysql -uroot -p[REDACTED] -h db"],
    ["ssh -p22 user@host", "ssh -p22 user@host"],
    ["nmap -p1-1000 host.example", "nmap -p1-1000 host.example"],
    ["-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----", "[REDACTED]"],
    ["ghp_abcdefghijklmnopqrstuvwxyz0123456789", "[REDACTED]"],
    ["sk-proj-abc_def-ghijklmnopqrstuvwxyz1234567890", "[REDACTED]"],
    [HF_TOKEN, "[REDACTED]"],
    ["AKIA0000000000000000", "[REDACTED]"],
    ["xoxb-1234567890-abcdefghij", "[REDACTED]"],
    ["ya29.A0ARrdaMabcdefghijklmnop.1234567890abcdefghijklmnop", "[REDACTED]"],
    ["eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.dozjgNryP4J3jVmNHl0w5N", "[REDACTED]"],
    ["sk-build-step", "sk-build-step"],
    ["glpat-short", "glpat-short"],
    ["ghp_short", "ghp_short"],
    ["AKIASHORT", "AKIASHORT"],
    ["the secretariat opened at 9", "the secretariat opened at 9"],
    ["description=hello", "description=hello"],
    ["ls --color=auto", "ls --color=auto"],
    ["count=42", "count=42"],
    ["net user bob NewP@ss", "net user bob NewP@ss"],
  ])("%j", (input, expected) => {
    expect(redactString(input)).toBe(expected);
  });

  it("an unterminated quoted flag value loses every word", () => {
    const out = redactString('--token="abc def ghi');
    expect(out.startsWith("--token=[REDACTED]")).toBe(true);
    for (const word of ["abc", "def", "ghi"]) expect(out).not.toContain(word);
  });
});

describe("redactString: beyond the table", () => {
  it.each<[string, string]>([
    // Header forms: JSON, JSON inside a JSON string, SigV4 commas, `|` operator, Proxy with `=`.
    ['{"Authorization": "Basic dXNlcjpwYXNz", "x": 1}', '{"Authorization": "[REDACTED]", "x": 1}'],
    ['{\\"authorization\\": \\"Basic dXNlcjpwYXNz\\"}', '{\\"authorization\\": \\"[REDACTED]\\"}'],
    [
      "Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/2015, SignedHeaders=host, Signature=5d672d79",
      "Authorization: [REDACTED]",
    ],
    ["x Authorization: Digest a=1, b=2 | grep ok", "x Authorization: [REDACTED] | grep ok"],
    ["Authorization: abc\nnext line", "Authorization: [REDACTED]\nnext line"],
    // Keywords: quoted values with spaces, compound and header-style names.
    ['password: "top secret"', 'password: "[REDACTED]"'],
    ["client_secret='a b c' ok", "client_secret='[REDACTED]' ok"],
    ["X-Api-Key: abc123 rest", "X-Api-Key: [REDACTED] rest"],
    ["aws_secret_access_key = wJalr", "aws_secret_access_key = [REDACTED]"],
    ['"password": ""', '"password": ""'],
    // Flags: multi-line quoted value, escaped JSON quotes, a line continuation.
    ['--secret "line1\nline2" --next', "--secret [REDACTED] --next"],
    ['--api-key \\"k1 k2\\" rest', "--api-key [REDACTED] rest"],
    ["mysql --password \\\n  --host db", "mysql --password \\\n  --host db"],
    ["Get-Credential -Credential admin", "Get-Credential -Credential [REDACTED]"],
    // PowerShell: switches before the literal, too many switches, the piped form.
    [
      "ConvertTo-SecureString -AsPlainText -Force -String 'P@ss'",
      "ConvertTo-SecureString -AsPlainText -Force -String [REDACTED]",
    ],
    [`ConvertTo-SecureString ${"-A ".repeat(9)}'P@ss'`, `ConvertTo-SecureString ${"-A ".repeat(9)}'P@ss'`],
    [
      "$p = 'P@ss 1' | ConvertTo-SecureString -AsPlainText -Force",
      "$p = [REDACTED] | ConvertTo-SecureString -AsPlainText -Force",
    ],
    // URL user info with `@` inside the password or an e-mail as user name.
    ["git clone https://me@corp.example:p@ss@host/r", "git clone https://[REDACTED]@host/r"],
    ["https://user:@host/x", "https://user:@host/x"],
    // Private keys: a block passed through a keyword, and a header with no footer.
    [
      "password=-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY----- done",
      "password=[REDACTED] done",
    ],
    ['echo "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE" > key.pem', 'echo "[REDACTED]" > key.pem'],
    // Provider shapes in context.
    ["curl https://hooks.slack.com/services/T000/B000/XXXXXXXX -d x", "curl [REDACTED] -d x"],
    ["STRIPE=sk_live_abcdefghij12", "STRIPE=[REDACTED]"],
    ["use glpat-abcdefghij0123456789 now", "use [REDACTED] now"],
    // Keyed by program: the `-p22` of ssh in the same line is a port and stays.
    ["mysql -p'two words' -h db; ssh -p22 h", "mysql -p[REDACTED] -h db; ssh -p22 h"],
    ["java -proxy host", "java -proxy host"],
    ["https://h.example/x?a=1&sig=short123", "https://h.example/x?a=1&sig=short123"],
    ['{\\"password\\": \\"hunter2\\"}', '{\\"password\\": \\"[REDACTED]\\"}'],
    // One rule's value is another key: both values go (found by the fuzzer).
    ["Bearer -Credential 'S3cretValue'", "Bearer [REDACTED] [REDACTED]"],
    ["password: api_key: S3cretValue", "password: [REDACTED] [REDACTED]"],
    ["--api-key -Credential 'S3cretValue'", "--api-key [REDACTED] [REDACTED]"],
    ["token:\\ --password S3cretValue", "token:[REDACTED] [REDACTED]"],
  ])("%j", (input, expected) => {
    expect(redactString(input)).toBe(expected);
  });
});

describe("redactString: length bound and scan window", () => {
  const WINDOW = 500 + 16384;

  it("keeps short strings whole, counting code points, not UTF-16 units", () => {
    const emoji = "😀".repeat(500);
    expect(emoji.length).toBe(1000);
    expect(redactString(emoji)).toBe(emoji);
    expect(redactString(`${emoji}a`)).toBe(`${emoji}...(+1)`);
  });

  it("counts the cut part in code points, window and unscanned tail together", () => {
    expect(redactString("😀".repeat(20_000))).toBe(`${"😀".repeat(500)}...(+19500)`);
    expect(redactString("x".repeat(WINDOW + 7))).toBe(`${"x".repeat(500)}...(+${WINDOW + 7 - 500})`);
  });

  it("counts what the rules removed: N is taken after redaction", () => {
    const input = `token=${"s".repeat(600)} tail`;
    expect(redactString(input)).toBe("token=[REDACTED] tail");
    const long = `${"a".repeat(495)} token=${"s".repeat(50)} ${"b".repeat(100)}`;
    expect(redactString(long)).toBe(`${"a".repeat(495)} toke...(+${"n=[REDACTED] ".length + 100})`);
  });

  it("drops a secret lying beyond the scan window with the tail", () => {
    const out = redactString(`${"x".repeat(WINDOW + 10)} password=hunter2secret`);
    expect(out).not.toContain("hunter2secret");
    expect(out).toBe(`${"x".repeat(500)}...(+${WINDOW + 10 + " password=hunter2secret".length - 500})`);
  });

  it("hides a quoted value whose closing quote lies beyond the window", () => {
    const words = Array.from({ length: 4000 }, (_, i) => `w${i}x`).join(" ");
    const out = redactString(`run --password "${words}" --verbose`);
    expect(out.startsWith("run --password [REDACTED]...(+")).toBe(true);
    expect(out).not.toMatch(/w\d+x/);
  });

  it("hides the body of a key whose footer lies beyond the window", () => {
    const body = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=\n".repeat(800);
    const out = redactString(`k=-----BEGIN RSA PRIVATE KEY-----\n${body}-----END RSA PRIVATE KEY-----`);
    expect(out.startsWith("k=[REDACTED]...(+")).toBe(true);
    expect(out).not.toContain("QUJD");
  });

  it("hides a bare value that runs past the window", () => {
    const out = redactString(`export API_KEY=${"Z".repeat(40_000)}`);
    expect(out).toMatch(/^export API_KEY=\[REDACTED\]\.\.\.\(\+\d+\)$/);
  });

  it("hides URL user info cut by the window before its `@`", () => {
    const out = redactString(`https://user:${"p".repeat(20_000)}@host/x`);
    expect(out).toMatch(/^https:\/\/\[REDACTED\]\.\.\.\(\+\d+\)$/);
    expect(scrubSecrets("http://host:8080")).toBe("http://host:8080");
  });
});

describe("redactArgs", () => {
  it("scrubs nested keys and values but keeps top-level keys", () => {
    const out = redactArgs({ body: { "token=abc123def456ghi": "x" }, "password=top": "password=top" });
    expect(out).toEqual({ body: { "token=[REDACTED]": "x" }, "password=top": "password=[REDACTED]" });
  });

  it("passes numbers, booleans and null through", () => {
    const args = { n: 5, b: true, x: null, lst: [1, 2], f: 1.5, neg: -3 };
    expect(redactArgs(args)).toEqual(args);
  });

  it("recurses through arrays and truncates long strings inside them", () => {
    const out = redactArgs({ argv: ["--token", "ok", ["Bearer abc123"], "y".repeat(600)] });
    expect(out).toEqual({ argv: ["--token", "ok", ["Bearer [REDACTED]"], `${"y".repeat(500)}...(+100)`] });
  });

  it("decodes byte arrays leniently before scrubbing", () => {
    const bytes = Buffer.concat([Buffer.from("password=hunter2 "), Buffer.from([0xff, 0xfe])]);
    expect(redactArgs({ stdin: bytes, raw: new Uint8Array(Buffer.from("token=abc")) })).toEqual({
      stdin: "password=[REDACTED] \uFFFD\uFFFD",
      raw: "token=[REDACTED]",
    });
  });

  it("keeps both of two keys that redact to the same text", () => {
    const out = redactArgs({ env: { "token=aaa": 1, "token=bbb": 2 } });
    expect(out).toEqual({ env: { "token=[REDACTED]": 1, "token=[REDACTED] #2": 2 } });
  });

  it("never throws on cycles, depth, getters, proxies and exotic values", () => {
    const cyclic: Record<string, unknown> = { name: "loop" };
    cyclic.self = cyclic;
    let deep: unknown = "password=deep";
    for (let i = 0; i < 100; i++) deep = { d: deep };
    const throwing = Object.defineProperty({}, "bad", {
      enumerable: true,
      get() {
        throw new Error("nope");
      },
    });
    const hostile = new Proxy(
      {},
      {
        ownKeys() {
          throw new Error("nope");
        },
      },
    );
    const args = {
      cyclic,
      deep,
      throwing,
      hostile,
      big: 12345678901234567890n,
      sym: Symbol("token=abc"),
      fn: () => "token=abc",
      url: new URL("https://user:pw1234@example.com/x"),
      when: new Date(0),
      map: new Map([["password=k", "Bearer zzz"]]),
      set: new Set(["token=q"]),
      err: new Error("password=oops"),
      undef: undefined,
    };
    const out = redactArgs(args);
    expect(Object.keys(out)).toEqual(Object.keys(args));
    expect(out.cyclic).toEqual({ name: "loop", self: "[circular]" });
    expect(JSON.stringify(out.deep)).toContain("[too deep]");
    expect(out.throwing).toEqual({ bad: "[unreadable]" });
    expect(out.hostile).toBe("[unreadable]");
    expect(out.big).toBe("12345678901234567890");
    // The bare value runs to the next space, so the closing parenthesis goes too.
    expect(out.sym).toBe("Symbol(token=[REDACTED]");
    expect(out.url).toBe("https://[REDACTED]@example.com/x");
    expect(out.when).toBe("1970-01-01T00:00:00.000Z");
    expect(out.map).toEqual({ "password=[REDACTED]": "Bearer [REDACTED]" });
    expect(out.set).toEqual(["token=[REDACTED]"]);
    expect(out.err).toBe("Error: password=[REDACTED]");
    expect(out.undef).toBeUndefined();
    expect(JSON.stringify(out)).not.toMatch(/pw1234|oops|zzz|=abc/);
  });

  it("keeps a `__proto__` key as an ordinary key", () => {
    const args = JSON.parse('{"__proto__": {"token=abc": 1}, "a": 1}') as Record<string, unknown>;
    const out = redactArgs(args);
    expect(Object.keys(out)).toEqual(["__proto__", "a"]);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(JSON.stringify(out)).toBe('{"__proto__":{"token=[REDACTED]":1},"a":1}');
  });
});
