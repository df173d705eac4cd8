import { describe, expect, it } from "vitest";
import { createFanoutResults, type KeptFanout } from "./fanout-results.js";

function counterIds() {
  let n = 0;
  return { hex: () => (n++).toString(16).padStart(12, "0"), token: () => "" };
}

const fanout = (id: string, owner: string, output = "ok\n"): KeptFanout => ({
  id,
  owner,
  command: "true",
  timeout: 30,
  runs: [
    {
      host: "h1",
      result: { exitCode: 0, timedOut: false, output, droppedBytes: 0, totalBytes: output.length },
    },
  ],
});

describe("fan-out results", () => {
  it("gives ids that name the relay, and returns a kept fan-out to its owner only", () => {
    const results = createFanoutResults("relay-a", { ids: counterIds() });
    const id = results.newId();
    expect(id).toBe("fo-000000000000@relay-a");
    results.keep(fanout(id, "alice"));
    expect(results.get(id, "alice").runs).toHaveLength(1);
    expect(() => results.get(id, "bob")).toThrow(/unknown fan-out: fo-000000000000@relay-a/);
  });

  it("lets any caller read a fan-out no client owns", () => {
    const results = createFanoutResults("", { ids: counterIds() });
    const id = results.newId();
    expect(id).toBe("fo-000000000000");
    results.keep(fanout(id, ""));
    expect(results.get(id, "anyone").id).toBe(id);
  });

  it("names the relay that holds another relay's fan-out, and refuses a malformed id", () => {
    const results = createFanoutResults("relay-a");
    expect(() => results.get("fo-0123456789ab@relay-b", "")).toThrow(
      /ran on relay relay-b, not on this one \(relay-a\)/,
    );
    expect(() => results.get("../../etc", "")).toThrow(/not a fan-out id/);
  });

  it("forgets a fan-out after an hour", () => {
    let now = 0;
    const results = createFanoutResults("", { ids: counterIds(), now: () => now });
    const id = results.newId();
    results.keep(fanout(id, ""));
    now = 59 * 60 * 1000;
    expect(results.get(id, "").id).toBe(id);
    now = 60 * 60 * 1000 + 1;
    expect(() => results.get(id, "")).toThrow(/unknown fan-out/);
  });

  it("keeps the 16 latest fan-outs and drops the oldest past the byte bound", () => {
    const results = createFanoutResults("", { ids: counterIds() });
    const ids = Array.from({ length: 17 }, () => results.newId());
    for (const id of ids) results.keep(fanout(id, ""));
    expect(() => results.get(ids[0] ?? "", "")).toThrow(/unknown fan-out/);
    expect(results.get(ids[16] ?? "", "").id).toBe(ids[16]);
    // Three outputs of 12 Mi characters (24 MiB each as kept) pass the 64 MiB bound: the first goes.
    const big = "x".repeat(12 * 1024 * 1024);
    const heavy = [results.newId(), results.newId(), results.newId()];
    for (const id of heavy) results.keep(fanout(id, "", big));
    expect(() => results.get(heavy[0] ?? "", "")).toThrow(/unknown fan-out/);
    expect(results.get(heavy[2] ?? "", "").id).toBe(heavy[2]);
  });
});
