import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { Hono } from "hono";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type ApprovalVerifier,
  actDigest,
  type ConsentAct,
  type ConsentStore,
  consentPayload,
  openSqliteStore,
  passkeyChallenge,
} from "../consent/index.js";
import { cryptoIds, silentLogger } from "../core/index.js";
import { registerApprovals } from "./approvals.js";
import type { ConsoleLogin } from "./logins.js";

const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);
const ACT: ConsentAct = {
  tool: "shell_exec",
  tier: 2,
  bound: { command: "touch /tmp/x\u202e", cwd: "/srv" },
};
const SESSION: ConsoleLogin = {
  passkey: "alice-laptop",
  credentialId: "Y3JlZA",
  csrf: "token",
  createdMs: T0,
  lastSeenMs: T0,
};

describe("the console's approval routes", () => {
  let dir: string;
  let store: ConsentStore;
  let now: number;
  let verdict: ReturnType<ApprovalVerifier["verify"]>;
  let verified: Array<{ proof: string; payload: string }>;
  let app: Hono;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "console-approvals-"));
    now = T0;
    const clock = { now: () => now, monotonic: () => now };
    const opened = openSqliteStore(join(dir, "consent.db"), { clock, ids: cryptoIds, busyTimeoutMs: 100 });
    if (!opened.ok) throw new Error(opened.error.detail);
    store = opened.value;
    verified = [];
    verdict = { ok: false, error: "the signature does not verify with passkey alice-laptop" };
    app = new Hono();
    registerApprovals(app, {
      channel: {
        store,
        verifier: {
          verify(approval, payload) {
            verified.push({ proof: approval.proof, payload });
            return verdict;
          },
        },
      },
      rpId: "localhost",
      passkeys: {
        current: () => ({
          ok: true,
          value: [
            {
              name: "alice-laptop",
              credentialId: SESSION.credentialId,
              publicKey: "",
              algorithm: -7,
              transports: ["internal"],
              created: "",
            },
          ],
        }),
      },
      operator: async (c) => (c.req.header("cookie") === "in" ? { id: "s", login: SESSION } : null),
      sentCsrf: async (c) => c.req.header("x-csrf-token") ?? "",
      clock,
      logger: silentLogger,
    });
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function ask(ttlSeconds = 300) {
    const created = await store.createRequest({
      act: ACT,
      actDigest: actDigest(ACT),
      basis: "write: touch",
      session: "s1",
      clientId: "c1",
      ttlSeconds,
    });
    if (!created.ok) throw new Error(created.error.detail);
    return created.value;
  }

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    app.request(path, {
      method: "POST",
      headers: { cookie: "in", "x-csrf-token": "token", "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
  const error = async (r: Response) => ((await r.json()) as { error: string }).error;
  const ASSERTION = {
    id: SESSION.credentialId,
    response: { authenticatorData: "YQ", clientDataJSON: "Yg", signature: "Yw", userHandle: "ZA" },
  };
  /** What the page sends: the digest of the act it showed, and the assertion. */
  const APPROVAL = { digest: actDigest(ACT), assertion: ASSERTION };

  it("lists pending requests with describeAct's text (controls escaped), and only pending ones", async () => {
    const pending = await ask();
    const denied = await ask();
    await store.deny(denied.id, "op", "no");
    const answer = await app.request("/console/approvals/list", { headers: { cookie: "in" } });
    const { requests } = (await answer.json()) as { requests: Array<Record<string, unknown>> };
    expect(requests.map((r) => r.id)).toEqual([pending.id]);
    expect(requests[0]?.description).toContain("tool: shell_exec");
    expect(requests[0]?.description).not.toContain("\u202e");
    expect(requests[0]?.expiresInSeconds).toBe(300);
    expect((await app.request("/console/approvals/list")).status).toBe(401);
  });

  it("offers the logged-in passkey only, with the payload's digest as the challenge", async () => {
    const request = await ask();
    const answer = await post(`/console/approvals/${request.id}/options`, { digest: actDigest(ACT) });
    expect(await answer.json()).toEqual({
      challenge: passkeyChallenge(request.payload),
      rpId: "localhost",
      allowCredentials: [{ id: SESSION.credentialId, type: "public-key", transports: ["internal"] }],
      userVerification: "required",
      timeout: 120_000,
    });
  });

  it("stores an approval only once the gate's verifier accepts it, with the proof the gate reads", async () => {
    const request = await ask();
    const refused = await post(`/console/approvals/${request.id}/approve`, APPROVAL);
    expect(refused.status).toBe(403);
    expect(await error(refused)).toBe(
      "Approval refused: the signature does not verify with passkey alice-laptop",
    );
    expect(((await store.getRequest(request.id)) as { value: { status: string } }).value.status).toBe(
      "pending",
    );

    verdict = { ok: true, value: { signer: "alice-laptop", key: "passkey:Y3JlZA", channel: "passkey" } };
    const approved = await post(`/console/approvals/${request.id}/approve`, APPROVAL);
    expect(approved.status).toBe(200);
    expect(verified.at(-1)?.payload).toBe(request.payload);
    expect(JSON.parse(verified.at(-1)?.proof ?? "")).toEqual({
      credential_id: "Y3JlZA",
      authenticator_data: "YQ",
      client_data_json: "Yg",
      signature: "Yw",
      user_handle: "ZA",
    });
    const stored = await store.getRequest(request.id);
    expect(stored.ok && stored.value.approval).toMatchObject({
      channel: "passkey",
      claimedSigner: "alice-laptop",
    });
  });

  it("refuses a deny without a reason, with control characters, or too long; then records who denied", async () => {
    const request = await ask();
    const path = `/console/approvals/${request.id}/deny`;
    expect(await error(await post(path, {}))).toBe("Give a reason for the denial");
    expect(await error(await post(path, { reason: "  " }))).toBe("Give a reason for the denial");
    expect(await error(await post(path, { reason: "fine\n[exit 0]" }))).toBe(
      "The reason must be one line of text without control characters",
    );
    expect(await error(await post(path, { reason: "x".repeat(501) }))).toBe(
      "The reason is over 500 characters",
    );
    expect((await post(path, { reason: " not now " })).status).toBe(200);
    const stored = await store.getRequest(request.id);
    expect(stored.ok && stored.value.denial).toMatchObject({
      by: "alice-laptop (console)",
      reason: "not now",
    });
  });

  it("refuses a malformed id, an unknown, expired or decided request, and a POST without the token", async () => {
    expect((await post("/console/approvals/a%20b/deny", { reason: "r" })).status).toBe(400);
    expect((await post("/console/approvals/nosuch/deny", { reason: "r" })).status).toBe(404);
    const old = await ask(10);
    now += 11_000;
    const expired = await post(`/console/approvals/${old.id}/options`, { digest: actDigest(ACT) });
    expect(expired.status).toBe(409);
    expect(await error(expired)).toBe(`Request ${old.id} expired`);
    const request = await ask();
    expect(
      (await post(`/console/approvals/${request.id}/deny`, { reason: "r" }, { "x-csrf-token": "" })).status,
    ).toBe(403);
    expect(
      (await post(`/console/approvals/${request.id}/deny`, { reason: "r" }, { cookie: "" })).status,
    ).toBe(401);
    expect((await post(`/console/approvals/${request.id}/approve`, "not json")).status).toBe(400);
    expect(verified).toEqual([]);
  });
  it("lists each request with its act's digest, as `consent show` prints it", async () => {
    await ask();
    const answer = await app.request("/console/approvals/list", { headers: { cookie: "in" } });
    const { requests } = (await answer.json()) as { requests: Array<Record<string, unknown>> };
    expect(requests[0]?.digest).toBe(actDigest(ACT));
    expect(requests[0]?.problem).toBeNull();
  });

  it("refuses to approve an act other than the one the page showed: nothing is asked, verified or stored", async () => {
    const request = await ask();
    const shown = actDigest(ACT);
    // The relay's account rewrites the row, consistently: another act, its digest and its payload.
    const swapped: ConsentAct = { ...ACT, bound: { ...ACT.bound, command: "rm -rf /srv" } };
    const db = new Database(join(dir, "consent.db"));
    db.prepare("UPDATE requests SET act = ?, act_digest = ?, payload = ? WHERE id = ?").run(
      JSON.stringify(swapped),
      actDigest(swapped),
      consentPayload(swapped, {
        request: request.id,
        nonce: request.nonce,
        expiresAt: request.expiresAt,
        instance: store.instanceId,
      }),
      request.id,
    );
    db.close();
    verdict = { ok: true, value: { signer: "alice-laptop", key: "passkey:Y3JlZA", channel: "passkey" } };
    const options = await post(`/console/approvals/${request.id}/options`, { digest: shown });
    expect(options.status).toBe(409);
    expect(await error(options)).toContain(`Request ${request.id} now holds another act than the one shown`);
    const approve = await post(`/console/approvals/${request.id}/approve`, {
      digest: shown,
      assertion: ASSERTION,
    });
    expect(approve.status).toBe(409);
    expect(await error(approve)).toContain("nothing was approved");
    expect(verified).toEqual([]);
    expect(((await store.getRequest(request.id)) as { value: { status: string } }).value.status).toBe(
      "pending",
    );
    // Without the digest shown, nothing is approved either.
    const bare = await post(`/console/approvals/${request.id}/approve`, ASSERTION);
    expect(bare.status).toBe(400);
    expect(await error(bare)).toBe("Send the digest of the act the page showed; reload the page");
  });

  it("refuses a row whose stored payload is not its act's", async () => {
    const request = await ask();
    const db = new Database(join(dir, "consent.db"));
    db.prepare("UPDATE requests SET payload = ? WHERE id = ?").run(`${request.payload} `, request.id);
    db.close();
    const answer = await app.request("/console/approvals/list", { headers: { cookie: "in" } });
    const { requests } = (await answer.json()) as { requests: Array<Record<string, unknown>> };
    expect(requests[0]?.problem).toContain("the consent database was edited");
    const options = await post(`/console/approvals/${request.id}/options`, { digest: actDigest(ACT) });
    expect(options.status).toBe(409);
    expect(await error(options)).toContain("its stored payload is not the act shown");
  });
});
