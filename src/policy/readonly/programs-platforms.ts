import type { Word } from "../words.js";
import { operands } from "./programs-files.js";
import type { ReadEntry, ReadSpec } from "./spec.js";
import { psqlReadsOnly, redisReadsOnly, sqlArgReadsOnly } from "./sql.js";

/**
 * Platforms an operator inspects from a shell: version control, containers,
 * Kubernetes, cloud CLIs, databases and HTTP. Where a program reads a
 * configuration that can name code to run (a kubeconfig's exec plugin, a
 * Docker config's credential helper, a repository's core.fsmonitor), an
 * option or variable that points it at another configuration is not proven;
 * the configuration already in place is the operator's (docs/policy.md).
 */

const platforms = new Map<string, ReadEntry>();
const spec = (name: string, s: ReadSpec | true) => platforms.set(name, s);
const subsOf = (names: readonly string[]): Record<string, true> =>
  Object.fromEntries(names.map((n) => [n, true as const]));

// git: -c and --config-env set configuration (an fsmonitor, a pager, an editor); --exec-path picks the programs.
const GIT_LIST_ONLY = (listing: readonly string[], valued: readonly string[]) => (args: readonly Word[]) =>
  operands(args, valued).length === 0 || args.some((w) => listing.includes(w.value));
const GIT_OUTPUT = ["--output", "--ext-diff", "-O", "--open-files-in-pager"];
spec("git", {
  valued: ["-C", "--git-dir", "--work-tree", "--namespace"],
  deny: ["-c", "--config-env", "--exec-path", "--upload-pack", "--receive-pack"],
  bare: true,
  subs: {
    status: { deny: ["--porcelain=v3"] },
    log: { deny: GIT_OUTPUT },
    show: { deny: GIT_OUTPUT },
    diff: { deny: GIT_OUTPUT },
    blame: true,
    annotate: true,
    shortlog: true,
    whatchanged: { deny: GIT_OUTPUT },
    "rev-parse": true,
    "rev-list": true,
    describe: true,
    "ls-files": true,
    "ls-tree": true,
    "ls-remote": { deny: ["--upload-pack"] },
    "cat-file": true,
    "name-rev": true,
    "merge-base": true,
    "count-objects": true,
    "show-ref": true,
    "show-branch": true,
    "for-each-ref": true,
    "verify-commit": true,
    "verify-tag": true,
    "check-ignore": true,
    "check-attr": true,
    "diff-tree": true,
    "diff-files": true,
    "diff-index": true,
    cherry: true,
    range_diff: true,
    grep: { deny: ["-O", "--open-files-in-pager"] },
    branch: {
      deny: [
        "-d",
        "-D",
        "--delete",
        "-m",
        "-M",
        "--move",
        "-c",
        "-C",
        "--copy",
        "-f",
        "--force",
        "-u",
        "--set-upstream-to",
        "--unset-upstream",
        "--edit-description",
        "-t",
        "--track",
      ],
      valued: ["--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format"],
      check: GIT_LIST_ONLY(
        ["-l", "--list"],
        ["--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format"],
      ),
    },
    tag: {
      deny: [
        "-d",
        "--delete",
        "-a",
        "--annotate",
        "-s",
        "--sign",
        "-u",
        "--local-user",
        "-f",
        "--force",
        "-m",
        "--message",
        "-F",
        "--file",
        "-e",
        "--edit",
      ],
      valued: [
        "--contains",
        "--no-contains",
        "--merged",
        "--no-merged",
        "--points-at",
        "--sort",
        "--format",
        "-n",
      ],
      check: GIT_LIST_ONLY(
        ["-l", "--list", "-v", "--verify"],
        ["--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format"],
      ),
    },
    remote: { bare: true, subs: { show: true, "get-url": true, "-v": true } },
    stash: { subs: subsOf(["list", "show"]) },
    // `git reflog REF` is `git reflog show REF`; expire and delete are the writing forms.
    reflog: {
      valued: ["-n", "--max-count"],
      check: (args) => !args.some((w) => w.value === "expire" || w.value === "delete"),
    },
    bisect: { subs: subsOf(["log"]) },
    notes: { subs: subsOf(["list", "show"]) },
    rerere: { subs: subsOf(["status", "diff", "remaining"]) },
    "check-ref-format": true,
    worktree: { subs: subsOf(["list"]) },
    submodule: { bare: true, subs: subsOf(["status", "summary"]) },
    config: {
      deny: [
        "--unset",
        "--unset-all",
        "--add",
        "--replace-all",
        "--rename-section",
        "--remove-section",
        "-e",
        "--edit",
        "--file",
        "-f",
        "--blob",
      ],
      check: (args) =>
        args.some((w) =>
          /^(?:-l|--list|--get|--get-all|--get-regexp|--get-urlmatch|--get-color|--get-colorbool)$/.test(
            w.value,
          ),
        ) || operands(args, ["--type", "--default"]).length === 1,
    },
    fsck: { deny: ["--lost-found"] },
  },
});

