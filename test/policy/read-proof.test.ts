import { readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { type Classifier, createClassifier } from "../../src/policy/index.js";
import { READ_ONLY_PROGRAMS } from "../../src/policy/readonly/table.js";
import { LOOKALIKE_ROWS, PROOF_ROWS } from "./golden/proofs.js";

/**
 * The Tier-0 proof (ADR 0033). The first invariant: no command that writes,
 * deletes or runs code is ever Tier 0. The property builds commands from
 * proven reads joined by every shell construct that may join reads, puts one
 * writing part somewhere inside, and checks that the result is not Tier 0.
 * Nothing here runs: the classifier only reads text.
 */
let classifier: Classifier;

beforeAll(async () => {
  classifier = await createClassifier();
});

const tier = (text: string, windows = false) => classifier.classify(text, { windows }).tier;

/** Reads the table proves; each is Tier 0 on its own (checked below). */
const READS = [
  "ls -la /var/log",
  "cat /etc/os-release",
  "df -h",
  "free -m",
  "uptime",
  "ps aux",
  "grep -i error /var/log/syslog",
  "tail -n 50 /var/log/nginx/error.log",
  "journalctl -u nginx -n 100 --no-pager",
  "systemctl status sshd",
  "ss -tlnp",
  "ip -br addr show",
  "git log --oneline -5",
  "git status --short",
  "kubectl get pods -A -o wide",
  "kubectl logs deploy/api --tail=20",
  "docker ps --format '{{.Names}}'",
  "find /etc -name '*.conf' -mtime -1",
  "awk '{print $1}' /var/log/nginx/access.log",
  "sed -n '1,20p' /etc/hosts",
  "sort -k2 -n data.txt",
  "uniq -c",
  "head -c 100 /dev/urandom",
  "wc -l",
  "jq '.items[].metadata.name'",
  "du -sh /var/lib/*",
  "stat /etc/passwd",
  "date +%F",
  "sysctl net.core.somaxconn",
  "curl -s http://127.0.0.1:8080/healthz",
  "echo done",
  "ssh -o BatchMode=yes web01 uptime",
  "docker exec web cat /etc/nginx/nginx.conf",
  "kubectl exec -n prod deploy/api -- env",
  "git reset -h",
];

/**
 * Parts that write, delete, change state or run code the classifier cannot
 * read. Each must keep any command holding it above Tier 0. The paths point
 * into a directory that exists nowhere; nothing is run.
 */
const WRITES = [
  "echo x > /tmp/relay-canary/out",
  "echo x >> /tmp/relay-canary/out",
  "ls &> /tmp/relay-canary/out",
  "cat <> /tmp/relay-canary/out",
  "ls >| /tmp/relay-canary/out",
  "ls 2> /tmp/relay-canary/err",
  "tee /tmp/relay-canary/out",
  "rm /tmp/relay-canary/x",
  "rm -rf /tmp/relay-canary",
  "mkdir /tmp/relay-canary/d",
  "touch /tmp/relay-canary/f",
  "cp a /tmp/relay-canary/b",
  "mv a /tmp/relay-canary/b",
  "sort -o /tmp/relay-canary/o in",
  "sort --output=/tmp/relay-canary/o in",
  "sort --compress-program=sh in",
  "uniq in /tmp/relay-canary/out",
  "sed -i s/a/b/ /tmp/relay-canary/f",
  "sed 's/a/b/w /tmp/relay-canary/f' in",
  "sed 1e\\ id in",
  "awk '{print > \"/tmp/relay-canary/f\"}' in",
  "awk 'BEGIN{system(\"id\")}'",
  "awk '{print | \"sh\"}' in",
  "find /tmp/relay-canary -delete",
  "find /tmp/relay-canary -fprint /tmp/relay-canary/list",
  "find . -exec touch {} +",
  "curl -o /tmp/relay-canary/f http://127.0.0.1/",
  "curl -X DELETE http://127.0.0.1/api/x",
  "curl -d a=1 http://127.0.0.1/api",
  "wget http://127.0.0.1/x",
  "git -c core.pager=id log",
  "git commit -m x",
  "git branch new-branch",
  "git config user.name x",
  "kubectl delete pod x",
  "kubectl --kubeconfig /tmp/relay-canary/k get pods",
  "docker rm -f x",
  "systemctl restart nginx",
  "sysctl -w vm.swappiness=1",
  "date -s 2020-01-01",
  "hostname other",
  "dmesg -C",
  "journalctl --vacuum-time=1s",
  "PATH=/tmp/relay-canary:$PATH ls",
  "LD_PRELOAD=/tmp/relay-canary/x.so ls",
  "GIT_DIR=/tmp/relay-canary git log",
  "KUBECONFIG=/tmp/relay-canary/k kubectl get pods",
  "export PATH=/tmp/relay-canary",
  "PAGER=id git log",
  "bash /tmp/relay-canary/s.sh",
  "sh -c 'echo hi > /tmp/relay-canary/f'",
  "bash -l -c ls",
  "bash -i -c ls",
  "bash < /tmp/relay-canary/s.sh",
  ". /tmp/relay-canary/env",
  "python3 -c 'print(1)'",
  "perl -e 'print 1'",
  "/tmp/relay-canary/tool --list",
  "./check --help-me",
  "eval ls",
  "sudo ls",
  "ssh localhost 'touch /tmp/relay-canary/f'",
  "ssh -L 9000:127.0.0.1:22 localhost ls",
  "ssh -o ProxyCommand=id localhost ls",
  "ssh localhost",
  "docker exec -e LD_PRELOAD=/tmp/relay-canary/x.so web ls",
  "docker run --rm alpine ls",
  "kubectl --kubeconfig /tmp/relay-canary/k exec pod -- ls",
  "nohup ls",
  "xargs rm",
  "xargs sort -o /tmp/relay-canary/o",
  "psql -c 'DELETE FROM t'",
  "psql -c 'SELECT pg_terminate_backend(1)'",
  "psql -f /tmp/relay-canary/q.sql",
  "mysql",
  "redis-cli FLUSHALL",
  "redis-cli",
  "tar -xf /tmp/relay-canary/a.tar",
  "gzip /tmp/relay-canary/f",
  "cat /dev/watchdog",
  "time -o /tmp/relay-canary/t ls",
  "printf -v PATH /tmp/relay-canary",
  "read PATH",
  "unknown-program --flag",
  "printf 'DELETE /x HTTP/1.1' | openssl s_client -connect 127.0.0.1:1",
  "openssl s_client -connect 127.0.0.1:1 < /tmp/relay-canary/request",
  "less '+!id' /etc/hosts",
  "man -P id ls",
  "ss -K dst 127.0.0.1",
  "curl -w '%output{/tmp/relay-canary/f}' http://127.0.0.1/",
  "sqlite3 /tmp/relay-canary/db \"SELECT writefile('/tmp/relay-canary/f', 'x')\"",
  "kubectl kustomize --enable-exec /tmp/relay-canary",
  "journalctl --cursor-file=/tmp/relay-canary/c",
  "hash -p /tmp/relay-canary/x ls",
  "rbd device map pool/image",
  "vault read database/creds/readonly",
  "ldconfig -v",
  "iscsiadm -m discovery -t st -p 127.0.0.1",
  "btrfs filesystem label /mnt x",
  "dpkg -l -i /tmp/relay-canary/x.deb",
  "argocd app diff api --local /tmp/relay-canary",
  // bash evaluates a variable's value again in arithmetic, where a[$(cmd)] runs cmd; fish runs ((cmd)).
  "x='a[$(touch /tmp/relay-canary/f)]'; echo $((x))",
  "echo $(($x + 1))",
  "[[ $x -eq 0 ]]",
  "echo ${a[$x]}",
  "declare -i n=5",
  "((reboot))",
  'echo "$((mkdir /tmp/relay-canary/d))"',
  "$CMD",
];

const SEPARATORS = [" ; ", " && ", " || ", " | ", "\n", " & "];

/** Ways to put a part into a bigger command. */
const WRAPS: ((inner: string) => string)[] = [
  (x) => x,
  (x) => `(${x})`,
  (x) => `{ ${x}; }`,
  (x) => `echo "$(${x})"`,
  (x) => `cat <(${x})`,
  (x) => `for f in a b; do ${x}; done`,
  (x) => `if true; then ${x}; fi`,
  (x) => `while false; do ${x}; done`,
  (x) => `timeout 5 ${x}`,
  (x) => `nice -n 10 ${x}`,
  (x) => `time ${x}`,
  (x) => `watch -n 1 '${x.replaceAll("'", "'\\''")}'`,
  (x) => `${x} 2>/dev/null`,
];

/** A function the text defines and calls: its name is no program of the table, so it is never proven. */
const ONLY_FOR_WRITES: ((inner: string) => string)[] = [
  (x) => `f() { ${x}; }; f`,
  (x) => `alias l='${x}'; l`,
];

describe("Tier 0: the pools", () => {
  it.each(READS)("%s is proven to only read", (text) => {
    expect(classifier.classify(text)).toEqual({ tier: 0, basis: "proven_read", part: "" });
  });

  it.each(WRITES)("%s is not Tier 0", (text) => {
    expect(tier(text)).toBeGreaterThan(0);
    expect(tier(text, true)).toBeGreaterThan(0);
  });
});

describe("Tier 0: no command that writes, deletes or runs code is proven", () => {
  const read = fc.constantFrom(...READS);
  const write = fc.constantFrom(...WRITES);
  const sep = fc.constantFrom(...SEPARATORS);
  const wrap = fc.constantFrom(...WRAPS, ...ONLY_FOR_WRITES);
  const readWrap = fc.constantFrom(...WRAPS);

  it("reads joined around one writing part stay above Tier 0", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(read, sep), { maxLength: 4 }),
        write,
        wrap,
        fc.array(fc.tuple(sep, read), { maxLength: 4 }),
        (before, w, wrapper, after) => {
          const text =
            before.map(([r, s]) => `${r}${s}`).join("") +
            wrapper(w) +
            after.map(([s, r]) => `${s}${r}`).join("");
          expect(tier(text), text).toBeGreaterThan(0);
        },
      ),
      { numRuns: 600 },
    );
  });

  it("a writing part wrapped around a read stays above Tier 0", () => {
    fc.assert(
      fc.property(read, write, wrap, (r, w, wrapper) => {
        const text = wrapper(`${r} | ${w}`);
        expect(tier(text), text).toBeGreaterThan(0);
      }),
      { numRuns: 300 },
    );
  });

  it("reads joined by the shell constructs that may join reads are Tier 0", () => {
    fc.assert(
      fc.property(
        // A line break inside a substitution makes the substitution's command span lines, which
        // the glued-lines check does not vouch for; lines are checked at the top level below.
        fc.array(fc.tuple(read, fc.constantFrom(" ; ", " && ", " || ", " | ")), {
          minLength: 1,
          maxLength: 4,
        }),
        readWrap,
        (parts, wrapper) => {
          const text = wrapper(parts.map(([r, s], i) => (i === parts.length - 1 ? r : `${r}${s}`)).join(""));
          expect(tier(text), text).toBe(0);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("reads on lines of their own are Tier 0", () => {
    fc.assert(
      fc.property(fc.array(read, { minLength: 2, maxLength: 5 }), (lines) => {
        expect(tier(lines.join("\n"))).toBe(0);
      }),
      { numRuns: 100 },
    );
  });
});

describe("Tier 0 on the committed corpora (bench/corpus/README.md)", () => {
  const lines = (name: string) =>
    readFileSync(join(import.meta.dirname, "../../bench/corpus", name), "utf8")
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as { command: string; accept?: number[] });

  it("proves at least 90% of the incident responder's diagnostics", () => {
    const rows = lines("incident-reads.jsonl");
    const proven = rows.filter((r) => tier(r.command) === 0).length;
    expect(proven / rows.length).toBeGreaterThanOrEqual(0.9);
  });

  it("never proves a row of the operations corpora that changes, deletes or runs code", () => {
    const wrong = ["", "-2", "-3", "-4", "-5", "-6"]
      .flatMap((n) => lines(`blind-ops${n}.jsonl`))
      .filter((r) => r.accept !== undefined && !r.accept.includes(0))
      .filter((r) => tier(r.command) === 0)
      .map((r) => r.command);
    expect(wrong).toEqual([]);
  });
});

describe("Tier 0: golden rows of the read-only table, its proofs and their look-alikes", () => {
  it.each(PROOF_ROWS)("%s is proven", (text) => {
    expect(classifier.classify(text)).toEqual({ tier: 0, basis: "proven_read", part: "" });
  });

  it.each(LOOKALIKE_ROWS)("%s is not", (text) => {
    expect(tier(text)).toBeGreaterThan(0);
  });
});

describe("Tier 0: a subcommand is looked up among the table's own names only", () => {
  // `git constructor` found Object.prototype's `constructor` as a reading subcommand, and git runs
  // `git-constructor` from PATH for a name it does not know.
  const inherited = [...Object.getOwnPropertyNames(Object.prototype), "__proto__"];
  it("proves no program with subcommands called with a name every object inherits", () => {
    const proven: string[] = [];
    for (const [name, entry] of READ_ONLY_PROGRAMS) {
      if (entry === true || entry.subs === undefined) continue;
      for (const word of inherited) if (tier(`${name} ${word}`) === 0) proven.push(`${name} ${word}`);
    }
    expect(proven).toEqual([]);
  });
});
