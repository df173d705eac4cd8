import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { type JSONRPCMessage, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";
import { createLineReader, describeOversized, type OversizedMessage } from "./line-reader.js";

/** What to do with a message too large to parse: answer it (or null to drop it). */
type OversizedHandler = (info: {
  id: string | number | null;
  method: string | null;
  toolName: string | null;
  bytes: number;
}) => Promise<JSONRPCMessage | null>;

export interface StdioOptions {
  /** Largest JSON-RPC line parsed; larger ones are answered by `oversized` without being read whole. */
  maxMessageBytes: number;
  oversized: OversizedHandler;
  onError?: (err: unknown) => void;
}

const KEEP_BYTES = 64 * 1024;

/**
 * A stdio transport with a hard per-message bound. The SDK's own stdio
 * transport closes the whole connection when one message exceeds its buffer,
 * and copies its buffer on every chunk; this one keeps serving and reads in
 * linear time.
 */
function createStdioTransport(options: StdioOptions): Transport {
  const stdin = process.stdin;
  const stdout = process.stdout;
  let closed = false;

  const transport: Transport = {
    async start() {
      stdin.on("data", onData);
      stdin.on("error", onStreamError);
      stdin.on("end", () => void transport.close());
    },
    send(message) {
      return new Promise<void>((resolve, reject) => {
        if (closed) {
          reject(new Error("transport closed"));
          return;
        }
        // The message and its newline go out as two pieces of one write: joining them first would
        // make a second copy of every large result just to add one byte.
        stdout.cork();
        stdout.write(JSON.stringify(message));
        const flushed = stdout.write("\n");
        stdout.uncork();
        if (flushed) resolve();
        else stdout.once("drain", () => resolve());
      });
    },
    async close() {
      if (closed) return;
      closed = true;
      stdin.off("data", onData);
      stdin.off("error", onStreamError);
      stdin.pause();
      transport.onclose?.();
    },
  };

  const reader = createLineReader(options.maxMessageBytes, KEEP_BYTES, {
    line(text) {
      let message: JSONRPCMessage;
      try {
        message = JSONRPCMessageSchema.parse(JSON.parse(text));
      } catch (err) {
        options.onError?.(err);
        void transport
          .send({
            jsonrpc: "2.0",
            id: null,
            error: { code: -32700, message: "parse error" },
          } as unknown as JSONRPCMessage)
          .catch(() => undefined);
        return;
      }
      transport.onmessage?.(message);
    },
    oversized(info: OversizedMessage) {
      const described = describeOversized(info);
      options
        .oversized({ ...described, bytes: info.bytes })
        .then((reply) => (reply ? transport.send(reply) : undefined))
        .catch((err: unknown) => options.onError?.(err));
    },
  });

  function onData(chunk: Buffer): void {
    try {
      reader.push(chunk);
    } catch (err) {
      options.onError?.(err);
    }
  }

  function onStreamError(err: unknown): void {
    transport.onerror?.(err instanceof Error ? err : new Error(String(err)));
  }

  return transport;
}

/** Serve on stdin/stdout; resolves when the client goes away or the transport closes. */
export async function serveStdio(server: Server, options: StdioOptions): Promise<void> {
  const transport = createStdioTransport(options);
  const closed = new Promise<void>((resolve) => {
    const previous = transport.onclose;
    transport.onclose = () => {
      previous?.();
      resolve();
    };
  });
  await server.connect(transport);
  await closed;
}
