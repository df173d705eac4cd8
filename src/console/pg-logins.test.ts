import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manualClock } from "../../test/helpers/clock.js";
import { postgresBackend } from "../../test/helpers/shared-state.js";
import { memoryCounters } from "../consent/index.js";
import { silentLogger, systemClock } from "../core/index.js";
import { openPgState, type PgState } from "../state/index.js";
import { createConsoleApp } from "./app.js";
import { loadAssets } from "./assets.js";
import type { LoginStore } from "./logins.js";
import type { Posture } from "./pages.js";
import { createPgLoginStore } from "./pg-logins.js";

/** Console logins shared by several relays (one pool each) behind one load balancer. */

const ORIGIN = "http://localhost:8765";
const POSTURE: Posture = {
  mode: "open",
  modeText: "every tier is admitted",
  denyList: false,
  allowList: false,
  broker: false,
  consent: { enabled: false, leaseMode: "manual", pending: null },
  audit: { path: "/a", chain: false, failClosed: true, degraded: false, degradedReason: "" },
  warnings: [],
  policies: [],
};

/** One relay's console over a login store: the passkey `alice-laptop` (credential `cred-a`) is enrolled. */
function consoleOf(logins: LoginStore) {
  const key = { name: "alice-laptop", credentialId: "cred-a", publicKey: "", algorithm: -7 as const };
  return createConsoleApp({
    origin: ORIGIN,
    rpId: "localhost",
    sessionTtlSeconds: 900,
    passkeys: { current: () => ({ ok: true, value: [{ ...key, transports: [], created: "" }] }) },
    counters: memoryCounters(),
    logins,
    assets: loadAssets(),
    posture: async () => POSTURE,
    auditPath: "/nonexistent/audit.jsonl",
    sessions: {
      overview: () => [],
      terminate: () => Promise.reject(new Error("none")),
      watch: () => {
        throw new Error("none");
      },
    },
    audit: { append: () => true, reserve: () => true },
    recordDir: "",
    clock: systemClock,
    logger: silentLogger,
  });
}

const page = (app: ReturnType<typeof consoleOf>, cookie: string) =>
  app.request(`${ORIGIN}/console`, {
    headers: { Host: "localhost:8765", Cookie: `relay_console=${cookie}` },
  });

const postgres = postgresBackend();

describe.skipIf(postgres.skip !== null)("console logins across relays", () => {
  let states: PgState[];

  beforeAll(async () => {
    await postgres.start();
    states = await postgres.relays(3);
  }, 120_000);
  afterAll(() => postgres.stop());

  it("holds a login made through one relay on another, and ends it from a third", async () => {
    const clock = manualClock(Date.UTC(2026, 11, 1));
    const [a, b, c] = states.map((state) => createPgLoginStore(state, 900, clock)) as [
      LoginStore,
      LoginStore,
      LoginStore,
    ];
    const { id, login } = await a.create("alice-laptop", "cred-a");
    clock.advance(600_000);
    expect(await b.use(id)).toEqual({ ...login, lastSeenMs: login.createdMs + 600_000 });
    // B's request restarted the idle clock for every relay: A still holds it past A's own last sight.
    clock.advance(600_000);
    expect((await a.use(id))?.csrf).toBe(login.csrf);
    await c.end(id);
    expect(await a.use(id)).toBeNull();
    expect(await b.use(id)).toBeNull();
  });

  it("keeps the digest of the login's cookie, never the cookie", async () => {
    const store = createPgLoginStore(states[0] as PgState, 900, systemClock);
    const { id } = await store.create("alice-laptop", "cred-a");
    const rows = JSON.stringify(
      (await (states[1] as PgState).pool.query("SELECT * FROM console_logins")).rows,
    );
    expect(rows).not.toContain(id);
    expect(rows).toContain(createHash("sha256").update(id).digest("base64url"));
  });

  it("lets the browser's cookie open every relay's pages, until it logs out on one", async () => {
    const apps = states.map((state) => consoleOf(createPgLoginStore(state, 900, systemClock)));
    const { id, login } = await createPgLoginStore(states[0] as PgState, 900, systemClock).create(
      "alice-laptop",
      "cred-a",
    );
    for (const app of apps) {
      const shown = await page(app, id);
      expect(shown.status).toBe(200);
      expect(await shown.text()).toContain(login.csrf);
    }
    const out = await (apps[2] as ReturnType<typeof consoleOf>).request(`${ORIGIN}/console/logout`, {
      method: "POST",
      headers: {
        Host: "localhost:8765",
        Origin: ORIGIN,
        Cookie: `relay_console=${id}`,
        "X-CSRF-Token": login.csrf,
      },
    });
    expect(out.status).toBe(303);
    const after = await page(apps[0] as ReturnType<typeof consoleOf>, id);
    expect(after.status).toBe(303);
    expect(after.headers.get("location")).toBe("/console/login");
  });
});

describe("a login store that cannot be used", () => {
  it("answers 503 with one line, and says why in the relay's log", async () => {
    const opened = openPgState("postgres://relay:pw-secret@127.0.0.1:1/relay", {
      instance: "t",
      connectTimeoutMs: 1000,
    });
    if (!opened.ok) throw new Error(opened.error.detail);
    const store = createPgLoginStore(opened.value, 900, systemClock);
    try {
      await expect(store.use("abc")).rejects.toThrow(
        "the console's login store cannot be used: PostgreSQL at 127.0.0.1:1 is unreachable (ECONNREFUSED)",
      );
      const answer = await page(consoleOf(store), "abc");
      expect(answer.status).toBe(503);
      expect(await answer.json()).toEqual({
        error: "The console's logins cannot be read now; see the relay's log",
      });
    } finally {
      await opened.value.close();
    }
  });
});
