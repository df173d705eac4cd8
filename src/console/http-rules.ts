import type { Context, MiddlewareHandler } from "hono";

/**
 * What a console page may load: only the relay's own files, no inline
 * script or style, no eval, no framing, no plugins, forms only to itself.
 */
function contentSecurityPolicy(wasm: boolean): string {
  return [
    "default-src 'self'",
    wasm ? "script-src 'self' 'wasm-unsafe-eval'" : "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/**
 * Pages that may compile WebAssembly: the terminal player's emulator is a
 * WebAssembly module inside its own script (ADR 0026). Only those pages get
 * `'wasm-unsafe-eval'`, which allows compiling WebAssembly and nothing else:
 * JavaScript's eval and inline script stay forbidden there too.
 */
const wasmPages = new WeakSet<Request>();

/** Let this answer's page compile WebAssembly (the player pages only). */
export function allowWasm(c: Context): void {
  wasmPages.add(c.req.raw);
}

const HEADERS: Record<string, string> = {
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  // A form POST under no-referrer carries `Origin: null`, which the Origin check must refuse.
  "Referrer-Policy": "same-origin",
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Resource-Policy": "same-origin",
  "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=()",
  "Cache-Control": "no-store",
};

/** The JSON refusal every console check answers with. */
export function refuse(
  c: Context,
  status: 400 | 401 | 403 | 404 | 405 | 409 | 413 | 429 | 503,
  message: string,
): Response {
  return c.json({ error: message }, status);
}

/**
 * Host and Origin checks for the console, stricter than the MCP endpoint's:
 * the page's origin is fixed by the settings (WebAuthn binds every passkey
 * to it), so the Host must be exactly that origin's host and port, and an
 * Origin, when sent, exactly that origin. A state-changing request must
 * carry an Origin (every browser sends one on POST) and must not come from
 * another site (Sec-Fetch-Site). A DNS-rebinding page, a forged Origin and a
 * cross-site form are all refused here, before any route runs.
 */
export function guardRequests(origin: string): MiddlewareHandler {
  const host = new URL(origin).host;
  return async (c, next) => {
    const hostHeaders = c.req.raw.headers.get("host");
    if (hostHeaders === null || hostHeaders.toLowerCase() !== host)
      return refuse(c, 403, "Invalid Host header");
    const method = c.req.method;
    if (method !== "GET" && method !== "HEAD" && method !== "POST") {
      c.header("Allow", "GET, HEAD, POST");
      return refuse(c, 405, "Method not allowed");
    }
    const sentOrigin = c.req.header("origin");
    if (sentOrigin !== undefined && sentOrigin !== origin) return refuse(c, 403, "Invalid Origin header");
    if (method === "POST") {
      if (sentOrigin === undefined) return refuse(c, 403, "Missing Origin header");
      const site = c.req.header("sec-fetch-site");
      if (site !== undefined && site !== "same-origin") return refuse(c, 403, "Cross-site request");
    }
    await next();
  };
}

/** The security headers on every console answer, refusals included. */
export function securityHeaders(): MiddlewareHandler {
  return async (c, next) => {
    await next();
    c.res.headers.set("Content-Security-Policy", contentSecurityPolicy(wasmPages.has(c.req.raw)));
    for (const [name, value] of Object.entries(HEADERS)) c.res.headers.set(name, value);
  };
}