// Containers. --config points the client at another credential-helper configuration.
const CONTAINER_CLI: ReadSpec = {
  valued: ["-H", "--host", "--context", "-c", "-l", "--log-level", "--tlscacert", "--tlscert", "--tlskey"],
  deny: ["--config"],
  subs: {
    ps: true,
    images: true,
    inspect: true,
    logs: true,
    stats: true,
    top: true,
    port: true,
    diff: true,
    history: true,
    info: true,
    version: true,
    events: true,
    search: true,
    container: { subs: subsOf(["ls", "list", "ps", "inspect", "logs", "top", "port", "diff", "stats"]) },
    image: { subs: subsOf(["ls", "list", "inspect", "history"]) },
    volume: { subs: subsOf(["ls", "list", "inspect"]) },
    network: { subs: subsOf(["ls", "list", "inspect"]) },
    node: { subs: subsOf(["ls", "list", "inspect", "ps"]) },
    service: { subs: subsOf(["ls", "list", "inspect", "logs", "ps"]) },
    stack: { subs: subsOf(["ls", "list", "ps", "services"]) },
    secret: { subs: subsOf(["ls", "list", "inspect"]) },
    config: { subs: subsOf(["ls", "list", "inspect"]) },
    context: { subs: subsOf(["ls", "list", "inspect", "show"]) },
    system: { subs: subsOf(["df", "info", "events"]) },
    buildx: { subs: subsOf(["ls", "inspect", "du", "version"]) },
    compose: {
      valued: ["-f", "--file", "-p", "--project-name", "--profile", "--env-file", "--project-directory"],
      subs: subsOf(["ps", "logs", "config", "ls", "images", "top", "version", "port", "events"]),
    },
    pod: { subs: subsOf(["ps", "ls", "list", "inspect", "logs", "top", "stats"]) },
    machine: { subs: subsOf(["ls", "list", "inspect", "info"]) },
  },
};
spec("docker", CONTAINER_CLI);
spec("podman", CONTAINER_CLI);
spec("nerdctl", CONTAINER_CLI);
spec("docker-compose", CONTAINER_CLI.subs!.compose as ReadSpec);
spec("crictl", {
  valued: ["-r", "--runtime-endpoint", "-i", "--image-endpoint", "-t", "--timeout", "--config"],
  deny: ["--config"],
  subs: subsOf([
    "ps",
    "pods",
    "images",
    "img",
    "inspect",
    "inspectp",
    "inspecti",
    "logs",
    "stats",
    "statsp",
    "info",
    "version",
    "imagefsinfo",
  ]),
});
spec("ctr", {
  valued: ["-n", "--namespace", "-a", "--address"],
  subs: {
    containers: { subs: subsOf(["ls", "list", "info"]) },
    c: { subs: subsOf(["ls", "list", "info"]) },
    images: { subs: subsOf(["ls", "list", "check"]) },
    i: { subs: subsOf(["ls", "list", "check"]) },
    tasks: { subs: subsOf(["ls", "list", "ps", "metrics"]) },
    t: { subs: subsOf(["ls", "list", "ps", "metrics"]) },
    namespaces: { subs: subsOf(["ls", "list"]) },
    version: true,
    plugins: { subs: subsOf(["ls", "list"]) },
  },
});

