import { isIPv6 } from "node:net";
import { isAbsolute, normalize } from "node:path";
import { z } from "zod";
import { PROFILE_ID } from "../infra-protocol/index.js";

/**
 * The schema of one profile file (docs/infra-broker.md §Profiles): snake_case
 * keys, unknown keys refused at every level, bounds on every number. What
 * the file system must say (existing source roots, a trusted pin file) is
 * checked after this, in profiles.ts.
 */

/** Bounds of the per-profile limits: [minimum, default, maximum]. */
export const LIMIT_BOUNDS = {
  timeout_seconds: [1, 300, 86_400],
  output_bytes: [4096, 1024 * 1024, 64 * 1024 * 1024],
  transfer_bytes: [1, 1024 ** 3, 1024 ** 4],
  file_count: [1, 10_000, 1_000_000],
} as const;

/** At most this many source roots in one profile. */
const MAX_SOURCE_ROOTS = 32;

const HOST_NAME =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const USER_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,31}$/;
/** One component of a remote path: it reaches rrsync through a whitespace-split command line and its globbing. */
const REMOTE_COMPONENT = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;
/** Characters rsync's `-e` splitting or a shell-ish reader would treat specially. */
const ARGV_UNSAFE = /[\s"'\\`$]/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses.
const CONTROL = /[\x00-\x1f\x7f]/;

/** Problems of a local absolute path the operator names; [] when it is acceptable. */
function absolutePathProblems(path: string): string[] {
  if (CONTROL.test(path)) return ["contains a control character"];
  if (!isAbsolute(path)) return ["must be an absolute path"];
  if (path.split("/").includes("..")) return ["must not contain a '..' component"];
  if (path === "/") return ["must not be the root directory"];
  if (path.endsWith("/") || normalize(path) !== path) {
    return [`must be written in normal form (${normalize(path).replace(/(.)\/$/, "$1")})`];
  }
  return [];
}

/** Problems of the profile's remote root; [] when it is acceptable. */
export function remoteRootProblems(root: string): string[] {
  if (root === ".") return [];
  if (root.startsWith("/")) return ["must be relative to the receiver's rrsync directory (no leading '/')"];
  if (root.startsWith("-")) return ["must not start with '-'"];
  const parts = root.split("/");
  if (parts.includes("..")) return ["must not contain a '..' component"];
  if (root.length > 255) return ["is longer than 255 characters"];
  const bad = parts.find((part) => !REMOTE_COMPONENT.test(part));
  if (bad !== undefined) {
    return [
      `component ${JSON.stringify(bad)} is not a plain name (letters, digits, '.', '_', '-', not starting with '.' or '-')`,
    ];
  }
  return [];
}

function refinePath(problemsOf: (value: string) => string[]) {
  return (value: string, ctx: z.RefinementCtx) => {
    for (const message of problemsOf(value)) ctx.addIssue({ code: "custom", message });
  };
}

const limit = (name: keyof typeof LIMIT_BOUNDS) => {
  const [min, def, max] = LIMIT_BOUNDS[name];
  return z.number().int().min(min).max(max).default(def);
};

const principalId = z.number().int().min(0).max(4_294_967_294);

export const profileFileSchema = z
  .object({
    enabled: z.boolean().default(true),
    host: z
      .string()
      .max(253)
      .refine((h) => HOST_NAME.test(h) || isIPv6(h), {
        message: "must be a host name, an IPv4 address or an IPv6 address (without brackets)",
      }),
    port: z.number().int().min(1).max(65_535).default(22),
    user: z
      .string()
      .regex(USER_NAME, "must be a plain user name ([A-Za-z0-9._-], not starting with '.' or '-')"),
    source_roots: z
      .array(z.string().max(4096).superRefine(refinePath(absolutePathProblems)))
      .min(1)
      .max(MAX_SOURCE_ROOTS),
    remote_root: z.string().superRefine(refinePath(remoteRootProblems)),
    known_hosts: z
      .string()
      .max(4096)
      .superRefine(
        refinePath((p) => {
          const problems = absolutePathProblems(p);
          if (problems.length === 0 && ARGV_UNSAFE.test(p)) {
            problems.push(
              "must not contain whitespace, quotes, '\\', '`' or '$' (it is passed to rsync's -e)",
            );
          }
          return problems;
        }),
      ),
    credential: z.string().regex(PROFILE_ID, "must match [a-z0-9][a-z0-9_-]{0,63}"),
    limits: z
      .object({
        timeout_seconds: limit("timeout_seconds"),
        output_bytes: limit("output_bytes"),
        transfer_bytes: limit("transfer_bytes"),
        file_count: limit("file_count"),
      })
      .strict()
      .default({
        timeout_seconds: LIMIT_BOUNDS.timeout_seconds[1],
        output_bytes: LIMIT_BOUNDS.output_bytes[1],
        transfer_bytes: LIMIT_BOUNDS.transfer_bytes[1],
        file_count: LIMIT_BOUNDS.file_count[1],
      }),
    allowed_principals: z
      .object({
        uids: z.array(principalId).max(256).default([]),
        gids: z.array(principalId).max(256).default([]),
      })
      .strict()
      .refine((p) => p.uids.length + p.gids.length > 0, {
        message: "must name at least one uid or gid",
      }),
    approval: z.enum(["none", "consent"]),
    receiver: z.literal("rrsync"),
    require_dry_run: z.boolean().default(true),
  })
  .strict();

export type ProfileFile = z.infer<typeof profileFileSchema>;

/** One sentence per schema issue, each naming the key it is about. */
export function describeIssues(error: z.ZodError): string[] {
  return error.issues.map((issue) => {
    const where = issue.path.length === 0 ? "" : issue.path.map(String).join(".");
    if (issue.code === "unrecognized_keys") {
      const keys = issue.keys.map((k) => JSON.stringify(k)).join(", ");
      const scope = where === "" ? "" : ` in ${where}`;
      return `unknown key${issue.keys.length > 1 ? "s" : ""} ${keys}${scope}`;
    }
    return `${where === "" ? "the profile" : where}: ${issue.message}`;
  });
}

export { ARGV_UNSAFE };
