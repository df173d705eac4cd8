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

    it("answers a chunked body exactly as it answers a sized one, on every route", async () => {
      const cookie = (await browser.context.cookies()).find((c) => c.name === "relay_console");
      const csrf = (await browser.page.getAttribute('meta[name="csrf-token"]', "content")) ?? "";
      const loginPage = await rawRequest(port, "GET", "/console/login", { Host: `localhost:${port}` });
      const pending = /relay_console_login=([^;]+)/.exec(String(loginPage.headers["set-cookie"] ?? ""))?.[1];
      const pendingCsrf = /<meta name="csrf-token" content="([^"]+)">/.exec(loginPage.body)?.[1] ?? "";
      expect(pending).toBeDefined();
      const base = { Host: `localhost:${port}`, Origin: `http://localhost:${port}` };
      const operator = { ...base, Cookie: `relay_console=${cookie?.value ?? ""}`, "X-CSRF-Token": csrf };
      const json = { "Content-Type": "application/json" };
      const cases: Array<[path: string, headers: Record<string, string>, body: string]> = [
        // Before any login check.
        ["/console/logout", { ...base, "Content-Type": "application/x-www-form-urlencoded" }, "csrf=x"],
        ["/console/approvals/abc/approve", { ...base, ...json }, "{}"],
        ["/console/login/verify", { ...base, ...json }, "x".repeat(70 * 1024)],
        // A login in progress, with its token.
        [
          "/console/login/options",
          { ...base, ...json, Cookie: `relay_console_login=${pending}`, "X-CSRF-Token": pendingCsrf },
          "{}",
        ],
        [
          "/console/login/verify",
          { ...base, ...json, Cookie: `relay_console_login=${pending}`, "X-CSRF-Token": "wrong" },
          '{"id":"AAAA"}',
        ],
        // A logged-in operator: the token read from a form body, and a JSON route.
        [
          "/console/sessions/sh-000000000000/kill",
          { ...base, Cookie: operator.Cookie, "Content-Type": "application/x-www-form-urlencoded" },
          "csrf=wrong",
        ],
        ["/console/sessions/sh-000000000000/kill", { ...operator, ...json }, "{}"],
      ];
      // A challenge is fresh each time; everything else of an answer must be the same.
      const same = (text: string) => text.replace(/"challenge":"[^"]*"/, '"challenge":"…"');
      for (const [path, headers, body] of cases) {
        const sized = await rawRequest(port, "POST", path, headers, body);
        const chunked = await rawRequest(
          port,
          "POST",
          path,
          { ...headers, "Transfer-Encoding": "chunked" },
          body,
        );
        expect(sized.status, path).not.toBe(500);
        expect({ status: chunked.status, body: same(chunked.body) }, path).toEqual({
          status: sized.status,
          body: same(sized.body),
        });
      }
      // The operator is still logged in: none of that was a logout.
      const still = await rawRequest(port, "GET", "/console", {
        Host: `localhost:${port}`,
        Cookie: operator.Cookie,
      });
      expect(still.status).toBe(200);
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

    it("a flood of login pages from the operator's own address does not push out the operator's login", async () => {
      const page = browser.page;
      await page.click('header button[type="submit"]');
      await page.waitForURL(`http://localhost:${port}/console/login`);
      // 300 login pages from 127.0.0.1, as a local page's images (or any local process) could ask.
      const statuses: number[] = [];
      for (let i = 0; i < 300; i++)
        statuses.push(
          (await rawRequest(port, "GET", "/console/login", { Host: `localhost:${port}` })).status,
        );
      expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(280);
      expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
      const limited = await rawRequest(port, "GET", "/console/login", { Host: `localhost:${port}` });
      expect(limited.status).toBe(429);
      expect(Number(limited.headers["retry-after"])).toBeGreaterThan(0);
      // A browser's image or script does not start a login at all.
      const image = await rawRequest(port, "GET", "/console/login", {
        Host: `localhost:${port}`,
        "Sec-Fetch-Dest": "image",
        "Sec-Fetch-Site": "same-site",
      });
      expect(image.status).toBe(403);
      // The operator's page, opened before the flood, still logs in with the passkey.
      await page.click("#login");
      await page
        .locator("#posture-mode")
        .or(page.locator("#status", { hasText: "failed" }))
        .waitFor();
      expect(await page.locator("#status").count()).toBe(0);
      expect(await page.textContent("#posture-mode td")).toBe("open");
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
  },
);
