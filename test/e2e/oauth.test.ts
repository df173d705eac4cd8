import { type ChildProcess, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildServer } from "../../src/cli/build.js";
import { loadSettings } from "../../src/config/index.js";
import { silentLogger } from "../../src/core/index.js";
import { createHttpEdge, type HttpEdge } from "../../src/server/http-edge.js";
import { baseEnv, SERVER_ENTRY, spawnHttpServer } from "../helpers/server.js";

const REDIRECT = "http://127.0.0.1:33418/callback";
const LOCKDOWN = "Dynamic client registration is closed (single-client lockdown).";

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

interface AuthServer {
  base: string;
  child: ChildProcess;
  auditPath: string;
  stop(): Promise<void>;
}

async function startAuthServer(
  dir: string,
  port: number,
  settings: Record<string, string> = {},
): Promise<AuthServer> {
  const auditPath = join(dir, "audit.jsonl");
  const { child } = await spawnHttpServer(dir, port, {
    RELAY_SHELL_AUTH_ENABLED: "true",
    RELAY_SHELL_AUTH_ISSUER: `http://127.0.0.1:${port}`,
    RELAY_SHELL_AUTH_STATE_DIR: join(dir, "oauth"),
    RELAY_SHELL_AUDIT_PATH: auditPath,
    ...settings,
  });
  return {
    base: `http://127.0.0.1:${port}`,
    child,
    auditPath,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

/** A source address per test, so the failure throttle of one test never touches another. */
let sourceCounter = 10;
const nextSource = () => ({ "X-Forwarded-For": `198.51.100.${sourceCounter++}` });

async function authorize(
  base: string,
  clientId: string,
  challenge: string,
  extra: Record<string, string> = {},
) {
  const query = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: challenge,
    code_challenge_method: "S256",
    state: "st-1",
    ...extra,
  });
  const r = await fetch(`${base}/authorize?${query}`, { redirect: "manual" });
  const location = new URL(r.headers.get("location") ?? "http://missing/");
  return { status: r.status, location, code: location.searchParams.get("code") ?? "" };
}

async function post(
  base: string,
  path: string,
  form: Record<string, string>,
  headers: Record<string, string> = {},
) {
  const r = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(form).toString(),
  });
  const text = await r.text();
  return {
    status: r.status,
    body: (text ? JSON.parse(text) : {}) as Record<string, unknown>,
    headers: r.headers,
  };
}

async function mcpWith(base: string, token: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: "oauth-tests", version: "1" });
  await client.connect(transport);
  return client;
}

async function mcpStatus(base: string, authorization: string | null, headers: Record<string, string> = {}) {
  const r = await fetch(`${base}/mcp`, {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      ...(authorization === null ? {} : { Authorization: authorization }),
      ...headers,
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
    }),
  });
  await r.body?.cancel();
  return { status: r.status, challenge: r.headers.get("www-authenticate") ?? "" };
}

/** An MCP client's OAuth side, as a desktop client would keep it (in memory here). */
class MemoryProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = "";
  authUrl: URL | undefined;
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "sdk-client",
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "client_secret_basic",
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

