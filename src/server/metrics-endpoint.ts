import type { IncomingMessage, ServerResponse } from "node:http";
import type { Clock, Logger } from "../core/index.js";
import type { MetricsRegistry } from "../metrics/index.js";
import type { Relay } from "../runner/index.js";
import { RPC_INTERNAL_ERROR, RPC_SERVER_ERROR, sendRpcError } from "./http-io.js";

/**
 * The same relay, with every tool call timed end to end for the latency
 * histogram. The label is the tool name the relay settled on (a fixed name,
 * or `unknown_tool`), never the name the client sent.
 */
export function timedRelay(
  relay: Relay,
  metrics: Pick<MetricsRegistry, "observeDuration">,
  clock: Clock,
): Relay {
  // Spread, so whatever else the relay offers passes through untouched (it keeps no `this`).
  return {
    ...relay,
    async run(toolName, rawArgs, ctx) {
      const started = clock.monotonic();
      const result = await relay.run(toolName, rawArgs, ctx);
      metrics.observeDuration(result.structured.tool, (clock.monotonic() - started) / 1000);
      return result;
    },
  };
}

/** GET /metrics: not behind OAuth (docs/wire-contract.md §9.3); protect it with the bind address or the edge. */
export async function serveMetrics(
  req: IncomingMessage,
  res: ServerResponse,
  metrics: MetricsRegistry,
  logger: Logger,
): Promise<void> {
  if (req.method !== "GET" && req.method !== "HEAD") {
    sendRpcError(res, 405, RPC_SERVER_ERROR, "Method not allowed", { Allow: "GET, HEAD" });
    return;
  }
  let body: string;
  try {
    body = await metrics.render();
  } catch (err) {
    logger.error({ err: String(err) }, "metrics rendering failed");
    sendRpcError(res, 500, RPC_INTERNAL_ERROR, "Internal error");
    return;
  }
  res.writeHead(200, {
    "Content-Type": metrics.contentType,
    "Content-Length": String(Buffer.byteLength(body)),
    "Cache-Control": "no-store",
  });
  res.end(req.method === "HEAD" ? undefined : body);
}
