import { spawnSync } from "node:child_process";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { chownSync, copyFileSync, existsSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  addVirtualAuthenticator,
  BROWSER_SKIP_REASON,
  launchBrowser,
  type TestBrowser,
} from "../helpers/browser.js";
import {
  CONSOLE_ACCOUNT_SKIP_REASON,
  type ConsoleRelay,
  type ConsoleWorld,
  createConsoleWorld,
  enrolInBrowser,
  freePort,
  loginInBrowser,
  rawRequest,
  startEnrolment,
  startStdioRelay,
} from "../helpers/console.js";
import { baseEnv, REPO_ROOT, SERVER_ENTRY } from "../helpers/server.js";

const SKIP = BROWSER_SKIP_REASON ?? CONSOLE_ACCOUNT_SKIP_REASON;
if (SKIP) console.warn(`console browser suite skipped: ${SKIP}`);

describe.skipIf(SKIP !== null)("operator console over stdio (built server, real Chromium)", () => {
  let world: ConsoleWorld;
  let browser: TestBrowser;
  let relay: ConsoleRelay;
  let port: number;
  let base: string;
  let sessionCookie = "";
  let csrf = "";

  beforeAll(async () => {
    world = createConsoleWorld();
    browser = await launchBrowser();
    port = await freePort();
    base = `http://localhost:${port}`;
  }, 60_000);
  afterAll(async () => {
    await relay?.close();
    await browser?.close();
    world?.cleanup();
  });

  it("enrols a passkey through `relay-shell console enrol` and appends its line", async () => {
    const authenticator = await addVirtualAuthenticator(browser.context, browser.page);
    const enrolment = await startEnrolment(["--name", "alice-laptop", "--passkeys", world.passkeys]);
    expect(enrolment.url).toMatch(/^http:\/\/localhost:\d+\/console\/enrol$/);
    expect(enrolment.code).toMatch(/^[A-Z2-9]{4}-[A-Z2-9]{4}$/);
    const status = await enrolInBrowser(browser.page, enrolment);
    expect(status).toContain('Enrolled passkey "alice-laptop"');
    await browser.screenshot("console-enrol");
    const exit = await enrolment.done;
    expect(exit.status).toBe(0);
    expect(exit.stdout).toContain(`Added passkey "alice-laptop" to ${world.passkeys}`);

    const lines = readFileSync(world.passkeys, "utf8").trim().split("\n");
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0] ?? "") as Record<string, unknown>;
    const [credential] = await authenticator.credentials();
    expect(credential?.isResidentCredential).toBe(true);
    expect(line).toMatchObject({
      name: "alice-laptop",
      credential_id: Buffer.from(credential?.credentialId ?? "", "base64").toString("base64url"),
      algorithm: -7,
    });
    expect(statSync(world.passkeys).mode & 0o777).toBe(0o644);
  });

  it("a wrong one-time code enrols nothing, and five of them stop the enrolment", async () => {
    const enrolment = await startEnrolment(["--name", "bob", "--passkeys", world.passkeys]);
    const page = await browser.context.newPage();
    await page.goto(enrolment.url);
    for (let i = 0; i < 5; i++) {
      await page.fill("#code", "AAAA-AAAA");
      const answered = page.waitForResponse((r) => r.url().endsWith("/console/enrol/options"));
      await page.click("#enrol button");
      expect((await answered).status()).toBe(403);
      await page.locator("#status", { hasText: "Wrong code" }).waitFor();
    }
    const exit = await enrolment.done;
    await page.close();
    expect(exit.status).toBe(1);
    expect(exit.stderr).toContain("5 wrong codes were typed; enrolment stopped");
    expect(readFileSync(world.passkeys, "utf8").trim().split("\n")).toHaveLength(1);
  });

  it("logs in to the built server's console with the passkey and shows the posture", async () => {
    relay = await startStdioRelay(world, {
      RELAY_SHELL_CONSOLE_PORT: String(port),
      RELAY_SHELL_POLICY_MODE: "guarded",
      RELAY_SHELL_POLICY_DENY: "rm -rf /",
      RELAY_SHELL_AUDIT_CHAIN: "true",
    });
    await browser.page.goto(`${base}/console`);
    expect(new URL(browser.page.url()).pathname).toBe("/console/login");
    const status = await loginInBrowser(browser.page, base);
    expect(status).toBe("logged in");
    expect(new URL(browser.page.url()).pathname).toBe("/console");
    const text = async (id: string) => ((await browser.page.textContent(`#${id} td`)) ?? "").trim();
    expect(await text("posture-mode")).toBe("guarded");
    expect(await text("posture-mode-text")).toMatch(/^Tier 0 and 1 are admitted/);
    expect(await text("posture-deny")).toBe("on");
    expect(await text("posture-broker")).toBe("off");
    expect(await text("posture-consent")).toBe("off");
    expect(await text("posture-audit-path")).toBe(world.audit);
    expect(await text("posture-audit-state")).toBe("writing");
    expect(await text("posture-audit-chain")).toBe("on");
    expect(await text("posture-audit-fail-closed")).toBe("on");
    expect(await browser.page.textContent("#warnings")).toContain("ssh_known_hosts=accept-new");
    expect(await browser.page.textContent("header")).toContain("alice-laptop");
    const shot = await browser.screenshot("console-posture");
    // The docs' picture is refreshed on request, so a test run does not rewrite a tracked file.
    const docImage = join(REPO_ROOT, "docs", "images", "console-posture.png");
    if (process.env.RELAY_SHELL_UPDATE_DOC_IMAGES === "1" || !existsSync(docImage)) {
      mkdirSync(dirname(docImage), { recursive: true });
      copyFileSync(shot, docImage);
    }

    // The cookie is what the spec says, and the sign counter is the relay's own 0600 state.
    const cookie = (await browser.context.cookies()).find((c) => c.name === "relay_console");
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/console", secure: false });
    sessionCookie = `relay_console=${cookie?.value ?? ""}`;
    csrf = (await browser.page.getAttribute('meta[name="csrf-token"]', "content")) ?? "";
    expect(csrf.length).toBeGreaterThan(20);
    const counters = join(world.state, "relay-shell", "console", "sign-counters.json");
    expect(statSync(counters).mode & 0o777).toBe(0o600);
    const table = JSON.parse(readFileSync(counters, "utf8")) as { counters: Record<string, number> };
    expect(Object.values(table.counters)[0]).toBeGreaterThan(0);
  });

  it("serves every page under a strict Content-Security-Policy, assets from the relay only", async () => {
    const page = await rawRequest(port, "GET", "/console", {
      Host: `localhost:${port}`,
      Cookie: sessionCookie,
    });
    expect(page.status).toBe(200);
    const csp = String(page.headers["content-security-policy"]);
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    expect(csp).not.toContain("unsafe-eval");
    expect(page.headers["x-frame-options"]).toBe("DENY");
    expect(page.body).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(page.body).not.toMatch(/\sstyle=|<style/);
    expect(page.body).not.toMatch(/https?:\/\/(?!localhost)/);
    const bundle = await rawRequest(port, "GET", "/console/assets/webauthn.js", {
      Host: `localhost:${port}`,
    });
    expect(bundle.status).toBe(200);
    expect(bundle.body).toContain("SimpleWebAuthnBrowser");
    const missing = await rawRequest(port, "GET", "/console/assets/..%2f..%2fpackage.json", {
      Host: `localhost:${port}`,
    });
    expect(missing.status).toBe(404);
  });

  it("refuses a forged Origin, a wrong Host and a missing or wrong CSRF token; the session survives them", async () => {
    const host = `localhost:${port}`;
    const form = (token: string) => `csrf=${encodeURIComponent(token)}`;
    const post = (headers: Record<string, string>, body: string) =>
      rawRequest(
        port,
        "POST",
        "/console/logout",
        { "Content-Type": "application/x-www-form-urlencoded", ...headers },
        body,
      );

    const forged = await post(
      { Host: host, Origin: "http://evil.example", Cookie: sessionCookie },
      form(csrf),
    );
    expect(forged.status).toBe(403);
    expect(forged.body).toContain("Invalid Origin header");
    const opaque = await post({ Host: host, Origin: "null", Cookie: sessionCookie }, form(csrf));
    expect(opaque.status).toBe(403);
    const otherPort = await post(
      { Host: host, Origin: `http://localhost:${port + 1}`, Cookie: sessionCookie },
      form(csrf),
    );
    expect(otherPort.status).toBe(403);
    const noOrigin = await post({ Host: host, Cookie: sessionCookie }, form(csrf));
    expect(noOrigin.status).toBe(403);
    const crossSite = await post(
      { Host: host, Origin: base, "Sec-Fetch-Site": "cross-site", Cookie: sessionCookie },
      form(csrf),
    );
    expect(crossSite.status).toBe(403);

    const wrongHost = await rawRequest(port, "GET", "/console", {
      Host: `rebind.example:${port}`,
      Cookie: sessionCookie,
    });
    expect(wrongHost.status).toBe(403);
    expect(wrongHost.body).toContain("Invalid Host header");
    const loopbackIp = await rawRequest(port, "GET", "/console", {
      Host: `127.0.0.1:${port}`,
      Cookie: sessionCookie,
    });
    expect(loopbackIp.status).toBe(403);

    const noToken = await post({ Host: host, Origin: base, Cookie: sessionCookie }, "");
    expect(noToken.status).toBe(403);
    expect(noToken.body).toContain("Invalid CSRF token");
    const wrongToken = await post(
      { Host: host, Origin: base, Cookie: sessionCookie },
      form(`${csrf.slice(0, -1)}${csrf.endsWith("A") ? "B" : "A"}`),
    );
    expect(wrongToken.status).toBe(403);
    const headerWrong = await rawRequest(port, "POST", "/console/logout", {
      Host: host,
      Origin: base,
      Cookie: sessionCookie,
      "X-CSRF-Token": randomBytes(32).toString("base64url"),
    });
    expect(headerWrong.status).toBe(403);

    // None of that logged the operator out.
    const still = await rawRequest(port, "GET", "/console", { Host: host, Cookie: sessionCookie });
    expect(still.status).toBe(200);
    expect(still.body).toContain("posture-mode");
  });

  it("ignores an Authorization header: only the console's own session opens a page", async () => {
    const bearer = await rawRequest(port, "GET", "/console", {
      Host: `localhost:${port}`,
      Authorization: `Bearer ${randomBytes(24).toString("base64url")}`,
    });
    expect(bearer.status).toBe(303);
    expect(bearer.headers.location).toBe("/console/login");
  });

  it("logs out with the page's token: the cookie no longer opens the console", async () => {
    await browser.page.click('header button[type="submit"]');
    await browser.page.waitForURL(`${base}/console/login`);
    const after = await rawRequest(port, "GET", "/console", {
      Host: `localhost:${port}`,
      Cookie: sessionCookie,
    });
    expect(after.status).toBe(303);
  });

  it("an unknown passkey cannot log in", async () => {
    const page = await browser.context.newPage();
    const stranger = await addVirtualAuthenticator(browser.context, page);
    const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    await stranger.cdp.send("WebAuthn.addCredential", {
      authenticatorId: stranger.id,
      credential: {
        credentialId: randomBytes(16).toString("base64"),
        isResidentCredential: true,
        rpId: "localhost",
        privateKey: privateKey.export({ format: "der", type: "pkcs8" }).toString("base64"),
        userHandle: randomBytes(16).toString("base64"),
        signCount: 0,
      },
    });
    await page.goto(`${base}/console/login`);
    await page.click("#login");
    await page.locator("#status", { hasText: "failed" }).waitFor();
    expect(await page.textContent("#status")).toBe("Login failed: This passkey is not enrolled");
    expect((await browser.context.cookies()).filter((c) => c.name === "relay_console")).toHaveLength(0);
    await page.close();
    expect(relay.stderr()).toContain("console login with a passkey that is not enrolled");
  });

  it("rate-limits login attempts: past 10 a minute the relay answers 429 without checking", async () => {
    const host = `localhost:${port}`;
    const loginPage = await rawRequest(port, "GET", "/console/login", { Host: host });
    const setCookie = String(loginPage.headers["set-cookie"] ?? "");
    const pending = /relay_console_login=([^;]+)/.exec(setCookie)?.[1] ?? "";
    const token = /<meta name="csrf-token" content="([^"]+)">/.exec(loginPage.body)?.[1] ?? "";
    expect(pending).not.toBe("");
    const verify = () =>
      rawRequest(
        port,
        "POST",
        "/console/login/verify",
        {
          Host: host,
          Origin: base,
          Cookie: `relay_console_login=${pending}`,
          "X-CSRF-Token": token,
          "Content-Type": "application/json",
        },
        JSON.stringify({ id: "AAAA", type: "public-key", response: {} }),
      );
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await verify()).status);
    // The stranger's attempt above counted too; every attempt before the limit is refused on its merits.
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(3);
    expect(statuses.slice(0, 8).every((s) => s === 400)).toBe(true);
    const limited = await verify();
    expect(limited.status).toBe(429);
    expect(Number(limited.headers["retry-after"])).toBeGreaterThan(0);
  });

  it("refuses to start the console on a passkeys file the relay's own account could rewrite", async () => {
    const writable = join(world.root, "anchors", "passkeys-relay-owned");
    copyFileSync(world.passkeys, writable);
    chownSync(writable, world.user.uid, world.user.gid);
    const result = spawnSync(
      "/usr/sbin/runuser",
      ["-u", world.user.name, "--", process.execPath, SERVER_ENTRY],
      {
        env: baseEnv({
          HOME: world.home,
          XDG_STATE_HOME: world.state,
          RELAY_SHELL_AUDIT_PATH: world.audit,
          RELAY_SHELL_CONSOLE: "true",
          RELAY_SHELL_CONSOLE_PASSKEYS: writable,
          RELAY_SHELL_CONSOLE_PORT: String(await freePort()),
        }),
        cwd: world.home,
        input: "",
        encoding: "utf8",
        timeout: 30_000,
      },
    );
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(
      "relay_shell: console: RELAY_SHELL_CONSOLE_PASSKEYS: the passkeys file cannot be used:",
    );
    expect(result.stderr).toContain(`is owned by the relay's own uid ${world.user.uid}`);
    const check = spawnSync(
      "/usr/sbin/runuser",
      ["-u", world.user.name, "--", process.execPath, SERVER_ENTRY, "--check-config"],
      {
        env: baseEnv({
          HOME: world.home,
          XDG_STATE_HOME: world.state,
          RELAY_SHELL_AUDIT_PATH: world.audit,
          RELAY_SHELL_CONSOLE: "true",
          RELAY_SHELL_CONSOLE_PASSKEYS: writable,
        }),
        cwd: world.home,
        encoding: "utf8",
        timeout: 30_000,
      },
    );
    expect(check.status).toBe(2);
    expect(check.stderr).toContain(`is owned by the relay's own uid ${world.user.uid}`);
  });

  it("refuses to start with an IP address as the relying party, and says why", async () => {
    const port = await freePort();
    const settings = {
      HOME: world.home,
      XDG_STATE_HOME: world.state,
      RELAY_SHELL_AUDIT_PATH: world.audit,
      RELAY_SHELL_CONSOLE: "true",
      RELAY_SHELL_CONSOLE_PASSKEYS: world.passkeys,
      RELAY_SHELL_CONSOLE_PORT: String(port),
      RELAY_SHELL_CONSOLE_RP_ID: "127.0.0.1",
      RELAY_SHELL_CONSOLE_ORIGIN: `http://127.0.0.1:${port}`,
    };
    const run = (...args: string[]) =>
      spawnSync("/usr/sbin/runuser", ["-u", world.user.name, "--", process.execPath, SERVER_ENTRY, ...args], {
        env: baseEnv(settings),
        cwd: world.home,
        input: "",
        encoding: "utf8",
        timeout: 30_000,
      });
    for (const result of [run(), run("--check-config")]) {
      expect(result.status).toBe(2);
      expect(result.stderr).toContain(
        'relay_shell: console: RELAY_SHELL_CONSOLE_RP_ID: "127.0.0.1" is an IP address, and WebAuthn accepts only a domain name as the relying party',
      );
    }
  });
});
