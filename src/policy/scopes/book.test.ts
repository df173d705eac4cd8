import { describe, expect, it } from "vitest";
import type { PolicyFile, PolicyLayer } from "../../config/index.js";
import { RelayError } from "../../core/index.js";
import { createPolicyBook, type PolicyBookOptions, type PolicyHost } from "./index.js";

const SETTINGS: PolicyBookOptions["settings"] = {
  policyMode: "guarded",
  policyDeny: /^shell_exec reboot/iu,
  policyAllow: /^shell_exec systemctl /iu,
  consent: false,
  consentLeaseMode: "manual",
  confirmTier3: false,
};

const POLICY_PATH = "/etc/relay/policy.toml";
const INVENTORY_PATH = "/etc/relay/inventory.json";

function file(defaults: PolicyLayer | null, tags: Record<string, PolicyLayer> = {}): PolicyFile {
  return { path: POLICY_PATH, default: defaults, tags: new Map(Object.entries(tags)) };
}

function host(name: string, fields: Partial<PolicyHost> = {}): PolicyHost {
  return { name, hostname: name, port: null, tags: [], policy: null, ...fields };
}

function book(options: Partial<PolicyBookOptions> = {}) {
  return createPolicyBook({
    settings: SETTINGS,
    file: null,
    inventoryPath: INVENTORY_PATH,
    hosts: [],
    ...options,
  });
}

const labels = (patterns: readonly { label: string }[]) => patterns.map((p) => p.label);

describe("the policy book without a file or inventory policies", () => {
  it("gives the settings exactly as the default, to every host", () => {
    const b = book({ hosts: [host("web1", { tags: ["prod"] })] });
    expect(b.default).toEqual({
      name: "default",
      source: "settings",
      mode: "guarded",
      deny: [{ regex: SETTINGS.policyDeny, label: "RELAY_SHELL_POLICY_DENY" }],
      allow: [{ regex: SETTINGS.policyAllow, label: "RELAY_SHELL_POLICY_ALLOW" }],
      consent: false,
      consentLeaseMode: "manual",
      confirmTier3: false,
      maxTier: 3,
    });
    expect(b.default.deny[0]?.regex).toBe(SETTINGS.policyDeny);
    expect(b.default.allow[0]?.regex).toBe(SETTINGS.policyAllow);
    expect(b.forHost({ alias: "web1", hostname: "web1", port: 22 })).toBe(b.default);
    expect(b.forHost({ alias: null, hostname: "elsewhere", port: 22 })).toBe(b.default);
    expect(b.all()).toEqual([b.default]);
  });

  it("has empty lists where the settings name none", () => {
    const b = book({ settings: { ...SETTINGS, policyDeny: null, policyAllow: null } });
    expect(b.default.deny).toEqual([]);
    expect(b.default.allow).toEqual([]);
  });
});

describe("precedence: settings, the file's default, the host's tag, the host's own policy", () => {
  const layered = () =>
    book({
      file: file(
        { mode: "open", deny: [/a/u, /b/u], consent: true },
        { prod: { mode: "readonly", deny: [/c/u], confirmTier3: true } },
      ),
      hosts: [
        host("web1", {
          tags: ["eu", "prod"],
          policy: { deny: [/d/u], maxTier: 1, allow: [/e/u] },
        }),
      ],
    });

  it("lets the most specific layer that sets a field decide it, field by field", () => {
    const web1 = layered().forHost({ alias: "web1", hostname: "web1", port: 22 });
    expect(web1).toMatchObject({
      name: "host:web1",
      source: INVENTORY_PATH,
      mode: "readonly", // the tag
      consent: true, // the file's default
      consentLeaseMode: "manual", // the settings
      confirmTier3: true, // the tag
      maxTier: 1, // the host
    });
  });

  it("adds up the deny patterns of all four layers, least specific first, each labelled", () => {
    const web1 = layered().forHost({ alias: "web1", hostname: "web1", port: 22 });
    expect(labels(web1.deny)).toEqual([
      "RELAY_SHELL_POLICY_DENY",
      "deny[0] of default",
      "deny[1] of default",
      "deny[0] of tag:prod",
      "deny[0] of host:web1",
    ]);
    expect(web1.deny.map((p) => p.regex.source)).toEqual(["^shell_exec reboot", "a", "b", "c", "d"]);
  });

  it("replaces the allow list where a layer names one, and keeps the less specific one where none does", () => {
    const b = layered();
    expect(labels(b.default.allow)).toEqual(["RELAY_SHELL_POLICY_ALLOW"]);
    const web1 = b.forHost({ alias: "web1", hostname: "web1", port: 22 });
    expect(labels(web1.allow)).toEqual(["allow[0] of host:web1"]);
    const cleared = book({ file: file({ allow: [] }) });
    expect(cleared.default.allow).toEqual([]);
  });

  it("names the most specific layer that applied, and where it was written", () => {
    const b = book({
      file: file({ mode: "guarded" }, { prod: { mode: "readonly" }, unused: { mode: "open" } }),
      hosts: [host("db1", { tags: ["prod"] }), host("dev1", { tags: ["dev"] })],
    });
    expect([b.default.name, b.default.source]).toEqual(["default", POLICY_PATH]);
    const db1 = b.forHost({ alias: "db1", hostname: "db1", port: 22 });
    expect([db1.name, db1.source]).toEqual(["tag:prod", POLICY_PATH]);
    // A tag with no policy in the file is just a word: the default applies.
    expect(b.forHost({ alias: "dev1", hostname: "dev1", port: 22 })).toBe(b.default);
    // Every tag policy is in force, used or not; the default comes first.
    expect(b.all().map((p) => p.name)).toEqual(["default", "tag:prod", "tag:unused"]);
  });

  it("shares one policy among the hosts of a tag and lists each host's own once", () => {
    const b = book({
      file: file(null, { prod: { mode: "readonly" } }),
      hosts: [
        host("a", { tags: ["prod"] }),
        host("b", { tags: ["prod"] }),
        host("c", { policy: { mode: "open" } }),
      ],
    });
    expect(b.forHost({ alias: "a", hostname: "a", port: 22 })).toBe(
      b.forHost({ alias: "b", hostname: "b", port: 22 }),
    );
    expect(b.all().map((p) => [p.name, p.source])).toEqual([
      ["default", "settings"],
      ["tag:prod", POLICY_PATH],
      ["host:c", INVENTORY_PATH],
    ]);
  });

  it("refuses a host with two tags that each have a policy, naming the host and the tags", () => {
    const build = () =>
      book({
        file: file(null, { prod: { mode: "readonly" }, staging: { mode: "guarded" } }),
        hosts: [host("web1", { tags: ["prod", "staging"], policy: { mode: "readonly" } })],
      });
    expect(build).toThrow(RelayError);
    expect(build).toThrow(
      `RELAY_SHELL_INVENTORY: ${INVENTORY_PATH}: entry "web1": tags prod, staging each have a policy in ${POLICY_PATH}`,
    );
  });
});

