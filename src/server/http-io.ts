import type { IncomingMessage, ServerResponse } from "node:http";
import { growEnds, keepEnds, type OversizedMessage } from "./line-reader.js";

/** JSON-RPC error codes the edge answers with (the SDK's conventions for streamable HTTP). */
export const RPC_PARSE_ERROR = -32700;
export const RPC_SERVER_ERROR = -32000;
export const RPC_SESSION_NOT_FOUND = -32001;
export const RPC_INTERNAL_ERROR = -32603;

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "Content-Type": "application/json",
    "Content-Length": String(Buffer.byteLength(text)),
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    ...headers,
  });
  res.end(text);
}

/** A JSON-RPC error answered at the HTTP level: fixed text, never request data. */
export function sendRpcError(
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  sendJson(res, status, { jsonrpc: "2.0", error: { code, message }, id: null }, headers);
}

export function headerValue(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The media type of a Content-Type header, lower-cased, parameters dropped. */
export function mediaType(req: IncomingMessage): string {
  return (headerValue(req, "content-type") ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
}

export type BodyResult =
  | { kind: "ok"; body: Buffer }
  | ({ kind: "too_large" } & OversizedMessage)
  | { kind: "aborted" };

const KEEP = 64 * 1024;
/** Past this many bytes an oversized body is no longer drained: the connection is cut instead. */
const DRAIN_CAP = 256 * 1024 * 1024;

/**
 * Read a request body with a hard bound. A body over `limit` is not kept:
 * only its first and last 64 KiB are, so that an oversized tool call can
 * still be answered (and audited) by id. It is drained to its end so the
 * client can read the answer, up to a cap beyond which the socket is cut.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<BodyResult> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let ends: OversizedMessage | null = null;
    let settled = false;
    const finish = (result: BodyResult) => {
      if (settled) return;
      settled = true;
      req.off("data", onData);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      if (ends === null && total + chunk.length <= limit) {
        chunks.push(chunk);
        total += chunk.length;
        return;
      }
      if (ends === null) {
        ends = keepEnds(Buffer.concat([...chunks, chunk]), KEEP);
        chunks.length = 0;
      } else {
        growEnds(ends, chunk, KEEP);
      }
      if (ends.bytes > DRAIN_CAP) {
        finish({ kind: "aborted" });
        req.destroy();
      }
    };
    req.on("data", onData);
    req.once("end", () => {
      if (ends === null) finish({ kind: "ok", body: Buffer.concat(chunks) });
      else finish({ kind: "too_large", ...ends });
    });
    req.once("error", () => finish({ kind: "aborted" }));
    req.once("close", () => finish({ kind: "aborted" }));
  });
}
