import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BrokerHandle, startLineBroker } from "../../test/helpers/infra-broker.js";
import type { ConsentCapability } from "../infra-protocol/index.js";
import type { ToolContext } from "../runner/index.js";
import { createInfraTools } from "./infra.js";

const CAPABILITY: ConsentCapability = {
  request: "c-51d0",
  nonce: "a1".repeat(16),
  payload:
    '{"bound":{"idempotency_key":"site-r1-0001","operation":"replicate","profile":"web","run_id":"r1"},"expires":"2026-12-01T12:05:00.000Z","instance":"i-1","nonce":"a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1","request":"c-51d0","tier":2,"tool":"infra_replicate","v":1}',
  signature: "-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n",
  signer: "operator@example.org",
};

function context(consent?: ConsentCapability & Record<string, unknown>): ToolContext {
  const ctx: ToolContext & { consent?: ConsentCapability } = {
    signal: new AbortController().signal,
    requestId: "req-1",
    clientId: "client-1",
    progress: () => undefined,
  };
  if (consent !== undefined) ctx.consent = consent;
  return ctx;
}

describe("the infra tools carry the consent gate's approval", () => {
  let dir: string;
  let broker: BrokerHandle;
  let tools: ReturnType<typeof createInfraTools>;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "infra-tools-"));
    broker = await startLineBroker()(dir);
    tools = createInfraTools({ socketPath: broker.socketPath, maxTimeoutSeconds: 10, maxOutput: 65536 });
  });
  afterAll(async () => {
    await broker.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const tool = (name: string) => {
    const found = tools.find((t) => t.name === name);
    if (found === undefined) throw new Error(`no tool ${name}`);
    return found;
  };
  const parsed = (name: string, raw: Record<string, unknown>): unknown => {
    const result = tool(name).parse(raw);
    if (!result.ok) throw new Error(result.error.join("; "));
    return result.value;
  };
  const args = { profile: "web", run_id: "r1", idempotency_key: "site-r1-0001" };

  it("puts exactly the five fields of the context's approval into the broker request", async () => {
    const replicate = tool("infra_replicate");
    // A field the capability type does not have never reaches the wire (the broker would refuse it).
    await replicate.run(parsed("infra_replicate", args), context({ ...CAPABILITY, extra: "x" }));
    expect(broker.requests.at(-1)).toEqual({ v: 1, op: "replicate", ...args, approval: CAPABILITY });
  });

  it("sends no approval when the gate attached none, whatever the arguments say", async () => {
    const dryRun = tool("infra_rsync_dry_run");
    await dryRun.run(
      parsed("infra_rsync_dry_run", { profile: "web", run_id: "r1", approval: CAPABILITY }),
      context(),
    );
    expect(broker.requests.at(-1)).toEqual({ v: 1, op: "rsync-dry-run", profile: "web", run_id: "r1" });
  });
});