describe("a host named by its address", () => {
  const prod = () =>
    book({
      file: file(null, { prod: { mode: "readonly" } }),
      hosts: [host("web1", { hostname: "10.0.0.5", tags: ["prod"] })],
    });

  it.each([
    ["the alias", { alias: "web1", hostname: "10.0.0.5", port: 22 }],
    ["user@address, resolved", { alias: null, hostname: "10.0.0.5", port: 22 }],
    ["an IPv4-mapped IPv6 address", { alias: null, hostname: "::ffff:10.0.0.5", port: 22 }],
    ["the mapped address in hex and brackets", { alias: null, hostname: "[::FFFF:A00:5]", port: 22 }],
    ["an inet_aton spelling", { alias: null, hostname: "10.5", port: 22 }],
  ])("gets the entry's policy through %s", (_label, ref) => {
    expect(prod().forHost(ref).name).toBe("tag:prod");
  });

  it("matches a host name in any case and without its trailing dot", () => {
    const b = book({
      file: file(null, { prod: { mode: "readonly" } }),
      hosts: [host("db1", { hostname: "DB1.example.org.", tags: ["prod"] })],
    });
    expect(b.forHost({ alias: null, hostname: "db1.EXAMPLE.org", port: 22 }).name).toBe("tag:prod");
  });

  it("gets the default on another port, or on another address", () => {
    const b = prod();
    expect(b.forHost({ alias: null, hostname: "10.0.0.5", port: 2222 })).toBe(b.default);
    expect(b.forHost({ alias: null, hostname: "10.0.0.6", port: 22 })).toBe(b.default);
  });

  it("matches the entry's own port, or where the SSH layer says it dials", () => {
    const hosts = [host("web1", { hostname: "10.0.0.5", port: 2222, tags: ["prod"] })];
    const own = book({ file: file(null, { prod: { mode: "readonly" } }), hosts });
    expect(own.forHost({ alias: null, hostname: "10.0.0.5", port: 2222 }).name).toBe("tag:prod");
    expect(own.forHost({ alias: null, hostname: "10.0.0.5", port: 22 })).toBe(own.default);
    const resolved = book({
      file: file(null, { prod: { mode: "readonly" } }),
      hosts: [host("web1", { tags: ["prod"] })],
      resolve: (alias) => (alias === "web1" ? { hostname: "192.0.2.7", port: 2200 } : null),
    });
    expect(resolved.forHost({ alias: null, hostname: "192.0.2.7", port: 2200 }).name).toBe("tag:prod");
  });

  it("refuses two entries that reach one address under different policies", () => {
    const build = () =>
      book({
        file: file(null, { prod: { mode: "readonly" } }),
        hosts: [
          host("web1", { hostname: "10.0.0.5", tags: ["prod"] }),
          host("web1-raw", { hostname: "::ffff:10.0.0.5", port: 22 }),
        ],
      });
    expect(build).toThrow(
      `RELAY_SHELL_INVENTORY: ${INVENTORY_PATH}: entries "web1" and "web1-raw" both reach ::ffff:10.0.0.5 port 22 under different policies (tag:prod, default)`,
    );
  });

  it("accepts two entries that reach one address under the same policy", () => {
    const b = book({
      file: file(null, { prod: { mode: "readonly" } }),
      hosts: [
        host("web1", { hostname: "10.0.0.5", tags: ["prod"] }),
        host("web1-admin", { hostname: "10.0.0.5", tags: ["prod", "admin"] }),
        host("web1-alt", { hostname: "10.0.0.5", port: 2222 }),
      ],
    });
    expect(b.forHost({ alias: null, hostname: "10.0.0.5", port: 22 }).name).toBe("tag:prod");
  });
});
