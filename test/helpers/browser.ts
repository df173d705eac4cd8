import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, type CDPSession, chromium, type Page } from "playwright-core";
import { REPO_ROOT } from "./server.js";

/** Debian's Chromium: the binary itself first, so the wrapper script's extra flags stay out. */
const CHROMIUM_CANDIDATES = ["/usr/lib/chromium/chromium", "/usr/bin/chromium"];
const CHROMIUM = CHROMIUM_CANDIDATES.find((path) => existsSync(path)) ?? null;

/** Why the browser suites cannot run here, or null when they can. */
export const BROWSER_SKIP_REASON: string | null =
  CHROMIUM === null
    ? `Chromium is not installed (looked for ${CHROMIUM_CANDIDATES.join(", ")}; apt-get install chromium)`
    : null;

/** Where the browser suites save their screenshots (gitignored). */
const SCREENSHOT_DIR = join(REPO_ROOT, ".test-results", "screenshots");

export interface TestBrowser {
  context: BrowserContext;
  page: Page;
  /** Save a screenshot of the page as SCREENSHOT_DIR/NAME.png and return its path. */
  screenshot(name: string): Promise<string>;
  close(): Promise<void>;
}

export interface BrowserOptions {
  /** The browser's time zone (IANA name); the machine's when absent. */
  timezoneId?: string;
}

/** Headless Chromium with a fresh profile and one page. */
export async function launchBrowser(options: BrowserOptions = {}): Promise<TestBrowser> {
  if (CHROMIUM === null) throw new Error(BROWSER_SKIP_REASON ?? "no Chromium");
  const profile = mkdtempSync(join(tmpdir(), "relay-console-chrome-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1100, height: 760 },
    ...(options.timezoneId ? { timezoneId: options.timezoneId } : {}),
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  return {
    context,
    page,
    async screenshot(name) {
      const path = join(SCREENSHOT_DIR, `${name}.png`);
      await page.screenshot({ path, fullPage: true });
      return path;
    },
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export interface VirtualAuthenticator {
  cdp: CDPSession;
  id: string;
  /** The credentials it holds (CDP WebAuthn.getCredentials). */
  credentials(): Promise<
    Array<{ credentialId: string; rpId?: string; signCount: number; isResidentCredential: boolean }>
  >;
  remove(): Promise<void>;
}

/**
 * A CTAP2 platform authenticator that verifies the user and answers at once
 * (CDP WebAuthn domain): the browser's passkey prompts need no human.
 */
export async function addVirtualAuthenticator(
  context: BrowserContext,
  page: Page,
): Promise<VirtualAuthenticator> {
  const cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable", { enableUI: false });
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return {
    cdp,
    id: authenticatorId,
    async credentials() {
      const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
      return credentials;
    },
    async remove() {
      await cdp.send("WebAuthn.removeVirtualAuthenticator", { authenticatorId });
    },
  };
}
