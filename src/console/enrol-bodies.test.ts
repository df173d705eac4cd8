import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { silentLogger, systemClock } from "../core/index.js";
import { decodeBody, problemText } from "./body.js";
import { runEnrolment } from "./enrol.js";
import { registrationResponseSchema } from "./webauthn-schema.js";

/**
 * `console enrol`'s page over HTTP, fed registrations it cannot use with the right code: each is
 * answered 400 naming the field the schema refuses, before @simplewebauthn sees it; the page keeps
 * answering, and wrong codes still stop the enrolment.
 */

const dir = mkdtempSync(join(tmpdir(), "console-enrol-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const REGISTRATION = {
  id: "Y3JlZA",
  rawId: "Y3JlZA",
  type: "public-key",
  response: { clientDataJSON: "Yg", attestationObject: "YQ", transports: ["usb"], publicKeyAlgorithm: -7 },
  clientExtensionResults: {},
};

/** One request as the page makes it; the answer's status and text. */
function send(port: number, method: string, path: string, body: string, headers: Record<string, string>) {
  return new Promise<{ status: number; text: string }>((resolve, reject) => {
    const host = `localhost:${port}`;
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method,
        path,
        setHost: false,
        headers: { Host: host, Origin: `http://${host}`, "Content-Type": "application/json", ...headers },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.once("error", reject);
    req.end(method === "GET" ? undefined : body);
  });
}

async function post(port: number, path: string, body: string, headers: Record<string, string>) {
  const answer = await send(port, "POST", path, body, headers);
  return { status: answer.status, error: String(JSON.parse(answer.text).error ?? "") };
}

describe("console enrol's registration body", () => {
  it("is refused with 400 naming the field when the schema refuses it, and the page keeps answering", async () => {
    const lines: string[] = [];
    const passkeysFile = join(dir, "passkeys");
    const outcome = runEnrolment({
      name: "alice",
      passkeysFile,
      rpId: "localhost",
      origin: "",
      port: 0,
      timeoutSeconds: 60,
      say: (line) => lines.push(line),
      logger: silentLogger,
      clock: systemClock,
    });
    await expect.poll(() => lines.length).toBe(2);
    const code = /the code (\S+)/.exec(lines[0] ?? "")?.[1] ?? "";
    const port = Number(/:(\d+)\/console\/enrol/.exec(lines[0] ?? "")?.[1]);
    const page = await send(port, "GET", "/console/enrol", "", {});
    const csrf = /<meta name="csrf-token" content="([^"]+)">/.exec(page.text)?.[1] ?? "";
    const headers = { "X-CSRF-Token": csrf };
    const verify = async (response: unknown) => {
      expect((await post(port, "/console/enrol/options", JSON.stringify({ code }), headers)).status).toBe(
        200,
      );
      return post(port, "/console/enrol/verify", JSON.stringify({ code, response }), headers);
    };

    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.jsonValue({ maxDepth: 3 }),
          fc
            .constantFrom("id", "rawId", "type", "response", "clientExtensionResults")
            .chain((key) => fc.jsonValue({ maxDepth: 2 }).map((junk) => ({ ...REGISTRATION, [key]: junk }))),
          fc
            .constantFrom("clientDataJSON", "attestationObject", "transports", "publicKey")
            .chain((key) =>
              fc
                .oneof(fc.jsonValue({ maxDepth: 2 }), fc.string({ minLength: 3000, maxLength: 50_000 }))
                .map((junk) => ({ ...REGISTRATION, response: { ...REGISTRATION.response, [key]: junk } })),
            ),
        ),
        async (response) => {
          const answer = await verify(response);
          expect(answer.status).toBe(400);
          const decoded = decodeBody(
            registrationResponseSchema,
            JSON.parse(JSON.stringify(response ?? null)),
          );
          if (decoded.ok) expect(answer.error).toMatch(/^Enrolment refused: /);
          else
            expect(answer.error).toBe(
              `Expected a JSON WebAuthn registration: ${problemText({ ...decoded.error, field: `response${decoded.error.field === "" ? "" : "."}${decoded.error.field}` })}`,
            );
        },
      ),
      { numRuns: 40 },
    );
    expect(await verify({ ...REGISTRATION, type: "password" })).toEqual({
      status: 400,
      error: 'Expected a JSON WebAuthn registration: response.type must be "public-key"',
    });
    expect(await post(port, "/console/enrol/verify", "[1]", headers)).toEqual({
      status: 400,
      error: "Expected a JSON body",
    });
    for (let i = 0; i < 5; i++) {
      const wrong = await post(
        port,
        "/console/enrol/options",
        JSON.stringify({ code: "AAAA-AAAA" }),
        headers,
      );
      expect(wrong).toEqual({ status: 403, error: "Wrong code" });
    }
    expect(await outcome).toEqual({ ok: false, error: "5 wrong codes were typed; enrolment stopped" });
    expect(existsSync(passkeysFile)).toBe(false);
  }, 60_000);
});
