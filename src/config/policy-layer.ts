import { z } from "zod";
import { fail, ok, type Result, type Tier } from "../core/index.js";
import { compilePolicyRegex } from "./regex.js";
import type { ConsentLeaseMode, PolicyMode } from "./types.js";

/**
 * One layer of policy as an operator wrote it: the settings (the default
 * policy), the policy file's `default`, a tag's policy, or an inventory
 * entry's own `policy`. Every field is optional: a layer sets only what it
 * names, and the most specific layer that names a field decides it, except
 * `deny`, whose patterns add up over every layer (docs/policy.md).
 * Patterns are already compiled and checked like RELAY_SHELL_POLICY_DENY.
 */
export interface PolicyLayer {
  mode?: PolicyMode;
  /** Each searched like RELAY_SHELL_POLICY_DENY; they add to the less specific layers' patterns. */
  deny?: readonly RegExp[];
  /** Each searched like RELAY_SHELL_POLICY_ALLOW; a layer that names it replaces the allow list. */
  allow?: readonly RegExp[];
  /** Signed consent on or off for the calls this layer governs. */
  consent?: boolean;
  consentLeaseMode?: ConsentLeaseMode;
  confirmTier3?: boolean;
  /** The highest tier admitted at all, whatever the mode says. */
  maxTier?: Tier;
}

const MODES = ["open", "guarded", "readonly"] as const;
const LEASE_MODES = ["manual", "window", "session"] as const;
const LAYER_KEYS = ["mode", "deny", "allow", "consent", "confirm_tier3", "max_tier"] as const;
const CONSENT_KEYS = ["enabled", "lease_mode"] as const;

const TAG_NAME = /^[A-Za-z0-9._-]{1,64}$/;

/** Why `name` cannot name a tag (in the policy file or an inventory entry's `tags`), or null when it can. */
export function tagNameProblem(name: string): string | null {
  return TAG_NAME.test(name)
    ? null
    : `tag name ${JSON.stringify(name.slice(0, 80))} must be 1..64 letters, digits and . _ -`;
}

/** A word of a closed list, in any case and with blanks around it, like RELAY_SHELL_POLICY_MODE. */
function word<const T extends string>(values: readonly T[], message: string) {
  return z
    .string({ error: message })
    .transform((v) => v.trim().toLowerCase())
    .pipe(z.enum(values, { error: message }));
}

function unknownKeys(keys: readonly string[], accepted: readonly string[]): string {
  const names = keys.map((k) => JSON.stringify(k.slice(0, 80))).join(", ");
  return `unknown key${keys.length > 1 ? "s" : ""} ${names}; accepted keys are ${accepted.join(", ")}`;
}

/**
 * One pattern, compiled like RELAY_SHELL_POLICY_DENY. An empty one is refused: the setting's ""
 * means "no list", but as a pattern it would match every call.
 */
const pattern = z.string({ error: "each pattern must be a string" }).transform((source, ctx) => {
  const compiled =
    source === "" ? fail("an empty pattern would match every call") : compilePolicyRegex(source);
  if (compiled.ok) return compiled.value;
  ctx.addIssue({ code: "custom", message: compiled.error });
  return z.NEVER;
});

/** A string is a list of one, so its problem is named `deny[0]` like the label its pattern gets. */
const patterns = (field: string) =>
  z.preprocess(
    (v) => (typeof v === "string" ? [v] : v),
    z.array(pattern, { error: `${field} must be a string or a list of strings` }),
  );

const consentTable = z.strictObject({
  enabled: z.boolean({ error: "enabled must be true or false" }).optional(),
  lease_mode: word(LEASE_MODES, "lease_mode must be manual, window or session").optional(),
});

const CONSENT_MESSAGE = 'consent must be true, false, "on", "off" or a table { enabled, lease_mode }';

const consentScalar = z.union(
  [z.boolean(), word(["on", "off"], CONSENT_MESSAGE).transform((v) => v === "on")],
  {
    error: CONSENT_MESSAGE,
  },
);

interface ConsentValue {
  enabled?: boolean | undefined;
  lease_mode?: ConsentLeaseMode | undefined;
}

/** `consent`: a switch, or a table that may also name the lease mode; each form keeps its own messages. */
const consentValue = z.unknown().transform((value, ctx): ConsentValue => {
  const table = value !== null && typeof value === "object" && !Array.isArray(value);
  if (!table) {
    const scalar = consentScalar.safeParse(value);
    if (scalar.success) return { enabled: scalar.data };
    ctx.addIssue({ code: "custom", message: CONSENT_MESSAGE });
    return z.NEVER;
  }
  const parsed = consentTable.safeParse(value);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues) {
    const message =
      issue.code === "unrecognized_keys" ? unknownKeys(issue.keys, CONSENT_KEYS) : issue.message;
    ctx.addIssue({ code: "custom", message, path: issue.path });
  }
  return z.NEVER;
});

const MAX_TIER_MESSAGE = "max_tier must be an integer 0..3";

const layerSchema = z.strictObject(
  {
    mode: word(MODES, "mode must be open, guarded or readonly").optional(),
    deny: patterns("deny").optional(),
    allow: patterns("allow").optional(),
    consent: consentValue.optional(),
    confirm_tier3: z.boolean({ error: "confirm_tier3 must be true or false" }).optional(),
    max_tier: z
      .number({ error: MAX_TIER_MESSAGE })
      .int(MAX_TIER_MESSAGE)
      .min(0, MAX_TIER_MESSAGE)
      .max(3, MAX_TIER_MESSAGE)
      .optional(),
  },
  { error: (issue) => (issue.code === "invalid_type" ? "a policy must be a table of settings" : undefined) },
);

/** `tags.prod.deny[1]`: the issue's path under `field`, indexes in brackets. */
function fieldName(field: string, path: readonly PropertyKey[]): string {
  let name = field;
  for (const part of path) {
    if (typeof part === "number") name += `[${part}]`;
    else name += name === "" ? String(part) : `.${String(part)}`;
  }
  return name;
}

/**
 * Validate one layer as written in the policy file or an inventory entry
 * (docs/policy.md, "Policy per host and per tag"): strict, every pattern
 * compiled. `field` is where the layer sits (`tags.prod`, `policy`), so a
 * problem reads `tags.prod.mode: mode must be open, guarded or readonly`.
 */
export function parsePolicyLayer(value: unknown, field = ""): Result<PolicyLayer, string> {
  const parsed = layerSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    if (issue === undefined) return fail(`${field || "policy"}: invalid policy`);
    const message = issue.code === "unrecognized_keys" ? unknownKeys(issue.keys, LAYER_KEYS) : issue.message;
    const name = fieldName(field, issue.path);
    return fail(name === "" ? message : `${name}: ${message}`);
  }
  const { mode, deny, allow, consent, confirm_tier3, max_tier } = parsed.data;
  const layer: PolicyLayer = {
    ...(mode !== undefined && { mode }),
    ...(deny !== undefined && { deny }),
    ...(allow !== undefined && { allow }),
    ...(consent?.enabled !== undefined && { consent: consent.enabled }),
    ...(consent?.lease_mode !== undefined && { consentLeaseMode: consent.lease_mode }),
    ...(confirm_tier3 !== undefined && { confirmTier3: confirm_tier3 }),
    ...(max_tier !== undefined && { maxTier: max_tier as Tier }),
  };
  return ok(layer);
}
