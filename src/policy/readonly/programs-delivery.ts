import type { Word } from "../shell/words.js";
import { subsOf, tablePart } from "./define.js";
import { operands } from "./programs-files.js";
import type { ReadEntry, ReadSpec } from "./spec.js";

/**
 * Messaging and delivery: the brokers' admin tools (Kafka, NATS, RabbitMQ), the code forges'
 * CLIs (gh, glab), GitOps and infrastructure-as-code front-ends, and the web servers and proxies
 * in their reporting forms. A client that consumes messages is left out: it joins a group or
 * creates a consumer, and acknowledges what it reads. Options that point a client at another
 * client configuration (`--command-config`, `--config`, `--kubeconfig`) are refused.
 */

const { entries, spec } = tablePart();

/** One of the reporting modes is given, spelled out in full (an abbreviation is not proven). */
const given =
  (...names: string[]) =>
  (args: readonly Word[]): boolean =>
    args.some((w) => names.includes(w.value));

/** A Kafka tool, by its name with and without the `.sh` of the distribution's `bin/`. */
function kafka(name: string, s: ReadSpec | true): void {
  spec(name, s);
  spec(`${name}.sh`, s);
}

// Kafka's tools take abbreviated long options (`--del` is `--delete`), which `deny` matches.
// --command-config is a client configuration file: its settings name classes the client loads.
const CLIENT_CONFIG = ["--command-config"];
kafka("kafka-topics", {
  deny: [...CLIENT_CONFIG, "--create", "--alter", "--delete", "--delete-config"],
  check: given("--list", "--describe"),
});
// `--reset-offsets` without `--execute` only prints the offsets it would set (its default is a dry run).
const GROUPS: ReadSpec = {
  deny: [...CLIENT_CONFIG, "--delete", "--delete-offsets", "--execute", "--export"],
  check: given("--list", "--describe", "--reset-offsets"),
};
kafka("kafka-consumer-groups", GROUPS);
kafka("kafka-share-groups", GROUPS);
kafka("kafka-groups", { deny: CLIENT_CONFIG, check: given("--list") });
kafka("kafka-configs", {
  deny: [...CLIENT_CONFIG, "--alter", "--add-config", "--add-config-file", "--delete-config"],
  check: given("--describe"),
});
kafka("kafka-acls", { deny: [...CLIENT_CONFIG, "--add", "--remove"], check: given("--list") });
// --verify also removes the throttles of a finished reassignment; --generate only proposes one.
kafka("kafka-reassign-partitions", {
  deny: [...CLIENT_CONFIG, "--execute", "--cancel", "--verify", "--generate"],
  check: given("--list"),
});
kafka("kafka-log-dirs", { deny: CLIENT_CONFIG, check: given("--describe") });
kafka("kafka-client-metrics", {
  deny: [...CLIENT_CONFIG, "--alter", "--delete"],
  check: given("--list", "--describe"),
});
kafka("kafka-delegation-tokens", {
  deny: [...CLIENT_CONFIG, "--create", "--renew", "--expire"],
  check: given("--describe"),
});
kafka("kafka-broker-api-versions", { deny: CLIENT_CONFIG });
kafka("kafka-get-offsets", { deny: CLIENT_CONFIG });
// The tools with subcommands take the cluster's address before the subcommand.
const CLUSTER: ReadSpec = { valued: ["--bootstrap-server", "--bootstrap-controller"], deny: CLIENT_CONFIG };
kafka("kafka-features", {
  ...CLUSTER,
  subs: subsOf(["describe", "version-mapping", "feature-dependencies"]),
});
kafka("kafka-metadata-quorum", { ...CLUSTER, subs: subsOf(["describe"]) });
kafka("kafka-transactions", {
  ...CLUSTER,
  subs: subsOf(["list", "describe", "describe-producers", "find-hanging"]),
});
kafka("kafka-cluster", { ...CLUSTER, deny: ["--config", "-c"], subs: subsOf(["cluster-id"]) });
// `info` reads the log directories that the broker configuration given with --config names.
kafka("kafka-storage", { subs: subsOf(["info", "random-uuid", "version-mapping", "feature-dependencies"]) });
// Decoder classes are loaded by name: code the call does not show.
kafka("kafka-dump-log", { deny: ["--key-decoder-class", "--value-decoder-class"] });
kafka("kafka-jmx", true);

