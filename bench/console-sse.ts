import { createHash, sign as cryptoSign, generateKeyPairSync, randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { type IncomingMessage, request } from "node:http";
import { isoCBOR } from "@simplewebauthn/server/helpers";
import { type ConsoleWorld, rawRequest } from "../test/helpers/console.js";

/**
 * A software passkey (ES256) written into the world's passkeys file, so the
 * bench can log in to the built relay's console without a browser: the
 * assertion is built as an authenticator and a browser would build it.
 */
export function softwarePasskey(world: ConsoleWorld) {
  const pair = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const jwk = pair.publicKey.export({ format: "jwk" });
  const bytes = (s: string | undefined) => new Uint8Array(Buffer.from(s ?? "", "base64url"));
  const cose = new Map<number, number | Uint8Array>([
    [1, 2],
    [3, -7],
    [-1, 1],
    [-2, bytes(jwk.x)],
    [-3, bytes(jwk.y)],
  ]);
  const id = randomBytes(16).toString("base64url");
  writeFileSync(
    world.passkeys,
    `${JSON.stringify({
      name: "bench",
      credential_id: id,
      public_key: Buffer.from(isoCBOR.encode(cose)).toString("base64url"),
      algorithm: -7,
      transports: ["internal"],
      created: new Date().toISOString(),
    })}\n`,
    { mode: 0o644 },
  );
  let counter = 0;
  return {
    /** The AuthenticationResponseJSON for `challenge` at `origin`, user verified. */
    assert(challenge: string, origin: string) {
      counter += 1;
      const clientData = Buffer.from(JSON.stringify({ type: "webauthn.get", challenge, origin }));
      const count = Buffer.alloc(4);
      count.writeUInt32BE(counter);
      const rpId = new URL(origin).hostname;
      const authData = Buffer.concat([
        createHash("sha256").update(rpId).digest(),
        Buffer.from([0x05]),
        count,
      ]);
      const signed = Buffer.concat([authData, createHash("sha256").update(clientData).digest()]);
      const signature = cryptoSign("sha256", signed, { key: pair.privateKey, dsaEncoding: "der" });
      return {
        id,
        rawId: id,
        type: "public-key",
        clientExtensionResults: {},
        response: {
          clientDataJSON: clientData.toString("base64url"),
          authenticatorData: authData.toString("base64url"),
          signature: signature.toString("base64url"),
        },
      };
    },
  };
}

function cookieOf(headers: Record<string, string | string[] | undefined>, name: string): string {
  const all = ([] as string[]).concat(headers["set-cookie"] ?? []);
  const found = all.find((c) => c.startsWith(`${name}=`));
  if (!found) throw new Error(`no ${name} cookie in ${JSON.stringify(all)}`);
  return found.split(";")[0] ?? "";
}

/** Log in to the console on 127.0.0.1:`port` with the software passkey; the session cookie. */
export async function loginOverHttp(port: number, key: ReturnType<typeof softwarePasskey>): Promise<string> {
  const origin = `http://localhost:${port}`;
  const host = `localhost:${port}`;
  const page = await rawRequest(port, "GET", "/console/login", { Host: host });
  const loginCookie = cookieOf(page.headers, "relay_console_login");
  const csrf = /name="csrf-token" content="([^"]+)"/.exec(page.body)?.[1] ?? "";
  const headers = {
    Host: host,
    Origin: origin,
    Cookie: loginCookie,
    "x-csrf-token": csrf,
    "content-type": "application/json",
  };
  const options = await rawRequest(port, "POST", "/console/login/options", headers, "{}");
  if (options.status !== 200) throw new Error(`login options: ${options.status} ${options.body}`);
  const { challenge } = JSON.parse(options.body) as { challenge: string };
  const verify = await rawRequest(
    port,
    "POST",
    "/console/login/verify",
    headers,
    JSON.stringify(key.assert(challenge, origin)),
  );
  if (verify.status !== 200) throw new Error(`login verify: ${verify.status} ${verify.body}`);
  return cookieOf(verify.headers, "relay_console");
}

/** Follow /console/audit/events; `onRecord` gets each record event's data, parsed. */
export function followEvents(
  port: number,
  cookie: string,
  onRecord: (data: {
    record: Record<string, unknown> | null;
    line: number;
    chain: { status: string };
  }) => void,
  onLive: () => void,
): { close(): void } {
  let response: IncomingMessage | null = null;
  const req = request(
    {
      host: "127.0.0.1",
      port,
      path: "/console/audit/events",
      headers: { Host: `localhost:${port}`, Cookie: cookie, Accept: "text/event-stream" },
    },
    (res) => {
      response = res;
      if (res.statusCode !== 200) throw new Error(`audit events: HTTP ${res.statusCode}`);
      res.setEncoding("utf8");
      let pending = "";
      res.on("data", (chunk: string) => {
        pending += chunk;
        let end = pending.indexOf("\n\n");
        while (end >= 0) {
          const block = pending.slice(0, end);
          pending = pending.slice(end + 2);
          end = pending.indexOf("\n\n");
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (event === "record" && data !== undefined) onRecord(JSON.parse(data));
          else if (event === "live") onLive();
        }
      });
    },
  );
  req.end();
  return {
    close: () => {
      response?.destroy();
      req.destroy();
    },
  };
}

/** Resident set size of process `pid`, in bytes, from /proc. */
export function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
  return Number(kib) * 1024;
}

/** The pid of the one child of `pid` (runuser runs the relay as its child). */
export function childOf(pid: number): number {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/);
  const child = Number(children[0]);
  if (!Number.isInteger(child) || child <= 0) throw new Error(`process ${pid} has no child`);
  return child;
}
