import { createHash, randomBytes } from "node:crypto";

/**
 * The OAuth 2.1 flow a client runs against the relay's authorization server, step by step over
 * fetch (register, authorize with PKCE, exchange, refresh), so a test can send each step wherever
 * it likes: through a balancer, every step may reach another relay.
 */

const REDIRECT = "http://127.0.0.1:33419/callback";

export interface OAuthClient {
  clientId: string;
  clientSecret: string;
}

export interface TokenPair {
  access_token: string;
  refresh_token: string;
}

export async function registerClient(base: string): Promise<OAuthClient> {
  const r = await fetch(`${base}/register`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: "fleet-tests" }),
  });
  const body = (await r.json()) as { client_id?: string; client_secret?: string };
  if (r.status !== 201 || !body.client_id)
    throw new Error(`registration failed: ${r.status} ${JSON.stringify(body)}`);
  return { clientId: body.client_id, clientSecret: body.client_secret ?? "" };
}

async function postForm(
  base: string,
  path: string,
  form: Record<string, string>,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(form).toString(),
  });
  const text = await r.text();
  return { status: r.status, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
}

/** Authorize (the relay approves its registered client) and exchange the code for a pair. */
export async function obtainTokens(base: string, client: OAuthClient): Promise<TokenPair> {
  const verifier = randomBytes(32).toString("base64url");
  const challenge = createHash("sha256").update(verifier).digest("base64url");
  const query = new URLSearchParams({
    response_type: "code",
    client_id: client.clientId,
    redirect_uri: REDIRECT,
    code_challenge: challenge,
    code_challenge_method: "S256",
    state: "fleet",
  });
  const authorized = await fetch(`${base}/authorize?${query}`, { redirect: "manual" });
  const code =
    new URL(authorized.headers.get("location") ?? "http://missing/").searchParams.get("code") ?? "";
  if (authorized.status !== 302 || code === "") throw new Error(`authorize failed: ${authorized.status}`);
  const exchanged = await postForm(base, "/token", {
    client_id: client.clientId,
    client_secret: client.clientSecret,
    grant_type: "authorization_code",
    code,
    code_verifier: verifier,
    redirect_uri: REDIRECT,
  });
  if (exchanged.status !== 200) throw new Error(`token exchange failed: ${JSON.stringify(exchanged.body)}`);
  return exchanged.body as unknown as TokenPair;
}

export function refresh(base: string, client: OAuthClient, refreshToken: string) {
  return postForm(base, "/token", {
    client_id: client.clientId,
    client_secret: client.clientSecret,
    grant_type: "refresh_token",
    refresh_token: refreshToken,
  });
}