// Kubernetes. -o is an output format here, not a file; --kubeconfig points at another exec plugin.
const KUBE_VALUED = [
  "-n",
  "--namespace",
  "-l",
  "--selector",
  "-o",
  "--output",
  "--context",
  "--cluster",
  "--user",
  "-c",
  "--container",
  "-f",
  "--filename",
  "--since",
  "--tail",
  "-L",
  "--label-columns",
  "--field-selector",
  "--sort-by",
  "--template",
  "-s",
  "--server",
  "--as",
  "--as-group",
  "--request-timeout",
  "--since-time",
  "--limit-bytes",
  "--max-log-requests",
  "--subresource",
  "--chunk-size",
  "--show-kind",
  "--raw",
  "--for",
  "--timeout",
  "--containers",
];
const KUBE_DENY = ["--kubeconfig", "--token", "--exec", "--output-directory", "--local"];
spec("kubectl", {
  valued: KUBE_VALUED,
  deny: KUBE_DENY,
  subs: {
    get: true,
    describe: true,
    logs: true,
    log: true,
    top: { subs: subsOf(["node", "nodes", "no", "pod", "pods", "po"]) },
    explain: true,
    "api-resources": true,
    "api-versions": true,
    version: true,
    "cluster-info": true,
    events: true,
    auth: { subs: subsOf(["can-i", "whoami"]) },
    config: { subs: subsOf(["view", "get-contexts", "current-context", "get-clusters", "get-users"]) },
    rollout: { subs: subsOf(["status", "history"]) },
    wait: true,
    kustomize: true,
    plugin: { subs: subsOf(["list"]) },
    completion: true,
    certificate: { check: () => false },
  },
});
platforms.set("oc", platforms.get("kubectl")!);
spec("helm", {
  valued: [
    "-n",
    "--namespace",
    "--kube-context",
    "-o",
    "--output",
    "--revision",
    "--max",
    "-f",
    "--values",
    "--set",
    "--version",
    "--repo",
  ],
  deny: ["--kubeconfig", "--post-renderer", "--post-renderer-args"],
  subs: {
    list: true,
    ls: true,
    status: true,
    history: true,
    hist: true,
    get: { subs: subsOf(["all", "values", "manifest", "notes", "hooks", "metadata"]) },
    show: { subs: subsOf(["all", "chart", "values", "readme", "crds"]) },
    inspect: true,
    search: { subs: subsOf(["repo", "hub"]) },
    version: true,
    env: true,
    template: true,
    lint: true,
    verify: true,
    dependency: { subs: subsOf(["list", "ls"]) },
    dep: { subs: subsOf(["list", "ls"]) },
    repo: { subs: subsOf(["list", "ls"]) },
    plugin: { subs: subsOf(["list", "ls"]) },
  },
});
spec("k9s", { check: () => false });
spec("kubectx", {
  check: (args) => args.length === 0 || args.every((w) => w.value === "-c" || w.value === "--current"),
});
spec("kubens", {
  check: (args) => args.length === 0 || args.every((w) => w.value === "-c" || w.value === "--current"),
});
spec("etcdctl", {
  valued: ["--endpoints", "--cacert", "--cert", "--key", "-w", "--write-out", "--user"],
  subs: {
    get: true,
    endpoint: { subs: subsOf(["health", "status", "hashkv"]) },
    member: { subs: subsOf(["list"]) },
    alarm: { subs: subsOf(["list"]) },
    version: true,
    check: { subs: subsOf(["perf", "datascale"]) },
    user: { subs: subsOf(["list", "get"]) },
    role: { subs: subsOf(["list", "get"]) },
    lease: { subs: subsOf(["list", "timetolive"]) },
    watch: true,
  },
});

// Cloud CLIs: the operation names say what they do; describe-/list-/get- are reads in the APIs themselves.
const AWS_READ_OPERATION =
  /^(?:describe|list|get|head|lookup|search|batch-get|scan|query|filter|simulate|validate|estimate|preview|wait|tail)(?:-|$)/;
