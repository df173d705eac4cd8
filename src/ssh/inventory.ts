import { z } from "zod";
import { type KnownHostsMode, type PolicyLayer, parsePolicyLayer, tagNameProblem } from "../config/index.js";
import { RelayError } from "../core/index.js";
import { FILE_TOO_LARGE, readBoundedFile } from "../files/index.js";
import { isWritableHostName } from "./known-hosts.js";

/** Where a host spec came from (`explicit`: a name that is in neither file, dialled as given). */
type HostSource = "inventory" | "ssh_config" | "explicit";

/** One resolved host entry, as listed by ssh_hosts and the inventory resources. */
export interface HostSpec {
  name: string;
  hostname: string;
  user: string | null;
  port: number | null;
  identityFile: string | null;
  jump: string | null;
  source: HostSource;
  /** The entry's own host-key mode (inventory only); null = the server default. */
  knownHosts: KnownHostsMode | null;
  /** Tags naming the policy file's tag policies (inventory only; docs/policy.md). */
  tags: readonly string[];
  /** The entry's own policy, its most specific layer (inventory only); null = none. */
  policy: PolicyLayer | null;
}

/** The listing shape of docs/wire-contract.md §2.4 (`ssh_hosts`) and §3.1. */
export interface HostListing {
  name: string;
  hostname: string;
  user: string | null;
  port: number | null;
  identity_file: string | null;
  jump: string | null;
  source: HostSource;
}

export function toListing(spec: HostSpec): HostListing {
  return {
    name: spec.name,
    hostname: spec.hostname,
    user: spec.user,
    port: spec.port,
    identity_file: spec.identityFile,
    jump: spec.jump,
    source: spec.source,
  };
}

const MAX_INVENTORY_BYTES = 8 * 1024 * 1024;
const MAX_ENTRIES = 10_000;

const ALIAS = /^[A-Za-z0-9._@:%+\-[\]]+$/;
const NO_SPACE_OR_CONTROL = /^[^\s\p{Cc}]+$/u;

const text = (what: string) =>
  z
    .string({ error: `${what} must be a string` })
    .min(1, `${what} must not be empty`)
    .max(1024, `${what} is longer than 1024 characters`);

const hostName = text("hostname").refine(
  (v) => isWritableHostName(v.replace(/^\[(.*)\]$/, "$1")),
  "hostname may contain only letters, digits and . _ - : % (an IPv6 address may be in brackets)",
);

const PORT_MESSAGE = "port must be an integer 1..65535 or a string of digits";
const portValue = z.union(
  [
    z.number().int(PORT_MESSAGE).min(1, PORT_MESSAGE).max(65535, PORT_MESSAGE),
    z
      .string()
      .regex(/^[0-9]{1,5}$/, PORT_MESSAGE)
      .transform(Number)
      .refine((n) => n >= 1 && n <= 65535, PORT_MESSAGE),
  ],
  { error: PORT_MESSAGE },
);

const modeValue = z
  .string({ error: "known_hosts must be a string" })
  .transform((v) => v.trim().toLowerCase())
  .pipe(
    z.enum(["strict", "accept-new", "ignore"], { error: "known_hosts must be strict, accept-new or ignore" }),
  );

const tagList = z
  .array(z.string({ error: "each tag must be a string" }), { error: "tags must be a list of tag names" })
  .superRefine((tags, ctx) => {
    tags.forEach((tag, i) => {
      const problem = tagNameProblem(tag);
      if (problem !== null) ctx.addIssue({ code: "custom", message: problem, path: [i] });
      else if (tags.indexOf(tag) !== i) {
        ctx.addIssue({ code: "custom", message: `tag ${JSON.stringify(tag)} is listed twice`, path: [i] });
      }
    });
  });

const ENTRY_KEYS = "hostname, host, user, port, identity_file, jump, proxyjump, known_hosts, tags, policy";

const entrySchema = z.strictObject(
  {
    hostname: hostName.optional(),
    host: hostName.optional(),
    user: text("user")
      .regex(NO_SPACE_OR_CONTROL, "user must not contain spaces or control characters")
      .optional(),
    port: portValue.optional(),
    identity_file: text("identity_file").optional(),
    identityfile: text("identityfile").optional(),
    jump: text("jump").regex(NO_SPACE_OR_CONTROL, "jump must not contain spaces").optional(),
    proxyjump: text("proxyjump").regex(NO_SPACE_OR_CONTROL, "proxyjump must not contain spaces").optional(),
    known_hosts: modeValue.optional(),
    tags: tagList.optional(),
    // Checked by parsePolicyLayer, which names the field within the policy.
    policy: z.unknown().optional(),
  },
  { error: (issue) => (issue.code === "invalid_type" ? "each entry must be a JSON object" : undefined) },
);

