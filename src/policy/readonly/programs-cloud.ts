import type { Word } from "../shell/words.js";
import { subsOf, tablePart } from "./define.js";
import { operands } from "./programs-files.js";
import type { ReadEntry } from "./spec.js";

/** Cloud CLIs: the operation names say what they do; describe-, list- and get- are reads in the APIs themselves. */

const { entries, spec } = tablePart();

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
    // `aws s3 cp s3://bucket/key -` prints the object; to any other destination it writes a file.
    if (service === "s3")
      return (
        op === "ls" ||
        (op === "cp" &&
          ops.length === 4 &&
          ops[2]?.value.startsWith("s3://") === true &&
          ops[3]?.value === "-" &&
          !args.some((w) =>
            /^--(?:recursive|include|exclude|metadata|acl|grants|storage-class|sse)/.test(w.value),
          ))
      );
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

export const CLOUD_PROGRAMS: ReadonlyMap<string, ReadEntry> = entries;
