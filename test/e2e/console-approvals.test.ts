import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { actDigest, type ConsentAct, consentPayload } from "../../src/consent/index.js";
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

const BETTER_SQLITE3 = createRequire(import.meta.url).resolve("better-sqlite3");

/**
 * Rewrite request `id` as the relay's own account could (it owns the consent database): another
 * act, with the digest and the payload that go with it, so the row holds together.
 */
function rewriteAct(world: ConsentWorld, id: string, change: (act: ConsentAct) => ConsentAct): void {
  const read = new Database(world.db, { readonly: true });
  const row = read.prepare("SELECT act, nonce, expires_at FROM requests WHERE id = ?").get(id) as {
    act: string;
    nonce: string;
    expires_at: number;
  };
  const instance = (
    read.prepare("SELECT value FROM meta WHERE key = 'instance_id'").get() as { value: string }
  ).value;
  read.close();
  const act = change(JSON.parse(row.act) as ConsentAct);
  const payload = consentPayload(act, { request: id, nonce: row.nonce, expiresAt: row.expires_at, instance });
  const script = `const Database = require(${JSON.stringify(BETTER_SQLITE3)});
const db = new Database(process.argv[1]);
db.prepare("UPDATE requests SET act = ?, act_digest = ?, payload = ? WHERE id = ?").run(...JSON.parse(process.argv[2]));
db.close();`;
  const edited = spawnSync(
    "/usr/sbin/runuser",
    [
      "-u",
      world.user.name,
      "--",
      process.execPath,
      "-e",
      script,
      world.db,
      JSON.stringify([JSON.stringify(act), actDigest(act), payload, id]),
    ],
    { encoding: "utf8" },
  );
  if (edited.status !== 0)
    throw new Error(`the relay's account could not edit the database: ${edited.stderr}`);
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
    // The navigation counts the requests waiting; the posture's warning says consent holds the calls.
    await browser.page.goto(`${base}/console`);
    expect(await browser.page.textContent("#nav-pending")).toBe("1");
    const warnings = (await browser.page.textContent("#warnings")) ?? "";
    expect(warnings).toContain(
      "policy refuses nothing, but human consent holds every call that is not a proven read (Tier 0) until an operator approves it",
    );
    expect(warnings).not.toContain("nothing is refused");
    // The way in is the posture page's link (the navigation has one too).
    await browser.page.click("#approvals-link");
    await card(id).waitFor();
    expect(await browser.page.textContent("#nav-pending")).toBe("1");
    // The digest shown is the one `consent show` prints for the same request.
    const digest = /^digest: +([0-9a-f]{64})$/m.exec(world.cli(["show", id]).stdout)?.[1];
    expect(await card(id).locator("p.digest code").textContent()).toBe(digest);
    // Times are local, with UTC on hover.
    expect(await card(id).locator(".time").first().getAttribute("title")).toMatch(/ UTC$/);
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

  it("counts the waiting requests by session and shows one act asked by several sessions as one card", async () => {
    const other = await world.startRelay();
    try {
      const args = { command: `echo repeated >> ${canary}`, cwd: world.work };
      const first = consentId((await relay.call("shell_exec", args)).text);
      const second = consentId((await other.call("shell_exec", args)).text);
      await browser.page.goto(`${base}/console/approvals`);
      const lead = card(second);
      await lead.waitFor();
      expect(await card(first).count()).toBe(0);
      await lead.locator(".repeats", { hasText: "The same act waits 2 times, from 2 session(s)" }).waitFor();
      expect(await lead.locator(".repeats").textContent()).toContain(`also requests ${first}`);
      expect(await browser.page.locator("#sessions li").count()).toBeGreaterThanOrEqual(2);
      expect(await browser.page.locator("#sessions").textContent()).toMatch(/: 1 waiting/);
      for (const id of [first, second]) expect(world.cli(["deny", id]).status).toBe(0);
      await lead.waitFor({ state: "detached" });
    } finally {
      await other.close();
    }
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
    // The digests the page shows for the two requests.
    const digestOf = async (id: string) => (await card(id).locator("input[name=digest]").inputValue()) ?? "";
    await card(other).waitFor();
    const targetDigest = await digestOf(target);
    const otherDigest = await digestOf(other);
    // A genuine assertion by the logged-in passkey, but over the other request's payload.
    const options = await post(`/console/approvals/${other}/options`, { digest: otherDigest });
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
    const moved = await post(`/console/approvals/${target}/approve`, { digest: targetDigest, assertion });
    expect(moved.status).toBe(403);
    expect(JSON.parse(moved.body).error).toBe(
      "Approval refused: the assertion's challenge is not the digest of this act's payload",
    );
    const signature = Buffer.from(assertion.response.signature ?? "", "base64url");
    signature[signature.length - 1] = (signature[signature.length - 1] ?? 0) ^ 0x01;
    const tampered = await post(`/console/approvals/${other}/approve`, {
      digest: otherDigest,
      assertion: {
        ...assertion,
        response: { ...assertion.response, signature: signature.toString("base64url") },
      },
    });
    expect(tampered.status).toBe(403);
    expect(JSON.parse(tampered.body).error).toContain(
      "the signature does not verify with passkey alice-laptop",
    );
    const foreign = await post(`/console/approvals/${other}/approve`, {
      digest: otherDigest,
      assertion: { ...assertion, id: "AAAA" },
    });
    expect(foreign.status).toBe(403);
    expect(JSON.parse(foreign.body).error).toBe(
      "The assertion was made with another passkey than the one logged in",
    );
    const malformed = await post(`/console/approvals/${other}/approve`, {
      digest: otherDigest,
      assertion: { id: assertion.id },
    });
    expect(malformed.status).toBe(400);
    for (const id of [target, other]) expect(world.cli(["show", id]).stdout).toContain("status:   pending");
    // The untouched assertion over its own payload still approves.
    // Without the digest of the act shown, not even a genuine assertion approves.
    const blind = await post(`/console/approvals/${other}/approve`, assertion);
    expect(blind.status).toBe(400);
    const good = await post(`/console/approvals/${other}/approve`, { digest: otherDigest, assertion });
    expect(good.status, good.body).toBe(200);
    expect(world.cli(["show", other]).stdout).toContain("via passkey by alice-laptop");
  }, 120_000);

  it("refuses the approval when the stored act was rewritten after the page showed it: nothing is approved", async () => {
    const before = canaryLines(canary);
    const id = consentId((await call("shown")).text);
    await card(id).waitFor();
    const shown = (await card(id).locator("pre.act").textContent()) ?? "";
    expect(shown).toContain("echo shown >>");
    // The relay's account rewrites the request with another command, its digest and its payload.
    rewriteAct(world, id, (act) => ({
      ...act,
      bound: { ...act.bound, command: `echo swapped >> ${canary}` },
    }));
    expect(world.cli(["show", id]).stdout).toContain("echo swapped >>");
    await card(id).locator("button.approve").click();
    await card(id)
      .locator(".status", { hasText: /Approved by|failed/ })
      .waitFor();
    const status = (await card(id).locator(".status").textContent()) ?? "";
    expect(status).toContain(`Approval failed: Request ${id} now holds another act than the one shown`);
    expect(status).toContain("nothing was approved");
    // The card still shows what the operator read, and says the request changed under it.
    expect(await card(id).locator("pre.act").textContent()).toBe(shown);
    await card(id).locator(".changed", { hasText: "now holds another act" }).waitFor();
    expect(world.cli(["show", id]).stdout).toContain("status:   pending");
    expect(canaryLines(canary)).toBe(before);
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
