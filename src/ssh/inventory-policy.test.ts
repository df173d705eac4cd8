import { describe, expect, it } from "vitest";
import { createHostDirectory } from "./directory.js";
import { parseInventory, toListing } from "./inventory.js";
import { parseSshConfig } from "./ssh-config.js";

/** An inventory entry's `tags` and own `policy` (docs/policy.md, "Policy per host and per tag"). */
describe("inventory tags and policies", () => {
  it("takes an entry's tags and its own policy, and keeps the listing as it was", () => {
    const [web1, bare] = parseInventory(
      JSON.stringify({
        web1: {
          hostname: "10.0.0.5",
          tags: ["prod", "eu-west.1"],
          policy: { mode: "Readonly", deny: "^ssh_exec .*restart", consent: "on" },
        },
        bare: {},
      }),
      "inv.json",
    );
    expect(web1?.tags).toEqual(["prod", "eu-west.1"]);
    expect(web1?.policy).toMatchObject({ mode: "readonly", consent: true });
    expect(web1?.policy?.deny?.map((r) => r.source)).toEqual(["^ssh_exec .*restart"]);
    expect(Object.keys(toListing(web1!))).toEqual([
      "name",
      "hostname",
      "user",
      "port",
      "identity_file",
      "jump",
      "source",
    ]);
    expect([bare?.tags, bare?.policy]).toEqual([[], null]);
    const config = parseSshConfig("Host cfg\n  HostName 10.0.0.9\n", "/cfg");
    expect([config.specs[0]?.tags, config.specs[0]?.policy]).toEqual([[], null]);
    const directory = createHostDirectory({
      inventory: [],
      sshConfig: config,
      defaultMode: "accept-new",
      allowWeaker: false,
      home: "/home/op",
      localUser: "op",
      cwd: "/",
    });
    expect([directory.lookup("ops@10.0.0.7").tags, directory.lookup("ops@10.0.0.7").policy]).toEqual([
      [],
      null,
    ]);
  });

  it.each([
    [
      "tags that are not a list",
      '{"a": {"tags": "prod"}}',
      'entry "a": tags: tags must be a list of tag names',
    ],
    ["a tag that is not a string", '{"a": {"tags": [1]}}', 'entry "a": tags[0]: each tag must be a string'],
    [
      "a tag name with a space",
      '{"a": {"tags": ["prod", "eu west"]}}',
      'entry "a": tags[1]: tag name "eu west" must be 1..64 letters, digits and . _ -',
    ],
    [
      "a tag listed twice",
      '{"a": {"tags": ["prod", "prod"]}}',
      'entry "a": tags[1]: tag "prod" is listed twice',
    ],
    [
      "a bad mode in the policy",
      '{"a": {"policy": {"mode": "strict"}}}',
      'entry "a": policy.mode: mode must be open, guarded or readonly',
    ],
    [
      "a bad pattern in the policy",
      '{"a": {"policy": {"deny": ["ok", "(?P<x>y)"]}}}',
      'entry "a": policy.deny[1]: (?P<name>...) is Python syntax; write (?<name>...)',
    ],
    [
      "an unknown key in the policy",
      '{"a": {"policy": {"mode": "open", "tier": 2}}}',
      'entry "a": policy: unknown key "tier"; accepted keys are mode, deny, allow, consent, confirm_tier3, max_tier',
    ],
    [
      "a policy that is not a table",
      '{"a": {"policy": "readonly"}}',
      'entry "a": policy: a policy must be a table',
    ],
  ])("refuses %s, naming the entry and the field", (_label, text, expected) => {
    expect(() => parseInventory(text, "/etc/relay/inv.json")).toThrow(
      `RELAY_SHELL_INVENTORY: /etc/relay/inv.json: ${expected}`,
    );
  });

  it("names tags and policy among the accepted keys", () => {
    expect(() => parseInventory('{"a": {"tag": ["prod"]}}', "/inv.json")).toThrow(
      "accepted keys are hostname, host, user, port, identity_file, jump, proxyjump, known_hosts, tags, policy",
    );
  });
});