// NATS: requests to the JetStream and system APIs. Listing a bucket's keys or objects, viewing a
// stream and subscribing create a consumer or an interest on the server; they are not proven.
const NATS_VALUED = [
  "-s",
  "--server",
  "--user",
  "--password",
  "--creds",
  "--nkey",
  "--tlscert",
  "--tlskey",
  "--tlsca",
  "--context",
  "--timeout",
  "--js-domain",
  "--js-api-prefix",
  "--js-event-prefix",
  "--inbox-prefix",
  "--connection-name",
  "--socks-proxy",
  "--colors",
];
/** `nats kv ls` lists the buckets; `nats kv ls BUCKET` watches the bucket for its keys. */
const BUCKETS_ONLY: ReadSpec = { check: (args) => operands(args, NATS_VALUED).length === 0 };
const STREAM_READ: ReadSpec = { subs: subsOf(["ls", "list", "info", "report", "find", "subjects", "get"]) };
const CONSUMER_READ: ReadSpec = { subs: subsOf(["ls", "list", "info", "report"]) };
const KV_READ: ReadSpec = {
  subs: { ls: BUCKETS_ONLY, list: BUCKETS_ONLY, ...subsOf(["status", "info", "get"]) },
};
const OBJECT_READ: ReadSpec = { subs: { ls: BUCKETS_ONLY, list: BUCKETS_ONLY, info: true } };
spec("nats", {
  valued: NATS_VALUED,
  subs: {
    stream: STREAM_READ,
    str: STREAM_READ,
    consumer: CONSUMER_READ,
    con: CONSUMER_READ,
    kv: KV_READ,
    object: OBJECT_READ,
    obj: OBJECT_READ,
    server: {
      subs: {
        ...subsOf(["ls", "list", "info", "ping", "report"]),
        // `check request` sends a request a service acts on; the other checks read.
        check: {
          subs: subsOf(["connection", "stream", "consumer", "kv", "jetstream", "server", "meta", "message"]),
        },
      },
    },
    account: { subs: subsOf(["info", "report"]) },
    micro: { subs: subsOf(["ls", "list", "info", "stats", "ping"]) },
    context: { subs: subsOf(["ls", "list", "info"]) },
    rtt: true,
  },
});

// RabbitMQ's management CLI: `list` and `show`; -c points it at another configuration file.
spec("rabbitmqadmin", {
  valuedLetters: "HPVupUNdf",
  deny: ["-c", "--config"],
  subs: subsOf(["list", "show"]),
});

// Code forges. --web opens a browser (a program of the host's choosing). `gh api` reads with GET:
// a field or an input body makes it a POST.
const API_VALUED = ["-X", "--method", "-H", "--header", "-q", "--jq", "-t", "--template", "--hostname"];
const FORGE_API: ReadSpec = {
  valued: [...API_VALUED, "-p", "--preview", "--cache"],
  deny: ["-f", "-F", "--field", "--raw-field", "--input"],
  check: (args) => {
    const ops = operands(args, [...API_VALUED, "-p", "--preview", "--cache"]);
    if (ops.length !== 1 || ops[0]!.value === "graphql") return false;
    // Every method given (the last one wins) is GET or HEAD; -X may close a cluster (`-iX POST`).
    return args.every((w, i) => {
      const m = /^--method(?:=(.*))?$/.exec(w.value) ?? /^-[A-Za-z]*?X(.*)$/.exec(w.value);
      if (m === null) return true;
      return /^(?:GET|HEAD)$/i.test(m[1] || (args[i + 1]?.value ?? ""));
    });
  },
};
const lists = (...more: string[]) => subsOf(["list", "ls", ...more]);
spec("gh", {
  deny: ["-w", "--web"],
  subs: {
    pr: { subs: lists("view", "status", "diff", "checks") },
    issue: { subs: lists("view", "status") },
    run: { subs: lists("view", "watch") },
    workflow: { subs: lists("view") },
    repo: {
      subs: {
        ...lists("view"),
        "deploy-key": { subs: lists() },
        autolink: { subs: lists("view") },
        gitignore: { subs: lists("view") },
        license: { subs: lists("view") },
      },
    },
    release: { subs: lists("view") },
    gist: { subs: lists("view") },
    secret: { subs: lists() },
    variable: { subs: lists("get") },
    label: { subs: lists() },
    cache: { subs: lists() },
    ruleset: { subs: lists("view", "check") },
    project: { subs: lists("view", "field-list", "item-list") },
    org: { subs: lists() },
    codespace: { subs: lists() },
    cs: { subs: lists() },
    extension: { subs: lists() },
    ext: { subs: lists() },
    alias: { subs: lists() },
    "ssh-key": { subs: lists() },
    "gpg-key": { subs: lists() },
    config: { subs: lists("get") },
    auth: { subs: subsOf(["status"]) },
    search: true,
    status: true,
    api: FORGE_API,
  },
});
const CI_READ: ReadSpec = { subs: lists("status", "trace", "get") };
spec("glab", {
  deny: ["-w", "--web"],
  subs: {
    mr: { subs: lists("view", "diff", "issues", "approvers") },
    issue: { subs: lists("view") },
    ci: CI_READ,
    pipe: CI_READ,
    pipeline: CI_READ,
    repo: { subs: lists("view", "contributors", "search") },
    release: { subs: lists("view") },
    label: { subs: lists() },
    variable: { subs: lists("get") },
    schedule: { subs: lists() },
    incident: { subs: lists("view") },
    "deploy-key": { subs: lists() },
    "ssh-key": { subs: lists() },
    config: { subs: subsOf(["get"]) },
    auth: { subs: subsOf(["status"]) },
    api: FORGE_API,
  },
});

