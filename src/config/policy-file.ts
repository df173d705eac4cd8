import { lstatSync } from "node:fs";
import { extname } from "node:path";
import { parse as parseToml } from "smol-toml";
import { RelayError } from "../core/index.js";
import {
  FILE_TOO_LARGE,
  readBoundedFile,
  type TrustAnchorOwner,
  trustAnchorProblems,
} from "../files/index.js";
import { type PolicyLayer, parsePolicyLayer, tagNameProblem } from "./policy-layer.js";

/** The operator's policy file (RELAY_SHELL_POLICY_FILE), validated: its `default` layer and one layer per tag. */
export interface PolicyFile {
  /** The file's path, the `source` of the policies it writes. */
  path: string;
  /** The `default` table; null when the file has none (the settings alone are the default). */
  default: PolicyLayer | null;
  /** Tag name → its policy, in the order the file writes them. */
  tags: ReadonlyMap<string, PolicyLayer>;
}

const SETTING = "RELAY_SHELL_POLICY_FILE";
const MAX_POLICY_FILE_BYTES = 1024 * 1024;
const TOP_KEYS = ["default", "tags"] as const;

/** What makes a file unsafe to trust; trustAnchorProblems, or in a test what it says for another account. */
type TrustCheck = (path: string, owner: TrustAnchorOwner) => string[];

function refuse(problem: string, cause?: unknown): never {
  throw new RelayError("ConfigError", `${SETTING}: ${problem}`, cause === undefined ? undefined : { cause });
}

function isTable(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** The file's format, told by its name: the operator says which grammar it is written in. */
function formatOf(path: string): "toml" | "json" {
  const ext = extname(path).toLowerCase();
  if (ext === ".toml") return "toml";
  if (ext === ".json") return "json";
  return refuse(`${path}: the name must end in .toml or .json, which says how the file is written`);
}

/**
 * Refuse a file the relay could change: the relay must never be able to
 * write the policy it obeys, or a command it admits could loosen it for the
 * next one. As root it can write every file, so as root a policy file is
 * always refused (files/trust-anchor.ts says so in its problems).
 */
function checkTrusted(path: string, owner: TrustAnchorOwner, problemsOf: TrustCheck): void {
  try {
    lstatSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") refuse(`cannot read ${path}: the file does not exist`);
  }
  const problems = problemsOf(path, owner);
  if (problems.length > 0) {
    refuse(`${path}: the relay must not be able to change the policy it obeys: ${problems.join("; ")}`);
  }
}

function readText(path: string): string {
  let data: Buffer | null;
  try {
    data = readBoundedFile(path, { maxBytes: MAX_POLICY_FILE_BYTES, what: "" });
  } catch (err) {
    if (err instanceof RelayError && err.code === FILE_TOO_LARGE) refuse(err.message, err);
    return refuse(`cannot read ${path}: ${(err as Error).message}`, err);
  }
  if (data === null) refuse(`cannot read ${path}: the file does not exist`);
  return data.toString("utf8");
}

/** The document as a plain value, or the parser's first line and where it stopped. */
function parseDocument(text: string, format: "toml" | "json", path: string): unknown {
  try {
    if (format === "json") return JSON.parse(text);
    return parseToml(text);
  } catch (err) {
    const { message, line, column } = err as Error & { line?: number; column?: number };
    const first = (message.split("\n")[0] ?? "").replace(/^Invalid TOML document: /, "");
    const where = line === undefined ? "" : ` at line ${line}, column ${column ?? 0}`;
    return refuse(`${path}: invalid ${format.toUpperCase()}${where}: ${first}`, err);
  }
}

function layerAt(value: unknown, field: string, path: string): PolicyLayer {
  const layer = parsePolicyLayer(value, field);
  if (!layer.ok) refuse(`${path}: ${layer.error}`);
  return layer.value;
}

function parseTags(value: unknown, path: string): Map<string, PolicyLayer> {
  if (!isTable(value)) refuse(`${path}: tags: tags must be a table of tag name → policy`);
  const tags = new Map<string, PolicyLayer>();
  for (const [name, layer] of Object.entries(value)) {
    const problem = tagNameProblem(name);
    if (problem !== null) refuse(`${path}: tags: ${problem}`);
    tags.set(name, layerAt(layer, `tags.${name}`, path));
  }
  return tags;
}

/** Validate a parsed policy document; throws a RelayError naming the file and the field. */
function parsePolicyDocument(document: unknown, path: string): PolicyFile {
  if (!isTable(document)) refuse(`${path}: the top level must be a table with default and tags`);
  const unknown = Object.keys(document).filter((key) => !(TOP_KEYS as readonly string[]).includes(key));
  if (unknown.length > 0) {
    const names = unknown.map((k) => JSON.stringify(k.slice(0, 80))).join(", ");
    refuse(`${path}: unknown key${unknown.length > 1 ? "s" : ""} ${names}; accepted keys are default, tags`);
  }
  return {
    path,
    default: Object.hasOwn(document, "default") ? layerAt(document.default, "default", path) : null,
    tags: Object.hasOwn(document, "tags") ? parseTags(document.tags, path) : new Map(),
  };
}

/**
 * Load RELAY_SHELL_POLICY_FILE (docs/policy.md, "Policy per host and per
 * tag"); "" means none. TOML or JSON by the name's ending, at most 1 MiB,
 * read only when the relay (`owner`) could not have written it. Every
 * problem is a RelayError naming the file and the field: the relay does not
 * start on a policy it cannot read as written.
 */
export function loadPolicyFile(
  path: string,
  owner: TrustAnchorOwner,
  problemsOf: TrustCheck = trustAnchorProblems,
): PolicyFile | null {
  if (path === "") return null;
  const format = formatOf(path);
  checkTrusted(path, owner, problemsOf);
  return parsePolicyDocument(parseDocument(readText(path), format, path), path);
}
