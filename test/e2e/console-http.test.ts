import { createHash, randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  addVirtualAuthenticator,
  BROWSER_SKIP_REASON,
  launchBrowser,
  type TestBrowser,
} from "../helpers/browser.js";
import {
  CONSOLE_ACCOUNT_SKIP_REASON,
  type ConsoleWorld,
  createConsoleWorld,
  enrolInBrowser,
  freePort,
  type HttpRelay,
  loginInBrowser,
  rawRequest,
  startEnrolment,
  startHttpRelay,
} from "../helpers/console.js";

const SKIP = BROWSER_SKIP_REASON ?? CONSOLE_ACCOUNT_SKIP_REASON;
if (SKIP) console.warn(`console HTTP browser suite skipped: ${SKIP}`);

const REDIRECT = "http://127.0.0.1:33418/callback";

/** A real access token from the relay's OAuth endpoints: register, authorize with PKCE, exchange. */
async function accessToken(api: string): Promise<string> {
  const registered = (await (
    await fetch(`${api}/register`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: "none" }),
    })
  ).json()) as { client_id: string };
  const verifier = randomBytes(32).toString("base64url");
  const query = new URLSearchParams({
    response_type: "code",
    client_id: registered.client_id,
    redirect_uri: REDIRECT,
    code_challenge: createHash("sha256").update(verifier).digest("base64url"),
    code_challenge_method: "S256",
    state: "s",
  });
  const authorized = await fetch(`${api}/authorize?${query}`, { redirect: "manual" });
  const code =
    new URL(authorized.headers.get("location") ?? "http://missing/").searchParams.get("code") ?? "";
  const token = (await (
    await fetch(`${api}/token`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        client_id: registered.client_id,
        grant_type: "authorization_code",
        code,
        code_verifier: verifier,
        redirect_uri: REDIRECT,
      }).toString(),
    })
  ).json()) as { access_token: string };
  return token.access_token;
}

const INITIALIZE = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
});

describe.skipIf(SKIP !== null)(
  "operator console beside /mcp on the HTTP listener (built server, real Chromium)",
  () => {
    let world: ConsoleWorld;
    let browser: TestBrowser;
    let relay: HttpRelay;
    let port: number;
    let token = "";

    beforeAll(async () => {
      world = createConsoleWorld();
      browser = await launchBrowser();
      await addVirtualAuthenticator(browser.context, browser.page);
      const enrolment = await startEnrolment(["--name", "ops-http", "--passkeys", world.passkeys]);
      expect(await enrolInBrowser(browser.page, enrolment)).toContain("Enrolled");
      expect((await enrolment.done).status).toBe(0);
      port = await freePort();
      relay = await startHttpRelay(world, port, {
        RELAY_SHELL_AUTH_ENABLED: "true",
        RELAY_SHELL_AUTH_ISSUER: `http://127.0.0.1:${port}`,
      });
      token = await accessToken(`http://127.0.0.1:${port}`);
    }, 90_000);
    afterAll(async () => {
      await relay?.stop();
      await browser?.close();
      world?.cleanup();
    });

    const mcp = (headers: Record<string, string>) =>
      rawRequest(
        port,
        "POST",
        "/mcp",
        {
          Host: `127.0.0.1:${port}`,
          "Content-Type": "application/json",
          Accept: "application/json, text/event-stream",
          ...headers,
        },
        INITIALIZE,
      );

    it("a valid MCP bearer token opens /mcp but not the console", async () => {
      expect((await mcp({ Authorization: `Bearer ${token}` })).status).toBe(200);
      const page = await rawRequest(port, "GET", "/console", {
        Host: `localhost:${port}`,
        Authorization: `Bearer ${token}`,
      });
      expect(page.status).toBe(303);
      expect(page.headers.location).toBe("/console/login");
      const logout = await rawRequest(port, "POST", "/console/logout", {
        Host: `localhost:${port}`,
        Origin: `http://localhost:${port}`,
        Authorization: `Bearer ${token}`,
      });
      expect(logout.status).toBe(401);
    });

    it("logs in on the HTTP listener; the console's cookie does not open /mcp", async () => {
      expect(await loginInBrowser(browser.page, `http://localhost:${port}`)).toBe("logged in");
      expect(await browser.page.textContent("#posture-mode td")).toBe("open");
      const cookie = (await browser.context.cookies()).find((c) => c.name === "relay_console");
      expect(cookie?.path).toBe("/console");
      const withCookie = await mcp({ Cookie: `relay_console=${cookie?.value ?? ""}` });
      expect(withCookie.status).toBe(401);
      expect(withCookie.headers["www-authenticate"]).toContain("Bearer");
    });

    it("deleting a passkey's line ends its open logins", async () => {
      const cookie = (await browser.context.cookies()).find((c) => c.name === "relay_console");
      const headers = { Host: `localhost:${port}`, Cookie: `relay_console=${cookie?.value ?? ""}` };
      expect((await rawRequest(port, "GET", "/console", headers)).status).toBe(200);
      writeFileSync(world.passkeys, "# ops-http revoked\n");
      const after = await rawRequest(port, "GET", "/console", headers);
      expect(after.status).toBe(303);
      expect(after.headers.location).toBe("/console/login");
    });

    it("the HTTP edge's own Host check and the console's stricter one both apply", async () => {
      const rebound = await rawRequest(port, "GET", "/console/login", { Host: `attacker.example:${port}` });
      expect(rebound.status).toBe(403);
      // 127.0.0.1 passes the edge (it serves /mcp) but is not the console's origin.
      const otherName = await rawRequest(port, "GET", "/console/login", { Host: `127.0.0.1:${port}` });
      expect(otherName.status).toBe(403);
      expect(otherName.body).toContain("Invalid Host header");
      const twoHosts = await rawRequest(port, "GET", "/console/login", { Host: `localhost:${port}` });
      expect(twoHosts.status).toBe(200);
    });
  },
);
