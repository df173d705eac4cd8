import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { registryHarness } from "../../test/helpers/registry.js";
import { createAuditLog } from "../audit/index.js";
import { loadSettings } from "../config/index.js";
import { systemClock } from "../core/index.js";
import { createCallCounter } from "../metrics/index.js";
import { type Classifier, createClassifier } from "../policy/index.js";
import { createRelay, type Gate, type Relay } from "../runner/index.js";
import { createSessionTools } from "./sessions.js";

const { setup, cleanup } = registryHarness();
afterEach(cleanup);

describe("session_send through the runner", () => {
  let dir: string;
  let classifier: Classifier;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "relay-session-lines-"));
    classifier = await createClassifier();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function relayWith(env: Record<string, string>, gates: Gate[] = []) {
    const auditPath = join(dir, `audit-${Math.random().toString(16).slice(2)}.jsonl`);
    const settings = loadSettings({ RELAY_SHELL_AUDIT_PATH: auditPath, ...env }, { cwd: dir });
    const audit = createAuditLog(
      { path: auditPath, format: "jsonl", chain: false, stderrEcho: false },
      { clock: systemClock },
    );
    const harness = setup();
    const tools = createSessionTools({ settings, sessions: harness.registry, baseEnv: {} });
    const relay = createRelay({ settings, classifier, audit, metrics: createCallCounter(), tools, gates });
    return { relay, ...harness };
  }
  const ctx = (clientId = "") => ({ requestId: "1", clientId, signal: new AbortController().signal });

  it("judges the pieces of one line together and writes nothing for a refused piece", async () => {
    const { relay, open } = relayWith({ RELAY_SHELL_POLICY_MODE: "guarded" });
    const s = await open();
    const piece = await relay.run("session_send", { session_id: s.id, data: "r", enter: false }, ctx());
    expect(piece.text).toBe(`sent 1 bytes to ${s.id}`);
    const refused = await relay.run("session_send", { session_id: s.id, data: "m -rf /tmp/x" }, ctx());
    expect(refused.structured).toMatchObject({ tier: 3, denied: true, basis_part: "rm -rf /tmp/x" });
    expect(s.transport.written).toEqual(["r"]);
  });

  it("judges another client's send without the owner's pending line", async () => {
    const { relay, open } = relayWith({});
    const s = await open("A");
    await relay.run(
      "session_send",
      { session_id: s.id, data: "rm -rf /tmp/secret-", enter: false },
      ctx("A"),
    );
    const foreign = await relay.run("session_send", { session_id: s.id, data: "x" }, ctx("B"));
    expect(foreign.text).toBe(`[ERROR: SessionError: session ${s.id} belongs to another client]`);
    expect(foreign.structured).toMatchObject({ tier: 1, basis_part: "" });
  });

  it("refuses a send whose line moved on while a gate held it", async () => {
    const held: { relay?: Relay; id?: string } = {};
    // The gate lets a second send through while the first one waits (for a human's approval, say).
    const gate: Gate = {
      name: "slow",
      async check(call) {
        if ((call.args as { data: string }).data === "ls" && held.relay && held.id) {
          const id = held.id;
          delete held.id;
          await held.relay.run(
            "session_send",
            { session_id: id, data: "rm -rf /tmp/y; ", enter: false },
            ctx(),
          );
        }
        return { kind: "proceed" };
      },
    };
    const { relay, open } = relayWith({}, [gate]);
    const s = await open();
    held.relay = relay;
    held.id = s.id;
    const r = await relay.run("session_send", { session_id: s.id, data: "ls" }, ctx());
    expect(r.text).toBe(
      `[ERROR: SessionError: the line pending on ${s.id} changed while this send waited; nothing was sent]`,
    );
    // Only the piece that went through reached the terminal; `ls` did not complete its line.
    expect(s.transport.written).toEqual(["rm -rf /tmp/y; "]);
  });
});