// GitOps. --local renders with config-management plugins (programs); a refresh makes the server
// reconcile; --config and --kubeconfig point the client at another configuration.
spec("argocd", {
  deny: ["--local", "--refresh", "--hard-refresh", "--config", "--kubeconfig"],
  subs: {
    app: { subs: subsOf(["get", "list", "history", "diff", "manifests", "resources", "logs"]) },
    appset: { subs: subsOf(["get", "list"]) },
    cluster: { subs: subsOf(["list", "get"]) },
    repo: { subs: subsOf(["list", "get"]) },
    repocreds: { subs: subsOf(["list"]) },
    proj: {
      subs: {
        ...subsOf(["list", "get"]),
        role: { subs: subsOf(["list", "get"]) },
        windows: { subs: subsOf(["list"]) },
      },
    },
    cert: { subs: subsOf(["list"]) },
    gpg: { subs: subsOf(["list", "get"]) },
    account: { subs: subsOf(["get-user-info", "list", "get", "can-i"]) },
    version: true,
  },
});
// `flux build` and `flux diff` of a kustomization render it in process, without plugins; `flux
// build artifact` writes a file.
const FLUX_RENDER: ReadSpec = { subs: subsOf(["kustomization", "ks"]) };
spec("flux", {
  deny: ["--kubeconfig"],
  subs: {
    ...subsOf(["get", "stats", "logs", "tree", "version", "check", "events", "trace", "export"]),
    diff: { subs: subsOf(["kustomization", "ks", "artifact"]) },
    build: FLUX_RENDER,
  },
});

// Pulumi: the state a backend holds, read without running the program. --tracing and --profiling
// write files; `stack export --file` writes the state to one.
spec("pulumi", {
  valued: ["-C", "--cwd", "-s", "--stack", "--color", "-v", "--verbose"],
  deny: ["--tracing", "--profiling", "--memprofilerate"],
  subs: {
    stack: {
      deny: ["--file"],
      subs: { ...subsOf(["ls", "output", "history", "export"]), tag: { subs: subsOf(["ls", "get"]) } },
    },
    config: { deny: ["--config-file"], subs: subsOf(["get"]) },
    plugin: { subs: subsOf(["ls"]) },
    whoami: true,
  },
});

// Packer: a template validated or inspected without running its builders or provisioners. Go's
// flag package takes one or two dashes; data sources are only evaluated when asked for.
spec("packer", {
  subs: {
    validate: { words: true, deny: ["-evaluate-datasources", "--evaluate-datasources"] },
    inspect: true,
    // fmt rewrites the files unless it only checks them or is told not to write.
    fmt: { check: given("-check", "--check", "-write=false", "--write=false") },
    plugins: { subs: subsOf(["installed", "required"]) },
  },
});

// Web servers and proxies, asked about their configuration rather than to serve it.
spec("caddy", {
  deny: ["--envfile"],
  subs: {
    ...subsOf(["validate", "adapt", "list-modules", "build-info", "environ", "completion"]),
    fmt: { deny: ["--overwrite", "-w"] },
  },
});
// traefik alone starts the proxy.
spec("traefik", { bare: false, subs: subsOf(["healthcheck"]) });
// Varnish's log readers: -w writes a file (-a appends to it), -D daemonises and -P writes a pid file.
const VARNISH_LOG: ReadSpec = { valuedLetters: "FfgiIkLnNPqrRtTwxX", deny: ["-w", "-a", "-A", "-D", "-P"] };
spec("varnishlog", VARNISH_LOG);
spec("varnishncsa", VARNISH_LOG);
spec("varnishtop", true);
spec("varnishhist", true);

export const DELIVERY_PROGRAMS: ReadonlyMap<string, ReadEntry> = entries;
