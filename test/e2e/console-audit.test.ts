import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { type ClientRequest, request } from "node:http";
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
import { REPO_ROOT } from "../helpers/server.js";

const SKIP = BROWSER_SKIP_REASON ?? CONSOLE_ACCOUNT_SKIP_REASON;
if (SKIP) console.warn(`console audit suite skipped: ${SKIP}`);

const WRITER = join(REPO_ROOT, "test", "audit", "audit-writer.mjs");
/** MAX_AUDIT_STREAMS of src/console/audit-view.ts. */
const MAX_STREAMS = 8;

/** Open the event stream and keep it open: its status, and the request to destroy it by. */
function openStream(
  port: number,
  cookie: string,
  query = "",
): Promise<{ status: number; req: ClientRequest }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path: `/console/audit/events${query}`,
        headers: { Host: `localhost:${port}`, Cookie: cookie, Accept: "text/event-stream" },
      },
      (res) => {
        res.resume();
        resolve({ status: res.statusCode ?? 0, req });
      },
    );
    req.once("error", reject);
    req.end();
  });
}

describe.skipIf(SKIP !== null)("the console's live audit page (built server, real Chromium)", () => {
  let world: ConsoleWorld;
  let browser: TestBrowser;
  let relay: ConsoleRelay;
  let port: number;
  let base: string;
  let cookie = "";

  beforeAll(async () => {
    world = createConsoleWorld();
    // Half an hour off UTC, so a local time can never pass for the UTC one.
    browser = await launchBrowser({ timezoneId: "Asia/Kolkata" });
    port = await freePort();
    base = `http://localhost:${port}`;
    await addVirtualAuthenticator(browser.context, browser.page);
    const enrolment = await startEnrolment(["--name", "alice-laptop", "--passkeys", world.passkeys]);
    expect(await enrolInBrowser(browser.page, enrolment)).toContain("Enrolled");
    expect((await enrolment.done).status).toBe(0);
    relay = await startStdioRelay(world, {
      RELAY_SHELL_CONSOLE_PORT: String(port),
      RELAY_SHELL_POLICY_MODE: "guarded",
      RELAY_SHELL_AUDIT_CHAIN: "true",
    });
    expect(await loginInBrowser(browser.page, base)).toBe("logged in");
    const session = (await browser.context.cookies()).find((c) => c.name === "relay_console");
    cookie = `relay_console=${session?.value ?? ""}`;
  }, 120_000);
  afterAll(async () => {
    await relay?.close();
    await browser?.close();
    world?.cleanup();
  });

  const page = () => browser.page;
  const rows = () => page().locator("#audit-rows tbody tr");
  /** Run `command` through MCP and wait for its record to come to the top of the page. */
  async function shellShown(command: string): Promise<void> {
    const before = await rows().count();
    await shell(command);
    await rows().nth(before).waitFor();
  }
  async function shell(command: string): Promise<void> {
    const result = await relay.client.callTool({ name: "shell_exec", arguments: { command } });
    expect(result.isError ?? false).toBe(false);
  }
  /** A fresh audit page (a follower of its own), once its backlog is shown. */
  async function openLive(): Promise<void> {
    await page().goto(`${base}/console/audit`);
    await page().locator("#audit-status", { hasText: "Live" }).waitFor();
  }

  it("is linked from the posture page and shows a tool call made through MCP as it is written", async () => {
    await page().goto(`${base}/console`);
    await page().click("#nav-audit");
    await page().locator("#audit-status", { hasText: "Live" }).waitFor();
    expect(new URL(page().url()).pathname).toBe("/console/audit");
    await shell("echo audit-live-one");
    // The row shows what the record says; the detail (below) shows which record it is.
    const first = page().locator("#audit-rows tbody tr").first();
    await first.locator("td", { hasText: "shell_exec" }).waitFor();
    const cells = (await first.locator("td").allTextContents()).map((t) => t.trim());
    expect(cells[3]).toMatch(/^[0-3]$/);
    expect(cells.slice(1, 10)).toEqual([
      "shell_exec",
      "echo audit-live-one",
      cells[3],
      "ok",
      "no",
      cells[6],
      "",
      "",
      "verified",
    ]);
    // The time is the browser's local time (here UTC+05:30), and the record's UTC time is on hover.
    const record = readFileSync(world.audit, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { ts: string; args?: { command?: string } })
      .findLast((r) => r.args?.command === "echo audit-live-one");
    const at = Date.parse(record?.ts ?? "");
    const stamp = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace("T", " ");
    expect(cells[0]).toBe(stamp(at + 330 * 60_000));
    expect(await first.locator("td").first().getAttribute("title")).toBe(`${stamp(at)} UTC`);
    await first.click();
    const detail = page().locator("#audit-detail");
    await detail.waitFor({ state: "visible" });
    expect(await detail.textContent()).toContain("audit-live-one");
    await page().click("#audit-detail button");
    // The chart has a bar for the minute of the call.
    await page().locator("#audit-chart svg rect").first().waitFor();
  });

  it("shows records another process appends to the same file", async () => {
    const written = spawnSync(
      "/usr/sbin/runuser",
      ["-u", world.user.name, "--", process.execPath, WRITER, world.audit, "other-relay", "1", "0", "true"],
      { encoding: "utf8" },
    );
    expect(written.status, written.stderr).toBe(0);
    expect(JSON.parse(written.stdout)).toEqual({ written: 1, failed: 0 });
    const other = page().locator("#audit-rows tbody tr", { hasText: "other-relay" });
    await other.waitFor();
    expect(await other.locator("td.chain").textContent()).toBe("verified");
  });

  it("filters server-side: a tool filter hides the call, clearing it shows it again", async () => {
    await page().fill("#f-tool", "ssh_exec");
    await page().click("#filters button");
    await page().locator("#audit-status", { hasText: "Live" }).waitFor();
    await shell("echo audit-filtered");
    // The filtered stream is live and the call was written: a record after it shows nothing either.
    await page().waitForTimeout(1000);
    expect(await page().locator("#audit-rows tbody tr").count()).toBe(0);
    await page().fill("#f-tool", "");
    // echo is proven to only read: Tier 0 (docs/policy.md, Tier 0).
    await page().selectOption("#f-tier", "0");
    await page().click("#filters button");
    await page().locator("#audit-status", { hasText: "Live" }).waitFor();
    await page().locator("#audit-rows tbody tr").first().waitFor();
    const tools = await page().locator("#audit-rows tbody tr td:nth-child(2)").allTextContents();
    expect(tools.length).toBeGreaterThanOrEqual(2);
    const tiers = await page().locator("#audit-rows tbody tr td:nth-child(4)").allTextContents();
    expect(new Set(tiers)).toEqual(new Set(["0"]));
    // The newest tier-0 record is the call the tool filter hid.
    await page().locator("#audit-rows tbody tr").nth(0).click();
    await page().locator("#audit-detail").waitFor({ state: "visible" });
    expect(await page().locator("#audit-detail").textContent()).toContain("audit-filtered");
    await page().click("#audit-detail button");
    await page().selectOption("#f-tier", "");
    await page().click("#filters button");
    await page().locator("#audit-status", { hasText: "Live" }).waitFor();
  });

  it("refuses a bad filter, a stream without a login, and more open streams than the bound", async () => {
    const headers = { Host: `localhost:${port}`, Cookie: cookie };
    const bad = await rawRequest(port, "GET", "/console/audit/events?tier=7", headers);
    expect(bad.status).toBe(400);
    expect(bad.body).toContain("tier: expected 0, 1, 2 or 3");
    const unknown = await rawRequest(port, "GET", "/console/audit/events?command=rm", headers);
    expect(unknown.status).toBe(400);
    const anonymous = await rawRequest(port, "GET", "/console/audit/events", { Host: `localhost:${port}` });
    expect(anonymous.status).toBe(401);

    await page().goto(`${base}/console`); // the page's own stream goes with it
    const streams: ClientRequest[] = [];
    try {
      for (let i = 0; i < MAX_STREAMS; i++) {
        let opened = await openStream(port, cookie);
        // The server frees the page's stream once it sees its connection close, which can come
        // a moment after the navigation (and the filters applied before): until then places are taken.
        for (let wait = 0; wait < 50 && opened.status === 429; wait++) {
          opened.req.destroy();
          await new Promise((r) => setTimeout(r, 100));
          opened = await openStream(port, cookie);
        }
        expect(opened.status).toBe(200);
        streams.push(opened.req);
      }
      const over = await openStream(port, cookie);
      over.req.destroy();
      expect(over.status).toBe(429);
      // A stream whose reader went away frees its place (and closes its follower).
      streams.pop()?.destroy();
      let again = 0;
      for (let i = 0; i < 50 && again !== 200; i++) {
        await new Promise((r) => setTimeout(r, 100));
        const retry = await openStream(port, cookie);
        again = retry.status;
        if (again === 200) streams.push(retry.req);
        else retry.req.destroy();
      }
      expect(again).toBe(200);
    } finally {
      for (const s of streams) s.destroy();
    }
  });

  it("escapes every field of the detail view, and the command in the row", async () => {
    await openLive();
    await shellShown("echo '<img src=x id=injected>' audit-escape");
    expect(await page().locator("#audit-rows tbody tr td.command").first().textContent()).toBe(
      "echo '<img src=x id=injected>' audit-escape",
    );
    await page().locator("#audit-rows tbody tr").first().click();
    const detail = page().locator("#audit-detail");
    await detail.waitFor({ state: "visible" });
    expect(await detail.textContent()).toContain("<img src=x id=injected>");
    expect(await page().locator("#injected").count()).toBe(0);
    await page().click("#audit-detail button");
  });

  it("shows a long command cut to one line, all of it on hover, its line breaks made visible", async () => {
    await openLive();
    const long = `echo ${"x".repeat(200)}\necho second-line`;
    await shellShown(long);
    const command = page().locator("#audit-rows tbody tr td.command").first();
    const shown = (await command.textContent()) ?? "";
    expect(Array.from(shown)).toHaveLength(120);
    expect(shown.endsWith("…")).toBe(true);
    expect(shown.startsWith(`echo ${"x".repeat(100)}`)).toBe(true);
    expect(await command.getAttribute("title")).toBe(`echo ${"x".repeat(200)} ⏎ echo second-line`);
  });

  it("shows a record after a tampered line as broken at that line", async () => {
    // One byte of the other process's record changes: "echo other-relay-0" becomes "… other-relay-9".
    const lines = readFileSync(world.audit, "utf8").split("\n");
    const at = lines.findIndex((l) => l.includes("other-relay-0"));
    expect(at).toBeGreaterThan(0);
    lines[at] = (lines[at] ?? "").replace("other-relay-0", "other-relay-9");
    writeFileSync(world.audit, lines.join("\n"));
    await openLive();
    await shellShown("echo audit-after-tamper");
    const after = page().locator("#audit-rows tbody tr").first();
    await after.locator("td.chain", { hasText: `broken at line ${at + 1}` }).waitFor();
    await after.click();
    const detail = page().locator("#audit-detail");
    await detail.waitFor({ state: "visible" });
    expect(await detail.textContent()).toContain("audit-after-tamper");
    expect(await page().textContent("#audit-detail-where")).toContain(`broken at line ${at + 1}`);
    await page().click("#audit-detail button");
    // A record before the tampered line still shows verified.
    expect(await page().locator(`#audit-rows tbody tr[data-line="${at}"] td.chain`).textContent()).toBe(
      "verified",
    );
    await page().locator("#audit-chart svg rect").first().waitFor();
    const shot = await browser.screenshot("console-audit");
    const docImage = join(REPO_ROOT, "docs", "images", "console-audit.png");
    if (process.env.RELAY_SHELL_UPDATE_DOC_IMAGES === "1" || !existsSync(docImage)) {
      mkdirSync(dirname(docImage), { recursive: true });
      copyFileSync(shot, docImage);
    }
  });
});
