import { createHash } from "node:crypto";
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from "@simplewebauthn/server";
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyRegistrationResponse,
} from "@simplewebauthn/server";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSqliteStore } from "../../src/consent/index.js";
import { cryptoIds, systemClock } from "../../src/core/index.js";
import {
  CONSENT_SKIP_REASON,
  type ConsentRelay,
  type ConsentWorld,
  consentId,
  createConsentWorld,
} from "../helpers/consent.js";

/**
 * A passkey approval of a consent request, cross-checked with a real
 * browser: Chromium with a CDP virtual authenticator registers a passkey on
 * a page this test serves at http://localhost:PORT, the operator's passkeys
 * file gets its line, and the browser signs an assertion whose challenge is
 * sha256 of the payload the built server made for a real call. The relay
 * runs as an account of its own; the command under test only appends to a
 * canary file in the world's work directory.
 */
const CHROMIUM = ["/usr/lib/chromium/chromium", "/usr/bin/chromium"].find((p) => existsSync(p)) ?? null;
const SKIP =
  CONSENT_SKIP_REASON ?? (CHROMIUM ? null : "Chromium is not installed (apt-get install chromium)");
if (SKIP) process.stderr.write(`[skipped] consent passkey e2e: ${SKIP}\n`);

const require = createRequire(import.meta.url);
const BROWSER_BUNDLE = join(
  resolve(dirname(require.resolve("@simplewebauthn/browser")), ".."),
  "dist",
  "bundle",
  "index.umd.min.js",
);

const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>passkey</title>
<script src="/simplewebauthn-browser.js"></script></head><body>passkey</body></html>`;

/** The page's origin server: one HTML page and the browser half of SimpleWebAuthn. */
async function servePage(): Promise<{ server: Server; origin: string }> {
  const bundle = readFileSync(BROWSER_BUNDLE);
  const server = createServer((req, res) => {
    if (req.url === "/simplewebauthn-browser.js") {
      res.writeHead(200, { "content-type": "text/javascript" }).end(bundle);
    } else {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(PAGE);
    }
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return { server, origin: `http://localhost:${address.port}` };
}

function b64url(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64url");
}

function canaryLines(path: string): number {
  return existsSync(path)
    ? readFileSync(path, "utf8")
        .split("\n")
        .filter((l) => l !== "").length
    : 0;
}

