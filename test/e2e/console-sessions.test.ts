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
if (SKIP) console.warn(`console sessions suite skipped: ${SKIP}`);

/** Keep a screenshot the docs use (docs/images/NAME.png) when it is missing or asked for. */
function keepForDocs(shot: string, name: string): void {
  const docImage = join(REPO_ROOT, "docs", "images", `${name}.png`);
  if (process.env.RELAY_SHELL_UPDATE_DOC_IMAGES === "1" || !existsSync(docImage)) {
    mkdirSync(dirname(docImage), { recursive: true });
    copyFileSync(shot, docImage);
  }
}

interface ToolAnswer {
  text: string;
  structured: Record<string, unknown>;
}

describe.skipIf(SKIP !== null)("the console's sessions page (built server, real Chromium)", () => {
  let world: ConsoleWorld;
  let browser: TestBrowser;
  let relay: ConsoleRelay;
  let port: number;
  let base: string;
  let records: string;
  let sessionId = "";
  const violations: string[] = [];

  beforeAll(async () => {
    world = createConsoleWorld();
    records = join(world.home, "records");
    browser = await launchBrowser();
    port = await freePort();
    base = `http://localhost:${port}`;
    await addVirtualAuthenticator(browser.context, browser.page);
    const enrolment = await startEnrolment(["--name", "alice-laptop", "--passkeys", world.passkeys]);
    expect(await enrolInBrowser(browser.page, enrolment)).toContain("Enrolled");
    expect((await enrolment.done).status).toBe(0);
    relay = await startStdioRelay(world, {
      RELAY_SHELL_CONSOLE_PORT: String(port),
      RELAY_SHELL_SESSION_RECORD_DIR: records,
      RELAY_SHELL_AUDIT_CHAIN: "true",
    });
    expect(await loginInBrowser(browser.page, base)).toBe("logged in");
    // Chromium reports a content-policy refusal as a browser log entry and as an issue of the page
    // (DevTools protocol), not as a console call of the page's own script.
    const cdp = await browser.context.newCDPSession(browser.page);
    cdp.on("Log.entryAdded", ({ entry }) => {
      if (entry.source === "violation" || /Refused to|Content Security Policy/i.test(entry.text))
        violations.push(entry.text);
    });
    cdp.on("Audits.issueAdded", ({ issue }) => {
      if (issue.code === "ContentSecurityPolicyIssue") violations.push(JSON.stringify(issue.details));
    });
    await cdp.send("Log.enable");
    await cdp.send("Audits.enable");
    browser.page.on("pageerror", (error) => violations.push(`page error: ${error.message}`));
  }, 120_000);
  afterAll(async () => {
    await relay?.close();
    await browser?.close();
    world?.cleanup();
  });

  const page = () => browser.page;

  async function call(name: string, args: Record<string, unknown>): Promise<ToolAnswer> {
    const result = await relay.client.callTool({ name, arguments: args });
    const content = result.content as Array<{ type: string; text?: string }>;
    return {
      text: content.map((c) => c.text ?? "").join(""),
      structured: (result.structuredContent ?? {}) as Record<string, unknown>,
    };
  }

  /** Read the session through MCP until `marker` has been printed. */
  async function readUntil(marker: string): Promise<string> {
    let seen = "";
    for (let i = 0; i < 40 && !seen.includes(marker); i++) {
      seen += (await call("session_recv", { session_id: sessionId, timeout: 0.5 })).text;
    }
    expect(seen).toContain(marker);
    return seen;
  }

  it("lists a live session with its owner, command, size, idle time and bytes", async () => {
    const spawned = await call("shell_spawn", { command: "bash --norc --noprofile", cols: 100, rows: 30 });
    sessionId = String(spawned.structured.session_id ?? "");
    expect(sessionId).toMatch(/^sh-[0-9a-f]{12}$/);
    expect(spawned.structured.recording).toBe(join(records, `${sessionId}.cast`));
    // The arithmetic is done by the shell: the result is output, not the echo of the keystrokes.
    await call("session_send", { session_id: sessionId, data: "echo first-$((40+2))\n" });
    await readUntil("first-42");

    await page().goto(`${base}/console`);
    await page().click("#nav-sessions");
    const row = page().locator(`#session-${sessionId}`);
    await row.waitFor();
    const cells = (await row.locator("td").allTextContents()).map((t) => t.trim());
    expect(cells[0]).toBe(sessionId);
    expect(cells[1]).toBe("local");
    // Over stdio the one client is not named: its sessions are open to any client of this relay.
    expect(cells[2]).toBe("(any client)");
    expect(cells[3]).toBe("bash --norc --noprofile");
    expect(cells[4]).toBe("100x30");
    expect(cells[5]).toMatch(/^\d+(\.\d)? s$/);
    expect(cells[6]).toMatch(/^\d+(\.\d)? (B|KiB)$/);
    expect(cells[6]).not.toBe("0 B");
    expect(cells[7]).toMatch(/^\d+ B$/);
    expect(cells[7]).not.toBe("0 B");
    // Its recording is listed while it is written, with the last write in local time and UTC on hover.
    const written = page().locator(`#recording-${sessionId} td.time`);
    await written.waitFor();
    expect(await written.textContent()).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    expect(await written.getAttribute("title")).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
  });

  it("keeps a session's id, size, idle time and byte counts on one line however narrow the window", async () => {
    await page().setViewportSize({ width: 480, height: 760 });
    try {
      await page().goto(`${base}/console/sessions`);
      const row = page().locator(`#session-${sessionId}`);
      await row.waitFor();
      for (const index of [0, 4, 5, 6, 7]) {
        const cell = row.locator("td").nth(index);
        // Run in the page (no DOM types here): the cell's white-space, and the lines its text takes.
        const [whiteSpace, lines] = await cell.evaluate((el) => {
          const page = globalThis as unknown as {
            getComputedStyle(e: unknown): { whiteSpace: string };
            document: {
              createRange(): {
                selectNodeContents(n: unknown): void;
                getClientRects(): ArrayLike<{ top: number }>;
              };
            };
          };
          const range = page.document.createRange();
          range.selectNodeContents(el);
          const tops = new Set(Array.from(range.getClientRects(), (box) => Math.round(box.top)));
          return [page.getComputedStyle(el).whiteSpace, tops.size] as const;
        });
        expect(whiteSpace, `column ${index}`).toBe("nowrap");
        expect(lines, `column ${index}`).toBe(1);
      }
    } finally {
      await page().setViewportSize({ width: 1100, height: 760 });
    }
  });

  it("follows the live session read-only: the screen so far, then what it prints next", async () => {
    await page().goto(`${base}/console/sessions`);
    await page().click(`#follow-${sessionId}`);
    expect(new URL(page().url()).pathname).toBe(`/console/sessions/${sessionId}/follow`);
    // The screen before the follow began comes from the recording.
    await page().locator("#player .ap-line", { hasText: "first-42" }).first().waitFor();
    await call("session_send", { session_id: sessionId, data: "echo later-$((50+5))\n" });
    await page().locator("#player .ap-line", { hasText: "later-55" }).first().waitFor();
    // The follow took nothing: the owner reads the same output.
    await readUntil("later-55");
    keepForDocs(await browser.screenshot("console-follow"), "console-follow");
  });

  it("a follow whose login ends says so in the relay's words, and keeps the screen it showed", async () => {
    await page().goto(`${base}/console/sessions/${sessionId}/follow`);
    await page().locator("#player .ap-line", { hasText: "later-55" }).first().waitFor();
    await page().locator("#player-status", { hasText: "Following" }).waitFor();
    // The operator logs out in another tab: the follow's next check of the login ends it.
    const cookie = (await browser.context.cookies()).find((c) => c.name === "relay_console");
    const csrf = (await page().getAttribute('meta[name="csrf-token"]', "content")) ?? "";
    const out = await rawRequest(
      port,
      "POST",
      "/console/logout",
      {
        Host: `localhost:${port}`,
        Origin: base,
        Cookie: `relay_console=${cookie?.value ?? ""}`,
        "Content-Type": "application/x-www-form-urlencoded",
      },
      `csrf=${encodeURIComponent(csrf)}`,
    );
    expect(out.status).toBe(303);
    await page().locator("#player[data-state=ended]").waitFor({ timeout: 40_000 });
    const said = (await page().textContent("#player-status")) ?? "";
    expect(said).toContain("The follow has ended: your login ended");
    expect(said).not.toContain("session ended");
    // The screen is as it was: the output is there and nothing covers it.
    await page().locator("#player .ap-line", { hasText: "later-55" }).first().waitFor();
    for (const overlay of ["info", "error", "loading", "start"])
      expect(await page().locator(`#player .ap-overlay-${overlay}`).count(), overlay).toBe(0);
    expect(await loginInBrowser(page(), base)).toBe("logged in");
  }, 90_000);

  it("a follow of a session that ends says so", async () => {
    const spawned = await call("shell_spawn", { command: "bash --norc --noprofile", cols: 80, rows: 24 });
    const other = String(spawned.structured.session_id ?? "");
    await page().goto(`${base}/console/sessions/${other}/follow`);
    await page().locator("#player-status", { hasText: "Following" }).waitFor();
    await call("session_send", { session_id: other, data: "echo last-$((6*7)); exit 3\n" });
    await page().locator("#player[data-state=ended]").waitFor({ timeout: 20_000 });
    expect(await page().textContent("#player-status")).toContain("The follow has ended: the session ended");
    await page().locator("#player .ap-line", { hasText: "last-42" }).first().waitFor();
    await call("session_kill", { session_id: other, close: true }).catch(() => undefined);
  });

  it("refuses the follow stream and the recordings without a login", async () => {
    const host = { Host: `localhost:${port}` };
    expect((await rawRequest(port, "GET", `/console/sessions/${sessionId}/stream`, host)).status).toBe(401);
    expect((await rawRequest(port, "GET", `/console/recordings/${sessionId}.cast/cast`, host)).status).toBe(
      401,
    );
    expect((await rawRequest(port, "GET", "/console/sessions/list", host)).status).toBe(401);
  });

  it("kills the session as the operator, and the kill is in the audit log under the passkey's name", async () => {
    await page().goto(`${base}/console/sessions`);
    const row = page().locator(`#session-${sessionId}`);
    await row.waitFor();
    keepForDocs(await browser.screenshot("console-sessions"), "console-sessions");
    page().once("dialog", (dialog) => void dialog.accept());
    await row.locator("button.kill").click();
    await page()
      .locator("#sessions-status", { hasText: `Killed ${sessionId}` })
      .waitFor();
    expect(await page().textContent("#sessions-status")).toContain(
      "written to the audit log as alice-laptop",
    );
    await row.waitFor({ state: "detached" });
    // The client that owned it finds it gone.
    const after = await call("session_recv", { session_id: sessionId, timeout: 0 });
    expect(after.text).toContain(`unknown session: ${sessionId}`);
    const records = readFileSync(world.audit, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const kill = records.find((r) => r.action === "operator_kill");
    expect(kill).toMatchObject({
      tool: "session_kill",
      tier: 1,
      denied: false,
      client_id: "console",
      args: {
        session_id: sessionId,
        signal_name: "TERM",
        close: true,
        operator: { channel: "console", passkey: "alice-laptop" },
      },
    });
  });

  it("plays the session's recording back", async () => {
    await page().goto(`${base}/console/sessions`);
    await page().click(`#play-${sessionId}`);
    expect(new URL(page().url()).pathname).toBe(`/console/recordings/${sessionId}.cast`);
    await page().locator("#player[data-state=ended]").waitFor({ timeout: 20_000 });
    await page().locator("#player .ap-line", { hasText: "later-55" }).first().waitFor();
    expect(await page().textContent("#player-status")).toBe("Played to the end.");
    keepForDocs(await browser.screenshot("console-recording"), "console-recording");
  });

  it("ran the player and the pages without a single content-policy violation", () => {
    expect(violations).toEqual([]);
  });
});