describe("OAuth 2.1 over HTTP (built server)", () => {
  let dir: string;
  let port: number;
  let server: AuthServer;
  const sdk = new MemoryProvider();
  let clientId = "";
  let clientSecret = "";

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "relay-shell-oauth-e2e-"));
    port = await freePort();
    server = await startAuthServer(dir, port);
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("publishes the authorization-server and protected-resource metadata", async () => {
    const as = (await (
      await fetch(`${server.base}/.well-known/oauth-authorization-server`)
    ).json()) as Record<string, unknown>;
    expect(as).toMatchObject({
      issuer: `${server.base}/`,
      authorization_endpoint: `${server.base}/authorize`,
      token_endpoint: `${server.base}/token`,
      registration_endpoint: `${server.base}/register`,
      revocation_endpoint: `${server.base}/revoke`,
      code_challenge_methods_supported: ["S256"],
      scopes_supported: ["mcp:tools"],
    });
    for (const path of [
      "/.well-known/oauth-protected-resource",
      "/.well-known/oauth-protected-resource/mcp",
    ]) {
      const prm = (await (await fetch(`${server.base}${path}`)).json()) as Record<string, unknown>;
      expect(prm).toMatchObject({ resource: `${server.base}/`, authorization_servers: [`${server.base}/`] });
    }
    const bare = await mcpStatus(server.base, null);
    expect(bare.status).toBe(401);
    expect(bare.challenge).toContain(
      `resource_metadata="${server.base}/.well-known/oauth-protected-resource/mcp"`,
    );
  });

  it("lets the SDK's client register, authorize with PKCE and call tools; the audit names the token's client", async () => {
    const url = new URL(`${server.base}/mcp`);
    const first = new StreamableHTTPClientTransport(url, { authProvider: sdk });
    const client = new Client({ name: "sdk-oauth", version: "1" });
    await expect(client.connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    expect(sdk.authUrl?.searchParams.get("code_challenge_method")).toBe("S256");
    // No login page: the locked-down client is approved at once and redirected with a code.
    const approval = await fetch(sdk.authUrl ?? "", { redirect: "manual" });
    expect(approval.status).toBe(302);
    const code = new URL(approval.headers.get("location") ?? "").searchParams.get("code") ?? "";
    expect(code).toMatch(/^[\w-]{64}$/);
    await first.finishAuth(code);

    const again = new StreamableHTTPClientTransport(url, { authProvider: sdk });
    const authed = new Client({ name: "sdk-oauth", version: "1" });
    await authed.connect(again);
    const result = await authed.callTool({ name: "shell_exec", arguments: { command: "echo via-oauth" } });
    expect((result.content as Array<{ text: string }>)[0]?.text).toBe("[exit 0]\nvia-oauth\n");
    await authed.close();

    clientId = sdk.info?.client_id ?? "";
    clientSecret = (sdk.info as { client_secret?: string }).client_secret ?? "";
    expect(clientSecret).not.toBe("");
    const records = readFileSync(server.auditPath, "utf8").trim().split("\n");
    const last = JSON.parse(records.at(-1) ?? "{}") as Record<string, unknown>;
    expect(last).toMatchObject({ tool: "shell_exec", client_id: clientId });
  });

  it("refuses a second client under single-client lockdown", async () => {
    const r = await fetch(`${server.base}/register`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ redirect_uris: ["http://127.0.0.1:5555/cb"], client_name: "intruder" }),
    });
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ error: "invalid_client_metadata", error_description: LOCKDOWN });
  });

  describe("the code and token endpoints", () => {
    const creds = () => ({ client_id: clientId, client_secret: clientSecret });
    let pair: { access_token: string; refresh_token: string };

    it("refuses a wrong verifier, then spends the code", async () => {
      const { verifier, challenge } = pkce();
      const { code, location } = await authorize(server.base, clientId, challenge);
      expect(location.searchParams.get("state")).toBe("st-1");
      const src = nextSource();
      const wrong = await post(
        server.base,
        "/token",
        {
          ...creds(),
          grant_type: "authorization_code",
          code,
          code_verifier: pkce().verifier,
          redirect_uri: REDIRECT,
        },
        src,
      );
      expect(wrong.status).toBe(400);
      expect(wrong.body).toEqual({
        error: "invalid_grant",
        error_description: "code_verifier does not match the challenge",
      });
      const late = await post(
        server.base,
        "/token",
        {
          ...creds(),
          grant_type: "authorization_code",
          code,
          code_verifier: verifier,
          redirect_uri: REDIRECT,
        },
        src,
      );
      expect(late.body.error).toBe("invalid_grant");
    });

    it("exchanges a code once: a replay and the loser of a concurrent exchange get invalid_grant", async () => {
      const { verifier, challenge } = pkce();
      const { code } = await authorize(server.base, clientId, challenge);
      const form = {
        ...creds(),
        grant_type: "authorization_code",
        code,
        code_verifier: verifier,
        redirect_uri: REDIRECT,
      };
      const src = nextSource();
      const results = await Promise.all([
        post(server.base, "/token", form, src),
        post(server.base, "/token", form, src),
      ]);
      expect(results.map((r) => r.status).sort()).toEqual([200, 400]);
      const won = results.find((r) => r.status === 200);
      expect(won?.body).toMatchObject({ token_type: "Bearer", expires_in: 3600, scope: "mcp:tools" });
      expect(won?.headers.get("cache-control")).toBe("no-store");
      expect(results.find((r) => r.status === 400)?.body).toEqual({
        error: "invalid_grant",
        error_description: "authorization code already used or expired",
      });
      const replay = await post(server.base, "/token", form, src);
      expect(replay.body.error).toBe("invalid_grant");
      pair = won?.body as unknown as typeof pair;
    });

    it("authenticates MCP requests with the access token only", async () => {
      const client = await mcpWith(server.base, pair.access_token);
      expect((await client.listTools()).tools.length).toBeGreaterThan(10);
      await client.close();
      const src = nextSource();
      for (const bad of [
        `Bearer ${pair.refresh_token}`,
        `Bearer refresh:${pair.refresh_token}`,
        `Bearer ${randomBytes(48).toString("base64url")}`,
        `Bearer ${pair.access_token}x`,
        `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString("base64")}`,
        "Bearer",
      ]) {
        const r = await mcpStatus(server.base, bad, src);
        expect(r.status, bad.slice(0, 20)).toBe(401);
        expect(r.challenge).toContain('error="invalid_token"');
      }
    });

    it("rotates refresh tokens: one winner under concurrency, the old one spent, the new pair valid", async () => {
      const src = nextSource();
      const form = { ...creds(), grant_type: "refresh_token", refresh_token: pair.refresh_token };
      const results = await Promise.all([
        post(server.base, "/token", form, src),
        post(server.base, "/token", form, src),
      ]);
      expect(results.map((r) => r.status).sort()).toEqual([200, 400]);
      // The loser either found the token spent or lost the rotation itself.
      expect(["refresh token already used or expired", "refresh token already used"]).toContain(
        results.find((r) => r.status === 400)?.body.error_description,
      );
      const next = results.find((r) => r.status === 200)?.body as unknown as typeof pair;
      expect(next.refresh_token).not.toBe(pair.refresh_token);
      expect((await mcpStatus(server.base, `Bearer ${next.access_token}`)).status).toBe(200);
      expect((await post(server.base, "/token", form, src)).body.error).toBe("invalid_grant");
      pair = next;
    });

    it("revokes without cascading between access and refresh tokens", async () => {
      const revoked = await post(server.base, "/revoke", { ...creds(), token: pair.access_token });
      expect(revoked.status).toBe(200);
      expect((await mcpStatus(server.base, `Bearer ${pair.access_token}`, nextSource())).status).toBe(401);
      const refreshed = await post(server.base, "/token", {
        ...creds(),
        grant_type: "refresh_token",
        refresh_token: pair.refresh_token,
      });
      expect(refreshed.status).toBe(200);
      const fresh = refreshed.body as unknown as typeof pair;
      await post(server.base, "/revoke", { ...creds(), token: fresh.refresh_token });
      expect((await mcpStatus(server.base, `Bearer ${fresh.access_token}`)).status).toBe(200);
      const spent = await post(
        server.base,
        "/token",
        { ...creds(), grant_type: "refresh_token", refresh_token: fresh.refresh_token },
        nextSource(),
      );
      expect(spent.body.error).toBe("invalid_grant");
      pair = fresh;
    });

    it("refuses a wrong client secret, a missing PKCE challenge and an unknown client", async () => {
      const src = nextSource();
      const wrong = await post(
        server.base,
        "/token",
        { client_id: clientId, client_secret: "nope", grant_type: "refresh_token", refresh_token: "x" },
        src,
      );
      expect(wrong.status).toBe(401);
      expect(wrong.body.error).toBe("invalid_client");
      const noPkce = await fetch(
        `${server.base}/authorize?${new URLSearchParams({ response_type: "code", client_id: clientId, redirect_uri: REDIRECT, state: "s" })}`,
        { redirect: "manual" },
      );
      const loc = new URL(noPkce.headers.get("location") ?? "");
      expect(loc.searchParams.get("error")).toBe("invalid_request");
      expect(loc.searchParams.get("code")).toBeNull();
      const stranger = await fetch(`${server.base}/authorize?client_id=unknown&response_type=code`, {
        redirect: "manual",
        headers: src,
      });
      expect(stranger.status).toBe(400);
      expect(stranger.headers.get("location")).toBeNull();
      const form = await fetch(`${server.base}/token`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ grant_type: "refresh_token" }),
      });
      expect(form.status).toBe(400);
      const twice = await fetch(`${server.base}/token`, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body: `grant_type=refresh_token&client_id=${clientId}&client_id=${clientId}`,
      });
      expect(await twice.json()).toEqual({
        error: "invalid_request",
        error_description: "a parameter is repeated",
      });
      const huge = await fetch(`${server.base}/token`, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body: `grant_type=refresh_token&pad=${"x".repeat(100_000)}`,
      });
      expect(huge.status).toBe(413);
      const metadata = await fetch(`${server.base}/register`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: "{not json",
      });
      expect(metadata.status).toBe(400);
      expect(((await metadata.json()) as { error: string }).error).toBe("invalid_client_metadata");
    });

    it("throttles a source after repeated failures, without touching other sources", async () => {
      const src = nextSource();
      const statuses: number[] = [];
      for (let i = 0; i < 22; i++)
        statuses.push((await mcpStatus(server.base, `Bearer forged${i}`, src)).status);
      expect(statuses.slice(0, 20).every((s) => s === 401)).toBe(true);
      expect(statuses.slice(20)).toEqual([429, 429]);
      const blocked = await fetch(`${server.base}/token`, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded", ...src },
        body: "grant_type=refresh_token",
      });
      expect(blocked.status).toBe(429);
      expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0);
      expect((await mcpStatus(server.base, `Bearer ${pair.access_token}`)).status).toBe(200);
    });

    it("serves /metrics without a token", async () => {
      const r = await fetch(`${server.base}/metrics`);
      expect(r.status).toBe(200);
      expect(await r.text()).toContain(
        'relay_shell_tool_calls_total{mode="open",outcome="ok",tier="0",tool="shell_exec"}',
      );
    });

    it("keeps clients and tokens across a restart, files 0600 in a 0700 dir, secrets only hashed", async () => {
      await server.stop();
      server = await startAuthServer(dir, port);
      expect((await mcpStatus(server.base, `Bearer ${pair.access_token}`)).status).toBe(200);
      const again = await fetch(`${server.base}/register`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ redirect_uris: [REDIRECT] }),
      });
      expect(again.status).toBe(400);
      const state = join(dir, "oauth");
      expect(statSync(state).mode & 0o777).toBe(0o700);
      let all = "";
      for (const file of ["clients.json", "codes.json", "tokens.json"]) {
        expect(statSync(join(state, file)).mode & 0o777, file).toBe(0o600);
        all += readFileSync(join(state, file), "utf8");
      }
      for (const secret of [pair.access_token, pair.refresh_token, clientSecret])
        expect(all).not.toContain(secret);
    });
  });
});

