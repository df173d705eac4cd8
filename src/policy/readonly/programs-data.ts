import type { Word } from "../shell/words.js";
import { subsOf, tablePart } from "./define.js";
import { mongoShellReadsOnly } from "./mongo.js";
import { operands } from "./programs-files.js";
import { QUERY_PROGRAMS } from "./programs-query.js";
import type { ReadEntry } from "./spec.js";
import { psqlReadsOnly, REDIS_VALUED, redisReadsOnly, sqlArgReadsOnly } from "./sql.js";

/**
 * Databases with the statement read for its writes (sql.ts), HTTP clients
 * that only fetch and print, and TLS inspection.
 */

const { entries, spec } = tablePart();

// Databases, with the statement read for its writes (sql.ts).
spec("psql", {
  deny: ["-f", "--file", "-o", "--output", "-L", "--log-file", "-s", "--single-step"],
  valued: [
    "-h",
    "--host",
    "-p",
    "--port",
    "-U",
    "--username",
    "-d",
    "--dbname",
    "-c",
    "--command",
    "-v",
    "--set",
    "--variable",
    "-P",
    "--pset",
    "-F",
    "-R",
  ],
  check: psqlReadsOnly,
});
spec("mysql", {
  deny: [
    "--tee",
    "--init-command",
    "--pager",
    "--plugin-dir",
    "--default-auth",
    "--local-infile",
    "--load-data-local-dir",
    "--defaults-file",
    "--defaults-extra-file",
  ],
  check: (args) => sqlArgReadsOnly(args, ["-e", "--execute"]),
});
entries.set("mariadb", entries.get("mysql")!);
spec("sqlite3", {
  words: true,
  deny: ["-init", "-cmd", "-A", "-append", "-deserialize", "-zip"],
  check: (args) => {
    const ops = operands(args, ["-separator", "-newline", "-nullvalue", "-cmd", "-init"]);
    return ops.length === 2 && sqlArgReadsOnly([ops[1]!], []);
  },
});
spec("redis-cli", {
  deny: ["--rdb", "--functions-rdb", "--pipe", "--eval", "-x", "--replica", "--slave"],
  valued: REDIS_VALUED,
  check: redisReadsOnly,
});
// Valkey and KeyDB ship the same client under their own names.
entries.set("valkey-cli", entries.get("redis-cli")!);
entries.set("keydb-cli", entries.get("redis-cli")!);
spec("mongosh", { check: mongoShellReadsOnly });
spec("mongo", { check: mongoShellReadsOnly });