function readInventoryText(path: string): string {
  let data: Buffer | null;
  try {
    data = readBoundedFile(path, { maxBytes: MAX_INVENTORY_BYTES, what: "" });
  } catch (err) {
    if (err instanceof RelayError && err.code === FILE_TOO_LARGE) {
      throw new RelayError("InventoryError", `RELAY_SHELL_INVENTORY: ${err.message}`, { cause: err });
    }
    throw cannotRead(path, err);
  }
  if (data === null) {
    throw new RelayError(
      "InventoryError",
      `RELAY_SHELL_INVENTORY: cannot read ${path}: the file does not exist`,
    );
  }
  return data.toString("utf8");
}

function cannotRead(path: string, err: unknown): RelayError {
  return new RelayError(
    "InventoryError",
    `RELAY_SHELL_INVENTORY: cannot read ${path}: ${(err as Error).message}`,
    {
      cause: err,
    },
  );
}

/** `tags[1]`: a field of an entry, indexes in brackets. */
function fieldName(path: readonly PropertyKey[]): string {
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : `${i > 0 ? "." : ""}${String(p)}`)).join("");
}

function fail(path: string, problem: string): never {
  throw new RelayError("InventoryError", `RELAY_SHELL_INVENTORY: ${path}: ${problem}`);
}

/**
 * Parse the inventory JSON (docs/wire-contract.md §11.3). Unlike the Python release, any
 * problem is an error that names the entry and the field: a typo that is
 * silently dropped would make the relay dial the literal alias instead.
 */
export function parseInventory(textValue: string, path: string): HostSpec[] {
  let data: unknown;
  try {
    data = JSON.parse(textValue);
  } catch (err) {
    fail(path, `invalid JSON (${(err as Error).message})`);
  }
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    fail(
      path,
      'the top level must be a JSON object keyed by host alias, e.g. {"web1": {"hostname": "10.0.0.5"}}',
    );
  }
  const aliases = Object.keys(data);
  if (aliases.length > MAX_ENTRIES)
    fail(path, `${aliases.length} entries exceed the limit of ${MAX_ENTRIES}`);
  const specs: HostSpec[] = [];
  for (const alias of aliases) {
    if (!ALIAS.test(alias) || alias.length > 255) {
      fail(path, `alias ${JSON.stringify(alias.slice(0, 80))} must be 1..255 characters without spaces`);
    }
    const parsed = entrySchema.safeParse((data as Record<string, unknown>)[alias]);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = issue && issue.path.length > 0 ? `${fieldName(issue.path)}: ` : "";
      const message =
        issue?.code === "unrecognized_keys"
          ? `${issue.message}; accepted keys are ${ENTRY_KEYS}`
          : (issue?.message ?? "invalid entry");
      fail(path, `entry ${JSON.stringify(alias)}: ${field}${message}`);
    }
    const e = parsed.data;
    const hostname = e.hostname ?? e.host ?? alias;
    if (!isWritableHostName(hostname.replace(/^\[(.*)\]$/, "$1"))) {
      fail(path, `entry ${JSON.stringify(alias)}: no hostname given and the alias is not a usable host name`);
    }
    const policy = e.policy === undefined ? null : parsePolicyLayer(e.policy, "policy");
    if (policy?.ok === false) fail(path, `entry ${JSON.stringify(alias)}: ${policy.error}`);
    specs.push({
      name: alias,
      hostname,
      user: e.user ?? null,
      port: e.port ?? null,
      identityFile: e.identity_file ?? e.identityfile ?? null,
      jump: e.jump ?? e.proxyjump ?? null,
      source: "inventory",
      knownHosts: e.known_hosts ?? null,
      tags: e.tags ?? [],
      policy: policy?.value ?? null,
    });
  }
  return specs;
}

/** Load RELAY_SHELL_INVENTORY; "" means no inventory. Throws a RelayError naming the problem. */
export function loadInventory(path: string): HostSpec[] {
  if (path === "") return [];
  return parseInventory(readInventoryText(path), path);
}
