import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  canonicalIpForms,
  formatIpv6,
  parseInetAton,
  parseIpv6,
  splitHostList,
  widenHostTokens,
} from "./ip-widen.js";

describe("canonicalIpForms (docs/wire-contract.md §5.5 vectors)", () => {
  it.each([
    ["2130706433", ["127.0.0.1"]],
    ["0x7f000001", ["127.0.0.1"]],
    ["0x7f.0.0.1", ["127.0.0.1"]],
    ["0177.0.0.1", ["127.0.0.1"]],
    ["127.1", ["127.0.0.1"]],
    ["::ffff:127.0.0.1", ["::ffff:7f00:1", "127.0.0.1"]],
    ["2852039166", ["169.254.169.254"]],
    ["169.254.169.254", []],
    ["web01.example.com", []],
    ["localhost", []],
    ["22", []],
  ])("%s adds %j", (token, forms) => {
    expect(canonicalIpForms(token)).toEqual(forms);
  });

  it.each([
    ["[::1]", []],
    ["[0:0:0:0:0:0:0:1]", ["::1"]],
    ["::FFFF:A9FE:A9FE", ["::ffff:a9fe:a9fe", "169.254.169.254"]],
    ["2001:DB8:0:0:1:0:0:1", ["2001:db8::1:0:0:1"]],
    ["fe80::0001%eth0", ["fe80::1%eth0"]],
    ["0XA9FEA9FE", ["169.254.169.254"]],
    ["169.254.43518", ["169.254.169.254"]],
    ["017700000001", ["127.0.0.1"]],
    ["127.000.000.001", ["127.0.0.1"]],
    ["0x", ["0.0.0.0"]],
    ["65535", []],
    ["65536", ["0.1.0.0"]],
    ["4294967296", []],
    ["256.1.1.1", []],
    ["1.2.3.4.5", []],
    ["08.1.1.1", []],
    ["1..1", []],
    ["0x7g", []],
    ["reboot.example.com", []],
  ])("%s adds %j", (token, forms) => {
    expect(canonicalIpForms(token)).toEqual(forms);
  });

  it("looks at the part after user@, which is what gets dialled", () => {
    expect(canonicalIpForms("root@2130706433")).toEqual(["127.0.0.1"]);
    expect(canonicalIpForms("admin@[::ffff:a9fe:a9fe]")).toEqual(["169.254.169.254"]);
  });

  it("treats an absolute-name trailing dot like the address", () => {
    expect(canonicalIpForms("2130706433.")).toEqual(["127.0.0.1"]);
  });
});

describe("widenHostTokens", () => {
  it("appends the form after one space (the contract's probe vector)", () => {
    expect(widenHostTokens("2130706433", ["2130706433"])).toBe("2130706433 127.0.0.1");
  });

  it("appends both forms of an IPv4-mapped address", () => {
    expect(widenHostTokens("uptime\n::ffff:127.0.0.1", ["::ffff:127.0.0.1"])).toBe(
      "uptime\n::ffff:127.0.0.1 ::ffff:7f00:1 127.0.0.1",
    );
  });

  it("returns the text unchanged for host names and canonical addresses", () => {
    const text = "uptime\nweb01, 10.0.0.1, localhost";
    expect(widenHostTokens(text, ["web01", "10.0.0.1", "localhost"])).toBe(text);
  });

  it("does not repeat a form already present as a whole token", () => {
    expect(widenHostTokens("ping 127.0.0.1\n2130706433", ["2130706433"])).toBe("ping 127.0.0.1\n2130706433");
    expect(widenHostTokens("upload /a [::1]:/b", ["[::1]"])).toBe("upload /a [::1]:/b");
  });

  it("is not fooled by a bystander that merely contains the form", () => {
    const text = "echo 127.0.0.10\n2130706433";
    expect(widenHostTokens(text, ["2130706433"])).toBe(`${text} 127.0.0.1`);
  });

  it("adds each form once across hosts", () => {
    const text = "uptime\n2130706433, 0x7f000001, 127.1";
    expect(widenHostTokens(text, splitHostList("2130706433, 0x7f000001, 127.1"))).toBe(`${text} 127.0.0.1`);
  });

  it("stays linear on a large host list", () => {
    const hosts = Array.from({ length: 50_000 }, (_, i) => String(70_000 + i));
    const text = `uptime\n${hosts.join(",")}`;
    const started = performance.now();
    const widened = widenHostTokens(text, hosts);
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(widened.startsWith(`${text} 0.1.17.112 `)).toBe(true);
    expect(widened.split(" ")).toHaveLength(50_001);
  });
});

describe("splitHostList", () => {
  it("splits on commas and whitespace and drops empties", () => {
    expect(splitHostList(" h1, h2,,h3\th4\n h5 ,")).toEqual(["h1", "h2", "h3", "h4", "h5"]);
    expect(splitHostList("")).toEqual([]);
    expect(splitHostList(" , ")).toEqual([]);
  });
});

const uint32 = fc.nat({ max: 0xffffffff });
const quad = (v: number) => [v >>> 24, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff].join(".");

describe("inet_aton and IPv6 parsing agree with the WHATWG URL host parser", () => {
  it("decimal, hex and octal spellings of any address give its dotted quad", () => {
    fc.assert(
      fc.property(uint32, (v) => {
        expect(parseInetAton(String(v))).toBe(quad(v));
        expect(parseInetAton(`0x${v.toString(16)}`)).toBe(quad(v));
        expect(parseInetAton(`0${v.toString(8)}`)).toBe(quad(v));
      }),
    );
  });

  it("mixed 1-4 part spellings parse like the URL parser's IPv4 rules", () => {
    const part = fc.tuple(fc.nat({ max: 0xff }), fc.constantFrom("dec", "hex", "oct"));
    const spell = ([n, style]: [number, string]) =>
      style === "hex" ? `0x${n.toString(16)}` : style === "oct" ? `0${n.toString(8)}` : String(n);
    fc.assert(
      fc.property(fc.array(part, { minLength: 0, maxLength: 3 }), uint32, (head, last) => {
        const lastMax = 2 ** (8 * (4 - head.length)) - 1;
        const tail = last % (lastMax + 1);
        const text = [...head.map(spell), String(tail)].join(".");
        expect(parseInetAton(text)).toBe(new URL(`http://${text}/`).hostname);
      }),
    );
  });

  it("IPv6 text formats like the URL serializer (first longest zero run compressed)", () => {
    const hextet = fc.oneof(fc.constant(0), fc.constant(0), fc.nat({ max: 0xffff }));
    fc.assert(
      fc.property(fc.array(hextet, { minLength: 8, maxLength: 8 }), (hextets) => {
        const full = hextets.map((h) => h.toString(16).toUpperCase()).join(":");
        const parsed = parseIpv6(full);
        expect(parsed).not.toBeNull();
        if (parsed === null) return;
        expect(`[${formatIpv6(parsed)}]`).toBe(new URL(`http://[${full}]/`).hostname);
        expect(parseIpv6(formatIpv6(parsed))?.hextets).toEqual(hextets);
      }),
    );
  });

  it("rejects malformed IPv6 text", () => {
    for (const bad of [
      ":1:2:3:4:5:6:7",
      "1:2:3:4:5:6:7:",
      "1::2::3",
      "1:2:3:4:5:6:7:8:9",
      "12345::",
      "::1%",
      "1.2.3.4::",
    ]) {
      expect(parseIpv6(bad)).toBeNull();
    }
    expect(parseIpv6("1:2:3:4:5:6:7::")?.hextets).toEqual([1, 2, 3, 4, 5, 6, 7, 0]);
  });
});