describe.skipIf(SKIP !== null)("a passkey approval through the built server and a real browser", () => {
  let world: ConsentWorld;
  let relay: ConsentRelay;
  let page: Page;
  let context: BrowserContext;
  let site: { server: Server; origin: string };
  let profile: string;
  let credentialId: string;
  const canary = () => join(world.work, "passkey-canary.txt");

  /** Open the store as the relay's account would, and hand SQLite's side files back to it after. */
  async function withStore<T>(use: (store: ReturnType<typeof openStore>) => Promise<T>): Promise<T> {
    const store = openStore();
    try {
      return await use(store);
    } finally {
      await store.close();
      for (const sidecar of [`${world.db}-wal`, `${world.db}-shm`]) {
        if (existsSync(sidecar)) chownSync(sidecar, world.user.uid, world.user.gid);
      }
    }
  }
  function openStore() {
    const opened = openSqliteStore(world.db, {
      clock: systemClock,
      ids: cryptoIds,
      busyTimeoutMs: 2000,
      euid: world.user.uid,
    });
    if (!opened.ok) throw new Error(opened.error.detail);
    return opened.value;
  }

  /** The browser signs a WebAuthn assertion whose challenge is the 32 bytes of sha256(payload). */
  async function assertOver(payload: string): Promise<AuthenticationResponseJSON> {
    const challenge = new Uint8Array(createHash("sha256").update(payload, "utf8").digest());
    const optionsJSON = await generateAuthenticationOptions({
      rpID: "localhost",
      challenge,
      userVerification: "required",
      allowCredentials: [{ id: credentialId }],
    });
    return page.evaluate(
      (options) =>
        (
          globalThis as unknown as {
            SimpleWebAuthnBrowser: { startAuthentication(o: unknown): Promise<AuthenticationResponseJSON> };
          }
        ).SimpleWebAuthnBrowser.startAuthentication({ optionsJSON: options }),
      optionsJSON,
    );
  }

  function proofOf(response: AuthenticationResponseJSON): Record<string, string | null> {
    return {
      credential_id: response.id,
      authenticator_data: response.response.authenticatorData,
      client_data_json: response.response.clientDataJSON,
      signature: response.response.signature,
      user_handle: response.response.userHandle ?? null,
    };
  }

  async function approveWith(id: string, proof: Record<string, string | null>): Promise<void> {
    await withStore(async (store) => {
      const approved = await store.approve(id, {
        channel: "passkey",
        proof: JSON.stringify(proof),
        claimedSigner: "alice-laptop",
        at: Date.now(),
      });
      if (!approved.ok) throw new Error(approved.error.detail);
    });
  }

  async function payloadOf(id: string): Promise<string> {
    return withStore(async (store) => {
      const request = await store.getRequest(id);
      if (!request.ok) throw new Error(request.error.detail);
      return request.value.payload;
    });
  }

  beforeAll(async () => {
    world = createConsentWorld();
    site = await servePage();
    profile = mkdtempSync(join(tmpdir(), "chrome-profile-"));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM as string,
      headless: true,
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
    page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`${site.origin}/`);
    const cdp = await context.newCDPSession(page);
    await cdp.send("WebAuthn.enable", { enableUI: false });
    await cdp.send("WebAuthn.addVirtualAuthenticator", {
      options: {
        protocol: "ctap2",
        transport: "internal",
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true,
      },
    });

    // Enrolment, as the operator's own ceremony would do it: register, then append the line.
    const optionsJSON = await generateRegistrationOptions({
      rpName: "relay-shell",
      rpID: "localhost",
      userName: "alice",
      attestationType: "none",
      supportedAlgorithmIDs: [-7],
      authenticatorSelection: { residentKey: "required", userVerification: "required" },
    });
    const registration = await page.evaluate(
      (options) =>
        (
          globalThis as unknown as {
            SimpleWebAuthnBrowser: { startRegistration(o: unknown): Promise<RegistrationResponseJSON> };
          }
        ).SimpleWebAuthnBrowser.startRegistration({ optionsJSON: options }),
      optionsJSON,
    );
    const verified = await verifyRegistrationResponse({
      response: registration,
      expectedChallenge: optionsJSON.challenge,
      expectedOrigin: site.origin,
      expectedRPID: "localhost",
      requireUserVerification: true,
    });
    if (!verified.verified) throw new Error("the registration did not verify");
    const credential = verified.registrationInfo.credential;
    credentialId = credential.id;
    const passkeys = join(dirname(world.allowedSigners), "passkeys");
    writeFileSync(
      passkeys,
      `# the operator's passkeys\n${JSON.stringify({
        name: "alice-laptop",
        credential_id: credential.id,
        public_key: b64url(credential.publicKey),
        algorithm: -7,
        transports: credential.transports ?? [],
        created: new Date().toISOString(),
      })}\n`,
      { mode: 0o644 },
    );
    relay = await world.startRelay({
      RELAY_SHELL_CONSOLE_PASSKEYS: passkeys,
      RELAY_SHELL_CONSOLE_RP_ID: "localhost",
      RELAY_SHELL_CONSOLE_ORIGIN: site.origin,
    });
  }, 120_000);

  afterAll(async () => {
    await relay?.close();
    await context?.close();
    if (site) await new Promise((done) => site.server.close(done));
    if (profile) rmSync(profile, { recursive: true, force: true });
    world?.cleanup();
  });

  const call = (text = "ran") =>
    relay.call("shell_exec", { command: `echo ${text} >> ${canary()}`, cwd: world.work });

  it("runs the re-issued call exactly once on a passkey assertion over its payload", async () => {
    const asked = await call();
    const id = consentId(asked.text);
    await approveWith(id, proofOf(await assertOver(await payloadOf(id))));
    expect(canaryLines(canary())).toBe(0);

    const ran = await call();
    expect(ran.text).toMatch(/^\[exit 0\]/);
    expect(canaryLines(canary())).toBe(1);
    const again = await call();
    expect(again.text).toMatch(/^\[CONSENT REQUIRED id=/);
    expect(canaryLines(canary())).toBe(1);

    const executed = world.records().filter((r) => r.action === "consent_execute");
    expect((executed.at(-1)?.args as { consent?: unknown } | undefined)?.consent).toEqual({
      request: id,
      approver: "alice-laptop",
      key: `passkey:${credentialId}`,
      channel: "passkey",
    });
  }, 120_000);

  it("shows the passkey channel in server_info", async () => {
    const info = JSON.parse((await relay.call("server_info")).text) as { consent?: Record<string, unknown> };
    expect(info.consent?.passkeys).toEqual({
      file: join(dirname(world.allowedSigners), "passkeys"),
      rp_id: "localhost",
      origin: site.origin,
    });
  });

  it("refuses a tampered assertion and one made for another act", async () => {
    const before = canaryLines(canary());
    const first = consentId((await call()).text);
    const proof = proofOf(await assertOver(await payloadOf(first)));
    const signature = Buffer.from(proof.signature as string, "base64url");
    signature[signature.length - 1] = (signature[signature.length - 1] ?? 0) ^ 0x01;
    await approveWith(first, { ...proof, signature: signature.toString("base64url") });
    // An assertion that does not verify counts as none: the act still waits for a valid one.
    const tampered = await call();
    expect(consentId(tampered.text)).toBe(first);
    expect(tampered.text).toContain(
      `Request ${first} still waits for a valid approval: its stored approval does not verify`,
    );
    expect(tampered.text).toContain("the signature does not verify with passkey alice-laptop");

    // A genuine assertion, but over the payload of another request: its challenge does not match.
    const second = consentId((await call("moved")).text);
    const other = consentId(
      (await relay.call("shell_exec", { command: "echo other", cwd: world.work })).text,
    );
    await approveWith(second, proofOf(await assertOver(await payloadOf(other))));
    const moved = await call("moved");
    expect(moved.text).toContain("the assertion's challenge is not the digest of this act's payload");
    expect(canaryLines(canary())).toBe(before);
  }, 120_000);

  it("refuses to start on a passkeys file the relay could write", async () => {
    const passkeys = join(dirname(world.allowedSigners), "passkeys");
    const owned = join(dirname(world.allowedSigners), "passkeys-owned");
    writeFileSync(owned, readFileSync(passkeys), { mode: 0o644 });
    chownSync(owned, world.user.uid, world.user.gid);
    await expect(
      world.startRelay({ RELAY_SHELL_CONSOLE_PASSKEYS: owned, RELAY_SHELL_CONSOLE_ORIGIN: site.origin }),
    ).rejects.toThrow(/the passkeys file cannot be used: .*is owned by the relay's own uid/);
  }, 120_000);
});