// HTTP as a client that only fetches and prints. Methods other than GET/HEAD, uploads and files written are not.
spec("curl", {
  // -o/--output is checked below: only /dev/null or stdout.
  deny: [
    "-O",
    "--remote-name",
    "--remote-name-all",
    "-J",
    "--remote-header-name",
    "-T",
    "--upload-file",
    "-d",
    "--data",
    "--data-ascii",
    "--data-binary",
    "--data-raw",
    "--data-urlencode",
    "-F",
    "--form",
    "--form-string",
    "--json",
    "-K",
    "--config",
    "-c",
    "--cookie-jar",
    "-D",
    "--dump-header",
    "--trace",
    "--trace-ascii",
    "--libcurl",
    "--etag-save",
    "--hsts",
    "--alt-svc",
    "--output-dir",
    "-Q",
    "--quote",
    "--stderr",
    "-G",
    "--get",
    "--create-dirs",
    "-P",
    "--ftp-port",
    "--upload",
  ],
  valued: [
    "--output",
    "-H",
    "--header",
    "-u",
    "--user",
    "-A",
    "--user-agent",
    "-e",
    "--referer",
    "-m",
    "--max-time",
    "--connect-timeout",
    "-w",
    "--write-out",
    "-x",
    "--proxy",
    "--resolve",
    "--cacert",
    "--cert",
    "--key",
    "-b",
    "--cookie",
    "-r",
    "--range",
    "--retry",
    "-X",
    "--request",
    "--url",
    "--interface",
  ],
  valuedLetters: "HuAemwxbrX",
  check: (args) => {
    for (let i = 0; i < args.length; i++) {
      const v = args[i]!.value;
      // --write-out's %output{FILE} writes to a file (curl 8.3 and later).
      const format = curlValue(v, args[i + 1], "w", "--write-out");
      if (format !== null && /%\{?output\{|%output/.test(format)) return false;
      const output = curlValue(v, args[i + 1], "o", "--output");
      if (output !== null && !/^(?:\/dev\/null|-)$/.test(output)) return false;
      const method = curlValue(v, args[i + 1], "X", "--request");
      if (method !== null && !/^(?:GET|HEAD|OPTIONS)$/i.test(method)) return false;
    }
    return true;
  },
});
/** curl's short options that take a value: in a cluster, the rest of the word (or the next word) is theirs. */
const CURL_VALUED_LETTERS = "HuAemwxbrXdFTKcDQPEo";

/**
 * The value this word gives curl's `-LETTER` / `LONG` option (`-o F`, `-sSo F`, `-oF`,
 * `--output=F`, `-fsSX DELETE`), or null when it does not set it. An abbreviated long option is
 * taken as the option (`--out`).
 */
function curlValue(v: string, next: Word | undefined, letter: string, long: string): string | null {
  const nextValue = next === undefined || next.dynamic ? "?" : next.value;
  const name = v.includes("=") ? v.slice(0, v.indexOf("=")) : v;
  if (name.length > 3 && v.startsWith("--") && long.startsWith(name))
    return v.includes("=") ? v.slice(v.indexOf("=") + 1) : nextValue;
  if (!/^-[A-Za-z]/.test(v)) return null;
  for (let k = 1; k < v.length; k++) {
    const ch = v[k]!;
    if (ch === letter) return k === v.length - 1 ? nextValue : v.slice(k + 1);
    if (CURL_VALUED_LETTERS.includes(ch)) return null;
  }
  return null;
}

spec("wget", {
  check: (args) =>
    args.some((w) => /^(?:--spider|-O-|-qO-|-qO|-O)$/.test(w.value)) &&
    args.every((w, i) => !/^-[A-Za-z]*O$/.test(w.value) || args[i + 1]?.value === "-") &&
    !args.some((w) =>
      /^--(?:post|method|body|output-file|append-output|save-|load-cookies|execute|input-file)|^-[a-zA-NP-Z]*[eioa]/.test(
        w.value,
      ),
    ),
});
spec("http", {
  check: (args) => {
    const m = operands(args)[0]?.value;
    return (
      m !== undefined &&
      (/^(?:GET|HEAD)$/.test(m) || !/^[A-Z]+$/.test(m)) &&
      !args.some(
        (w) =>
          /^(?:-d|--download|-o|--output|--session|-f|--form|--offline)$/.test(w.value) ||
          /[^=:]=[^=]|:=/.test(w.value),
      )
    );
  },
});
spec("openssl", {
  words: true,
  // Without a command openssl is a prompt that runs the commands on its stdin.
  bare: false,
  deny: [
    "-out",
    "-keyout",
    "-new",
    "-newkey",
    "-sess_out",
    "-msgfile",
    "-keylogfile",
    "-writerand",
    "-engine",
    "-provider",
    "-provider-path",
    "-signkey",
    "-req",
    "-CAcreateserial",
  ],
  subs: {
    // s_client sends its stdin to the server.
    s_client: { sendsStdin: true },
    ...subsOf([
      "x509",

      "verify",
      "version",
      "crl",
      "req",
      "rsa",
      "ec",
      "pkey",
      "asn1parse",
      "ciphers",
      "dgst",
      "pkcs12",
      "pkcs7",
      "list",
      "sha256",
      "sha1",
      "md5",
      "base64",
      "errstr",
      "ocsp",
      "sess_id",
      "storeutl",
      "speed",
      "prime",
      "rand",
    ]),
  },
});

for (const [name, entry] of QUERY_PROGRAMS) entries.set(name, entry);

export const DATA_PROGRAMS: ReadonlyMap<string, ReadEntry> = entries;
