import { copyFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  addVirtualAuthenticator,
  BROWSER_SKIP_REASON,
  launchBrowser,
  type TestBrowser,
} from "../helpers/browser.js";
import {
  CONSENT_SKIP_REASON,
  type ConsentRelay,
  type ConsentWorld,
  consentId,
  createConsentWorld,
} from "../helpers/consent.js";
import { enrolInBrowser, freePort, loginInBrowser, rawRequest, startEnrolment } from "../helpers/console.js";
import { REPO_ROOT } from "../helpers/server.js";

const SKIP = BROWSER_SKIP_REASON ?? CONSENT_SKIP_REASON;
if (SKIP) console.warn(`console approvals suite skipped: ${SKIP}`);

function canaryLines(path: string): number {
  if (!existsSync(path)) return 0;
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l !== "").length;
}

async function until(check: () => boolean, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.skipIf(SKIP !== null)("consent approvals in the console (built server, real Chromium)", () => {
  let world: ConsentWorld;
  let browser: TestBrowser;
  let relay: ConsentRelay;
  let base: string;
  let port: number;
  let canary: string;

  beforeAll(async () => {
    world = createConsentWorld();
    canary = join(world.work, "canary");
    browser = await launchBrowser();
    await addVirtualAuthenticator(browser.context, browser.page);
    const passkeys = join(dirname(world.allowedSigners), "passkeys");
    const enrolment = await startEnrolment(["--name", "alice-laptop", "--passkeys", passkeys]);
    expect(await enrolInBrowser(browser.page, enrolment)).toContain('Enrolled passkey "alice-laptop"');
    expect((await enrolment.done).status).toBe(0);
    port = await freePort();
    base = `http://localhost:${port}`;
    relay = await world.startRelay({
      RELAY_SHELL_CONSOLE: "true",
      RELAY_SHELL_CONSOLE_PASSKEYS: passkeys,
      RELAY_SHELL_CONSOLE_PORT: String(port),
    });
    await until(() => relay.stderr().includes('"msg":"console serving"'), "the console");
    expect(await loginInBrowser(browser.page, base)).toBe("logged in");
  }, 120_000);

  afterAll(async () => {
    await relay?.close();
    await browser?.close();
    world?.cleanup();
  });

  const call = (text: string) =>
    relay.call("shell_exec", { command: `echo ${text} >> ${canary}`, cwd: world.work });
  const card = (id: string) => browser.page.locator(`#request-${id}`);

  it("approves with the logged-in passkey: the re-issued call runs exactly once, the audit names the passkey", async () => {
    const asked = await call("approved");
    const id = consentId(asked.text);
    // The way in is the posture page's link.
    await browser.page.goto(`${base}/console`);
    await browser.page.click("#approvals-link");
    await card(id).waitFor();
    const act = (await card(id).locator("pre.act").textContent()) ?? "";
    expect(act).toContain(`request: ${id}`);
    expect(act).toContain("tool: shell_exec");
    expect(act).toContain(`echo approved >> ${canary}`);
    expect(act).toContain("tier: 1 (");
    expect(await card(id).locator("h3").textContent()).toContain("shell_exec · tier 1");
    const shot = await browser.screenshot("console-approvals");
    // The docs' picture is refreshed on request, so a test run does not rewrite a tracked file.
    const docImage = join(REPO_ROOT, "docs", "images", "console-approvals.png");
    if (process.env.RELAY_SHELL_UPDATE_DOC_IMAGES === "1" || !existsSync(docImage)) {
      mkdirSync(dirname(docImage), { recursive: true });
      copyFileSync(shot, docImage);
    }

    await card(id).locator("button.approve").click();
    await card(id)
      .locator(".status", { hasText: /Approved by|failed/ })
      .waitFor();
    expect(await card(id).locator(".status").textContent()).toContain("Approved by alice-laptop");
    expect(canaryLines(canary)).toBe(0);
    expect(world.cli(["show", id]).stdout).toContain("via passkey by alice-laptop");

    const ran = await call("approved");
    expect(ran.text).toMatch(/^\[exit 0\]/);
    expect(canaryLines(canary)).toBe(1);
    const again = await call("approved");
    expect(again.text).toMatch(/^\[CONSENT REQUIRED id=/);
    expect(canaryLines(canary)).toBe(1);
    const executed = world.records().filter((r) => r.action === "consent_execute");
    expect(
      (executed.at(-1)?.args as { consent?: Record<string, unknown> } | undefined)?.consent,
    ).toMatchObject({
      request: id,
      approver: "alice-laptop",
      channel: "passkey",
    });
    // A decided request leaves the list.
    await card(id).waitFor({ state: "detached" });
  }, 120_000);

  it("denies with a reason: the re-issued call is refused with it and nothing runs", async () => {
    const before = canaryLines(canary);
    const id = consentId((await call("denied")).text);
    await card(id).waitFor();
    await card(id).locator("button.deny").click();
    await card(id).locator(".status", { hasText: "Give a reason" }).waitFor();
    await card(id).locator("input.reason").fill("not during the freeze");
    await card(id).locator("button.deny").click();
    // Not /failed/: the first click's "Denial failed: Give a reason" is still shown until the POST answers.
    await card(id).locator(".status", { hasText: "Denied by" }).waitFor();
    expect(await card(id).locator(".status").textContent()).toContain("Denied by alice-laptop (console)");
    const refused = await call("denied");
    expect(refused.text).toContain(
      `request ${id} was denied by alice-laptop (console): not during the freeze`,
    );
    expect(canaryLines(canary)).toBe(before);
  }, 120_000);

  it("refuses a POST without the CSRF token, with a wrong one, and without a login", async () => {
    const id = consentId((await call("csrf")).text);
    await card(id).waitFor();
    const cookie = (await browser.context.cookies()).find((c) => c.name === "relay_console");
    const csrf = (await browser.page.getAttribute('meta[name="csrf-token"]', "content")) ?? "";
    const post = (path: string, headers: Record<string, string>) =>
      rawRequest(
        port,
        "POST",
        path,
        { Host: `localhost:${port}`, Origin: base, "Content-Type": "application/json", ...headers },
        JSON.stringify({ reason: "forged" }),
      );
    const session = { Cookie: `relay_console=${cookie?.value ?? ""}` };
    const missing = await post(`/console/approvals/${id}/deny`, session);
    expect(missing.status).toBe(403);
    expect(JSON.parse(missing.body)).toEqual({ error: "Invalid CSRF token" });
    const wrong = await post(`/console/approvals/${id}/deny`, { ...session, "X-CSRF-Token": `${csrf}x` });
    expect(wrong.status).toBe(403);
    const anonymous = await post(`/console/approvals/${id}/deny`, { "X-CSRF-Token": csrf });
    expect(anonymous.status).toBe(401);
    const options = await post(`/console/approvals/${id}/options`, session);
    expect(options.status).toBe(403);
    expect(world.cli(["show", id]).stdout).toContain("status:   pending");

    // With the token, the same request goes through; an id that is not a request is a clear refusal.
    const unknown = await post("/console/approvals/nosuchid/deny", { ...session, "X-CSRF-Token": csrf });
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.body).error).toContain("The consent store refused");
    const denied = await post(`/console/approvals/${id}/deny`, { ...session, "X-CSRF-Token": csrf });
    expect(denied.status).toBe(200);
    const twice = await post(`/console/approvals/${id}/deny`, { ...session, "X-CSRF-Token": csrf });
    expect(twice.status).toBe(409);
    expect(JSON.parse(twice.body).error).toBe(`Request ${id} is denied, not pending`);
  }, 120_000);

  it("refuses an assertion made over another request's payload, and a tampered one; nothing is stored", async () => {
    const target = consentId((await call("target")).text);
    const other = consentId((await call("other")).text);
    await card(target).waitFor();
    const cookie = (await browser.context.cookies()).find((c) => c.name === "relay_console");
    const csrf = (await browser.page.getAttribute('meta[name="csrf-token"]', "content")) ?? "";
    const post = (path: string, body: unknown) =>
      rawRequest(
        port,
        "POST",
        path,
        {
          Host: `localhost:${port}`,
          Origin: base,
          "Content-Type": "application/json",
          Cookie: `relay_console=${cookie?.value ?? ""}`,
          "X-CSRF-Token": csrf,
        },
        JSON.stringify(body),
      );
    // A genuine assertion by the logged-in passkey, but over the other request's payload.
    const options = await post(`/console/approvals/${other}/options`, {});
    expect(options.status).toBe(200);
    const assertion = (await browser.page.evaluate(
      (optionsJSON) =>
        (
          globalThis as unknown as {
            SimpleWebAuthnBrowser: { startAuthentication(o: unknown): Promise<unknown> };
          }
        ).SimpleWebAuthnBrowser.startAuthentication({ optionsJSON }),
      JSON.parse(options.body),
    )) as { id: string; response: Record<string, string> };
    const moved = await post(`/console/approvals/${target}/approve`, assertion);
    expect(moved.status).toBe(403);
    expect(JSON.parse(moved.body).error).toBe(
      "Approval refused: the assertion's challenge is not the digest of this act's payload",
    );
    const signature = Buffer.from(assertion.response.signature ?? "", "base64url");
    signature[signature.length - 1] = (signature[signature.length - 1] ?? 0) ^ 0x01;
    const tampered = await post(`/console/approvals/${other}/approve`, {
      ...assertion,
      response: { ...assertion.response, signature: signature.toString("base64url") },
    });
    expect(tampered.status).toBe(403);
    expect(JSON.parse(tampered.body).error).toContain(
      "the signature does not verify with passkey alice-laptop",
    );
    const foreign = await post(`/console/approvals/${other}/approve`, { ...assertion, id: "AAAA" });
    expect(foreign.status).toBe(403);
    expect(JSON.parse(foreign.body).error).toBe(
      "The assertion was made with another passkey than the one logged in",
    );
    const malformed = await post(`/console/approvals/${other}/approve`, { id: assertion.id });
    expect(malformed.status).toBe(400);
    for (const id of [target, other]) expect(world.cli(["show", id]).stdout).toContain("status:   pending");
    // The untouched assertion over its own payload still approves.
    const good = await post(`/console/approvals/${other}/approve`, assertion);
    expect(good.status, good.body).toBe(200);
    expect(world.cli(["show", other]).stdout).toContain("via passkey by alice-laptop");
  }, 120_000);

  it("a request approved with the CLI leaves the page, and the console can no longer approve it", async () => {
    const id = consentId((await call("cli")).text);
    await card(id).waitFor();
    const approved = world.approve(id);
    expect(approved.status, approved.stderr).toBe(0);
    await card(id).waitFor({ state: "detached" });
    const cookie = (await browser.context.cookies()).find((c) => c.name === "relay_console");
    const csrf = (await browser.page.getAttribute('meta[name="csrf-token"]', "content")) ?? "";
    const late = await rawRequest(
      port,
      "POST",
      `/console/approvals/${id}/options`,
      {
        Host: `localhost:${port}`,
        Origin: base,
        "Content-Type": "application/json",
        Cookie: `relay_console=${cookie?.value ?? ""}`,
        "X-CSRF-Token": csrf,
      },
      "{}",
    );
    expect(late.status).toBe(409);
    expect(JSON.parse(late.body).error).toBe(`Request ${id} is approved, not pending`);
  }, 120_000);
});