describe("OAuth expiry and session ownership (in-process edge, controlled clock)", () => {
  let dir: string;
  let edge: HttpEdge;
  let base: string;
  let now = 1_900_000_000_000;
  const clock = { now: () => now, monotonic: () => now };
  let close: () => void;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "relay-shell-oauth-clock-"));
    const settings = loadSettings(
      {
        RELAY_SHELL_TRANSPORT: "http",
        RELAY_SHELL_AUTH_ENABLED: "true",
        RELAY_SHELL_AUTH_SINGLE_CLIENT: "false",
        RELAY_SHELL_AUTH_ISSUER: "http://127.0.0.1",
        RELAY_SHELL_AUTH_STATE_DIR: join(dir, "oauth"),
        RELAY_SHELL_AUDIT_PATH: join(dir, "audit.jsonl"),
        RELAY_SHELL_SSH_CONFIG: join(dir, "none"),
        RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(dir, "known_hosts"),
      },
      { cwd: dir, homeDir: dir },
    );
    const built = await buildServer({
      settings,
      env: { PATH: process.env.PATH },
      logger: silentLogger,
      clock,
    });
    await built.ready;
    close = () => built.close();
    edge = createHttpEdge({
      settings: { ...settings, httpPort: 0 },
      mcp: built.mcp,
      calls: built.metrics,
      gauges: built.gauges,
      maxBodyBytes: 1024 * 1024,
      logger: silentLogger,
      clock,
    });
    base = `http://127.0.0.1:${(await edge.listen()).port}`;
  });
  afterAll(async () => {
    await edge?.close();
    close?.();
    rmSync(dir, { recursive: true, force: true });
  });

  async function newClient(): Promise<{ id: string; pair: { access_token: string; refresh_token: string } }> {
    const reg = (await (
      await fetch(`${base}/register`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: "none" }),
      })
    ).json()) as { client_id: string };
    const { verifier, challenge } = pkce();
    const { code } = await authorize(base, reg.client_id, challenge);
    const token = await post(base, "/token", {
      client_id: reg.client_id,
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      redirect_uri: REDIRECT,
    });
    expect(token.status).toBe(200);
    return {
      id: reg.client_id,
      pair: token.body as unknown as { access_token: string; refresh_token: string },
    };
  }

  it("expires access tokens, refresh tokens and codes at their TTLs", async () => {
    const { id, pair } = await newClient();
    expect((await mcpStatus(base, `Bearer ${pair.access_token}`)).status).toBe(200);
    now += 3601 * 1000;
    const expired = await mcpStatus(base, `Bearer ${pair.access_token}`, nextSource());
    expect(expired.status).toBe(401);
    expect(expired.challenge).toContain('error_description="token expired"');
    const refreshed = await post(base, "/token", {
      client_id: id,
      grant_type: "refresh_token",
      refresh_token: pair.refresh_token,
    });
    expect(refreshed.status).toBe(200);
    const next = refreshed.body as unknown as typeof pair;
    now += 2_592_001 * 1000;
    const idle = await post(
      base,
      "/token",
      { client_id: id, grant_type: "refresh_token", refresh_token: next.refresh_token },
      nextSource(),
    );
    expect(idle.body).toEqual({
      error: "invalid_grant",
      error_description: "refresh token already used or expired",
    });

    const { verifier, challenge } = pkce();
    const { code } = await authorize(base, id, challenge);
    now += 301 * 1000;
    const late = await post(
      base,
      "/token",
      {
        client_id: id,
        grant_type: "authorization_code",
        code,
        code_verifier: verifier,
        redirect_uri: REDIRECT,
      },
      nextSource(),
    );
    expect(late.body).toEqual({
      error: "invalid_grant",
      error_description: "authorization code already used or expired",
    });
  });

  it("binds an MCP session to the client that opened it", async () => {
    const a = await newClient();
    const b = await newClient();
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${a.pair.access_token}` } },
    });
    const client = new Client({ name: "owner", version: "1" });
    await client.connect(transport);
    const sessionId = transport.sessionId ?? "";
    const stolen = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json, text/event-stream",
        Authorization: `Bearer ${b.pair.access_token}`,
        "Mcp-Session-Id": sessionId,
        "Mcp-Protocol-Version": "2025-06-18",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 5, method: "tools/list" }),
    });
    expect(stolen.status).toBe(404);
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await client.close();
  });
});

const isRoot = process.getuid?.() === 0;

describe.skipIf(!isRoot)("a state dir others can reach is refused", () => {
  it("stops --check-config with exit 2 when the dir cannot be tightened", () => {
    const root = mkdtempSync(join(tmpdir(), "relay-shell-oauth-perm-"));
    chmodSync(root, 0o755);
    const shared = join(root, "oauth");
    mkdirSync(shared, { mode: 0o755 });
    chmodSync(shared, 0o755);
    const own = join(root, "own");
    mkdirSync(own, { mode: 0o700 });
    chownSync(own, 65534, 65534);
    const r = spawnSync(process.execPath, [SERVER_ENTRY, "--check-config"], {
      env: baseEnv({
        HOME: own,
        RELAY_SHELL_TRANSPORT: "http",
        RELAY_SHELL_AUTH_ENABLED: "true",
        RELAY_SHELL_AUTH_STATE_DIR: shared,
        RELAY_SHELL_AUDIT_PATH: join(own, "audit.jsonl"),
      }),
      cwd: own,
      uid: 65534,
      gid: 65534,
      encoding: "utf8",
    });
    rmSync(root, { recursive: true, force: true });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("build_server failed: RELAY_SHELL_AUTH_STATE_DIR");
    expect(r.stderr).toContain("accessible by group or others (mode 0755)");
  });
});
