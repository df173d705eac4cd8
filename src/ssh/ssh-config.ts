import { statSync } from "node:fs";
import { type Line, parse } from "ssh-config";
import { readBoundedFile } from "../files/index.js";
import type { HostSpec } from "./inventory.js";
import { patternListMatches } from "./known-hosts.js";

/** The ssh_config options the relay honours when it dials (docs/wire-contract.md §11.4). */
interface SshConfigOptions {
  hostname?: string;
  user?: string;
  port?: number;
  identityFiles: string[];
  proxyJump?: string;
}

export interface SshConfigFile {
  /** The file's path when it exists and was read, else null. */
  path: string | null;
  /** Non-wildcard Host aliases in file order, de-duplicated and sorted. */
  aliases: string[];
  /** One listing entry per alias, from the values inside its own Host blocks. */
  specs: HostSpec[];
  /** Options for a host as the dial sees them: every matching Host block plus the global lines. */
  compute(host: string): SshConfigOptions;
}

const MAX_CONFIG_BYTES = 4 * 1024 * 1024;
const KEYS = new Set(["hostname", "user", "port", "identityfile", "proxyjump"]);

interface Block {
  /** null = the global lines before the first Host. */
  patterns: string[] | null;
  directives: Array<{ key: string; value: string }>;
}

function valueText(value: unknown): string {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) {
    return value
      .map((v) =>
        typeof v === "object" && v !== null && "val" in v ? String((v as { val: unknown }).val) : "",
      )
      .join(" ");
  }
  return "";
}

function valueList(value: unknown): string[] {
  if (typeof value === "string") return value.split(/\s+/).filter((v) => v !== "");
  if (Array.isArray(value)) {
    return value
      .map((v) =>
        typeof v === "object" && v !== null && "val" in v ? String((v as { val: unknown }).val) : "",
      )
      .filter((v) => v !== "");
  }
  return [];
}

/**
 * The package parses; evaluation is ours. Its own `compute()` would run
 * `Match exec` commands and `nslookup` for CanonicalizeHostName, and a config
 * file must never make the relay start processes. `Match` and `Include` are
 * not interpreted (their blocks never apply), as the contract says for the
 * lister.
 */
function toBlocks(lines: readonly Line[]): Block[] {
  const global: Block = { patterns: null, directives: [] };
  const blocks: Block[] = [global];
  for (const line of lines) {
    if (line.type !== 1) continue;
    const param = line.param.toLowerCase();
    if (param === "host" || param === "match") {
      const patterns = param === "host" ? valueList(line.value).map((p) => p.toLowerCase()) : [];
      const block: Block = { patterns: param === "host" ? patterns : [], directives: [] };
      const inner = "config" in line ? (line.config as readonly Line[]) : [];
      for (const sub of inner) {
        if (sub.type !== 1) continue;
        const key = sub.param.toLowerCase();
        if (KEYS.has(key)) block.directives.push({ key, value: valueText(sub.value).trim() });
      }
      blocks.push(block);
      continue;
    }
    if (KEYS.has(param)) global.directives.push({ key: param, value: valueText(line.value).trim() });
  }
  return blocks;
}

/** The file's text, or null when there is none to read; a file over the bound is an error. */
function readConfigText(path: string): string | null {
  try {
    // Only a regular file is a config (`/dev/null` is the usual way to say "none").
    if (!statSync(path, { throwIfNoEntry: false })?.isFile()) return null;
    return (
      readBoundedFile(path, { maxBytes: MAX_CONFIG_BYTES, what: "ssh_config file" })?.toString("utf8") ?? null
    );
  } catch (err) {
    // A missing ssh_config is normal (docs/wire-contract.md §4.8); an unreadable one is treated the same.
    if ((err as NodeJS.ErrnoException).code === "EACCES") return null;
    throw err;
  }
}

function isWildcard(alias: string): boolean {
  return /[*?!]/.test(alias);
}

function apply(into: SshConfigOptions, key: string, value: string): void {
  if (value === "") return;
  switch (key) {
    case "identityfile":
      into.identityFiles.push(value);
      return;
    case "hostname":
      into.hostname ??= value;
      return;
    case "user":
      into.user ??= value;
      return;
    case "port":
      // A non-numeric Port is ignored, as the contract says for the lister.
      if (into.port === undefined && /^[0-9]{1,5}$/.test(value)) {
        const port = Number(value);
        if (port >= 1 && port <= 65535) into.port = port;
      }
      return;
    case "proxyjump":
      into.proxyJump ??= value;
      return;
  }
}

/** `%h` in HostName is the name that was looked up; `%%` a literal percent. */
function expandHostName(value: string, host: string): string {
  return value.replace(/%([%h])/g, (_m, c: string) => (c === "h" ? host : "%"));
}

export function parseSshConfig(text: string, path: string | null): SshConfigFile {
  const blocks = toBlocks(parse(text));

  const compute = (host: string): SshConfigOptions => {
    const name = host.toLowerCase();
    const options: SshConfigOptions = { identityFiles: [] };
    for (const block of blocks) {
      if (block.patterns !== null && !patternListMatches(block.patterns, name)) continue;
      for (const { key, value } of block.directives) apply(options, key, value);
    }
    if (options.hostname !== undefined) options.hostname = expandHostName(options.hostname, host);
    return options;
  };

  const aliases: string[] = [];
  for (const block of blocks) {
    for (const alias of block.patterns ?? []) {
      if (!isWildcard(alias) && !aliases.includes(alias)) aliases.push(alias);
    }
  }
  aliases.sort();

  const specs = aliases.map((alias): HostSpec => {
    const own: SshConfigOptions = { identityFiles: [] };
    for (const block of blocks) {
      if (!block.patterns?.includes(alias)) continue;
      for (const { key, value } of block.directives) apply(own, key, value);
    }
    return {
      name: alias,
      hostname: own.hostname === undefined ? alias : expandHostName(own.hostname, alias),
      user: own.user ?? null,
      port: own.port ?? null,
      identityFile: own.identityFiles[0] ?? null,
      jump: own.proxyJump ?? null,
      source: "ssh_config",
      knownHosts: null,
      tags: [],
      policy: null,
    };
  });

  return { path, aliases, specs, compute };
}

/** Read the ssh_config at `path`; a missing file is an empty config. */
export function loadSshConfig(path: string): SshConfigFile {
  const text = path === "" ? null : readConfigText(path);
  if (text === null) return parseSshConfig("", null);
  return parseSshConfig(text, path);
}
