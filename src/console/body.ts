import type { Context, MiddlewareHandler } from "hono";
import type { z } from "zod";
import { fail, ok, type Result } from "../core/index.js";

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

/** The JSON of a POST's body (read once by boundedBody); any JSON value, null included. */
export async function readJson(c: Context): Promise<Result<unknown, "not-json">> {
  try {
    const value: unknown = await c.req.json();
    return ok(value);
  } catch {
    return fail("not-json");
  }
}

/** The first thing wrong with a body: the field's path ("" for the body) and why. */
interface BodyProblem {
  field: string;
  why: string;
}

/**
 * Decode `value` with `schema`: the body, or the first thing wrong with it. The schema's messages
 * are phrases that follow the field's name (see webauthn-schema.ts); the first problem is the one
 * the refusal names.
 */
export function decodeBody<T>(schema: z.ZodType<T>, value: unknown): Result<T, BodyProblem> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return ok(parsed.data);
  const issue = parsed.error.issues[0];
  if (issue === undefined) return fail({ field: "", why: "is not what was expected" });
  return fail({ field: fieldPath(issue.path), why: issue.message });
}

/** The refusal's text of a problem: "response.signature is missing", "the body must be an object". */
export function problemText(problem: BodyProblem): string {
  return `${problem.field === "" ? "the body" : problem.field} ${problem.why}`;
}

/** `response.transports[2]`: names as written, list positions in brackets. */
function fieldPath(path: readonly PropertyKey[]): string {
  let text = "";
  for (const key of path) {
    if (typeof key === "number") text += `[${key}]`;
    else text += text === "" ? String(key) : `.${String(key)}`;
  }
  return text;
}