const AWS_VALUED = [
  "--region",
  "--profile",
  "--output",
  "--query",
  "--endpoint-url",
  "--color",
  "--cli-read-timeout",
  "--cli-connect-timeout",
  "--ca-bundle",
];
spec("aws", {
  valued: AWS_VALUED,
  deny: ["--cli-input-json", "--cli-input-yaml", "--generate-cli-skeleton"],
  check: (args) => {
    const ops = operands(args, AWS_VALUED);
    const service = ops[0]?.value;
    const op = ops[1]?.value;
    if (service === undefined || op === undefined) return service === "help";
    if (service === "s3") return op === "ls";
    if (service === "configure") return op === "list" || op === "get" || op === "list-profiles";
    if (/^get-(?:login|password|token)/.test(op) && service !== "ecr") return false;
    return AWS_READ_OPERATION.test(op);
  },
});
const GCLOUD_READ = new Set([
  "list",
  "ls",
  "describe",
  "get-iam-policy",
  "get-value",
  "read",
  "info",
  "version",
  "list-tags",
  "list-grantable-roles",
  "get-ancestors",
  "get-ancestors-iam-policy",
  "tail",
  "get-server-config",
  "list-usable",
  "search-all-resources",
  "print-access-token-info",
]);
const CLOUD_ACTS =
  /^(?:ssh|scp|connect|connect-to-serial-port|start-iap-tunnel|run|exec|execute|deploy|submit|create|delete|update|set|add|remove|start|stop|reset|resize|patch|apply|import|export|restore|clone|promote|failover|rollback|invoke|call|login|configure|init|get-credentials)(?:-|$)/;
function cloudPath(read: (w: string) => boolean, valued: readonly string[]) {
  return (args: readonly Word[]) => {
    const ops = operands(args, valued);
    for (const [i, w] of ops.entries()) {
      if (w.dynamic || i > 5) return false;
      if (read(w.value)) return true;
      if (CLOUD_ACTS.test(w.value)) return false;
    }
    return false;
  };
}
const GCLOUD_VALUED = [
  "--project",
  "--zone",
  "--region",
  "--format",
  "--filter",
  "--limit",
  "--sort-by",
  "--location",
  "--cluster",
  "--configuration",
  "--account",
  "--flatten",
  "--page-size",
  "--verbosity",
];
spec("gcloud", {
  valued: GCLOUD_VALUED,
  deny: ["--impersonate-service-account", "--access-token-file", "--flags-file"],
  check: cloudPath((w) => GCLOUD_READ.has(w), GCLOUD_VALUED),
});
const AZ_VALUED = [
  "-g",
  "--resource-group",
  "-n",
  "--name",
  "-o",
  "--output",
  "--query",
  "--subscription",
  "-l",
  "--location",
];
spec("az", {
  valued: AZ_VALUED,
  check: cloudPath(
    (w) => w === "list" || w === "show" || w === "version" || /^(?:list|show|get)-/.test(w),
    AZ_VALUED,
  ),
});
spec("doctl", {
  check: cloudPath((w) => w === "list" || w === "get" || w === "ls", ["-o", "--output", "--context", "-t"]),
});
spec("terraform", {
  valued: ["-chdir"],
  subs: {
    show: true,
    output: true,
    version: true,
    providers: true,
    state: { subs: subsOf(["list", "show", "pull"]) },
    workspace: { subs: subsOf(["list", "show"]) },
    graph: true,
    validate: true,
    fmt: {
      check: (args) =>
        args.some((w) => w.value === "-check" || w.value === "-diff") &&
        !args.some((w) => w.value === "-write=true"),
    },
  },
});

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
platforms.set("mariadb", platforms.get("mysql")!);
spec("sqlite3", {
  words: true,
  deny: ["-init", "-cmd", "-A", "-append", "-deserialize", "-zip"],
  check: (args) => {
    const ops = operands(args, ["-separator", "-newline", "-nullvalue", "-cmd", "-init"]);
    return ops.length === 2 && sqlArgReadsOnly([ops[1]!], []);
  },
});
spec("redis-cli", {
  deny: ["--rdb", "--functions-rdb", "--pipe", "--eval", "-x", "--replica", "--slave", "--cluster"],
  valued: [
    "-h",
    "-p",
    "-a",
    "-n",
    "-u",
    "--user",
    "--pass",
    "--askpass",
    "-s",
    "-r",
    "-i",
    "--tls",
    "--cacert",
    "--cert",
    "--key",
    "--sni",
  ],
  check: redisReadsOnly,
});
spec("mongosh", { check: () => false });

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
  subs: subsOf([
    "x509",
    "s_client",
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
});

export const PLATFORM_PROGRAMS: ReadonlyMap<string, ReadEntry> = platforms;
