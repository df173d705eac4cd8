import type { Context, MiddlewareHandler } from "hono";

/**
 * Read the body of every POST once, here, at most `maxBytes` of it, whether
 * the browser sized it (Content-Length) or streamed it (Transfer-Encoding:
 * chunked), and hand the bytes to the routes through Hono's body cache, so
 * `c.req.json()` and `c.req.parseBody()` read the same buffer either way.
 *
 * Hono's own body limit rebuilds the request around a chunked body with
 * `new Request(c.req.raw, …)`, which fails on the Node adapter's light
 * request object (the console runs without replacing the global Request),
 * so a chunked POST answered 500 before any route looked at it.
 */
export function boundedBody(maxBytes: number, tooLarge: (c: Context) => Response): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.method !== "POST") return next();
    const headers = c.req.raw.headers;
    const declared = headers.get("content-length");
    if (declared !== null && !headers.has("transfer-encoding") && Number(declared) > maxBytes)
      return tooLarge(c);
    const chunks: Uint8Array[] = [];
    let size = 0;
    const stream = c.req.raw.body;
    if (stream !== null) {
      const reader = stream.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.byteLength;
        // The rest is left unread: the answer goes out and the connection drops what follows.
        if (size > maxBytes) return tooLarge(c);
        chunks.push(value);
      }
    }
    const bytes = new Uint8Array(size);
    let offset = 0;
    for (const chunk of chunks) {
      bytes.set(chunk, offset);
      offset += chunk.byteLength;
    }
    // Hono keeps a body it has read as a promise under its kind; every other kind is made from it.
    (c.req.bodyCache as unknown as { arrayBuffer?: Promise<ArrayBuffer> }).arrayBuffer = Promise.resolve(
      bytes.buffer,
    );
    await next();
  };
}
