import { randomBytes, randomInt } from "node:crypto";
import { appendFileSync, chmodSync, existsSync, readFileSync } from "node:fs";
import { generateRegistrationOptions, verifyRegistrationResponse } from "@simplewebauthn/server";
import { cose, decodeCredentialPublicKey, isoBase64URL } from "@simplewebauthn/server/helpers";
import { type Context, Hono } from "hono";
import { z } from "zod";
import { type Clock, fail, type Logger, ok, type Result } from "../core/index.js";
import { loadAssets } from "./assets.js";
import { boundedBody, decodeBody, problemText, readJson } from "./body.js";
import { guardRequests, refuse, securityHeaders } from "./http-rules.js";
import { listenLoopback, nodeHandler } from "./listen.js";
import { newToken, sameSecret } from "./logins.js";
import { enrolPage } from "./pages.js";
import {
  PASSKEY_ALGORITHMS,
  type Passkey,
  parsePasskeys,
  passkeyLine,
  passkeyNameProblem,
} from "./passkeys.js";
import { rpIdProblem } from "./rp-id.js";
import { expected, registrationResponseSchema } from "./webauthn-schema.js";

/** Wrong codes tolerated before the enrolment stops: the code is short enough to read off a terminal. */
const MAX_WRONG_CODES = 5;
const CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
/** A typed code longer than this is wrong without comparing it. */
const MAX_CODE_CHARS = 64;

/** Both POSTs of the page carry the code typed; the second adds the registration. */
const enrolCodeSchema = z.object(
  { code: z.string(expected("text")).max(MAX_CODE_CHARS, { error: "is too long" }) },
  expected("an object"),
);
const enrolVerifySchema = z.strictObject(
  { code: enrolCodeSchema.shape.code, response: registrationResponseSchema },
  expected("an object"),
);

export interface EnrolOptions {
  name: string;
  passkeysFile: string;
  rpId: string;
  /** "" = http://localhost:<the port bound>. */
  origin: string;
  /** 0 picks a free port. */
  port: number;
  /** How long the page waits for the ceremony, in seconds. */
  timeoutSeconds: number;
  /** Lines for the operator's terminal. */
  say(line: string): void;
  logger: Logger;
  clock: Clock;
}

/** The passkey enrolled and the line added for it, or why none was. */
type EnrolOutcome = Result<{ passkey: Passkey; line: string }, string>;

/** A one-time code of 8 characters from an alphabet without look-alikes, shown as XXXX-XXXX. */
function oneTimeCode(): string {
  let code = "";
  for (let i = 0; i < 8; i++) code += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/** The passkeys already in the file (none when it does not exist), or why it cannot be extended. */
function existingKeys(path: string): Passkey[] | string {
  if (!existsSync(path)) return [];
  const read = parsePasskeys(readFileSync(path, "utf8"), path);
  return read.ok ? read.value : `the passkeys file has problems; fix them first: ${read.error.join("; ")}`;
}

/** Append the line, after a newline when the file does not end with one; a new file is made 0644. */
function appendLine(path: string, line: string): void {
  const created = !existsSync(path);
  const text = created ? "" : readFileSync(path, "utf8");
  const lead = text === "" || text.endsWith("\n") ? "" : "\n";
  appendFileSync(path, `${lead}${line}\n`, { mode: 0o644 });
  if (created) chmodSync(path, 0o644);
}

/**
 * The operator's enrolment of a passkey (`relay-shell console enrol`): a
 * one-off page on 127.0.0.1 that runs the WebAuthn registration ceremony
 * (a discoverable credential, user verification required, no attestation)
 * for whoever types the one-time code printed on the operator's terminal,
 * appends the credential to the passkeys file and stops. The relay is not
 * involved: the file is the operator's, written with the operator's rights.
 */
export async function runEnrolment(options: EnrolOptions): Promise<EnrolOutcome> {
  const before = enrolmentProblem(options);
  if (typeof before === "string") return fail(before);
  let finish: (outcome: EnrolOutcome) => void = () => undefined;
  const finished = new Promise<EnrolOutcome>((resolve) => {
    finish = resolve;
  });
  const e: Enrolment = {
    options,
    before,
    code: oneTimeCode(),
    csrf: newToken(),
    userId: randomBytes(16),
    challenge: null,
    wrongCodes: 0,
    finish: (outcome) => finish(outcome),
    origin: options.origin,
  };
  const listener = await listenLoopback(nodeHandler(enrolApp(e)), options.port, options.logger);
  if (e.origin === "") e.origin = `http://localhost:${listener.port}`;
  options.say(`Open ${e.origin}/console/enrol in a browser on this machine and type the code ${e.code}`);
  options.say(`(the page listens on 127.0.0.1:${listener.port} for ${options.timeoutSeconds} s)`);
  const timer = setTimeout(
    () => finish(fail(`no passkey was enrolled within ${options.timeoutSeconds} s`)),
    options.timeoutSeconds * 1000,
  );
  const outcome = await finished;
  clearTimeout(timer);
  // Let the page read the answer of the last request before the listener goes.
  await new Promise((resolve) => setTimeout(resolve, 200));
  await listener.close();
  return outcome;
}

/** Why the enrolment cannot start (the name, the RP ID, the file), or the passkeys already enrolled. */
function enrolmentProblem(options: EnrolOptions): Passkey[] | string {
  const nameProblem = passkeyNameProblem(options.name);
  if (nameProblem) return `--name: ${nameProblem}`;
  const rpProblem = rpIdProblem(options.rpId);
  if (rpProblem) return `--rp-id: ${rpProblem}`;
  const before = existingKeys(options.passkeysFile);
  if (typeof before === "string") return before;
  if (before.some((k) => k.name === options.name)) {
    return `the passkeys file already has a passkey named ${options.name}; choose another name or delete its line`;
  }
  return before;
}

/** One enrolment's state: the code and token of its page, and the ceremony under way. */
interface Enrolment {
  options: EnrolOptions;
  /** The passkeys enrolled when it started: the authenticator must not make one of them again. */
  before: Passkey[];
  code: string;
  csrf: string;
  userId: Buffer;
  challenge: string | null;
  wrongCodes: number;
  finish(outcome: EnrolOutcome): void;
  /** The origin depends on the port bound, so the routes read it when a request comes. */
  origin: string;
}

function enrolApp(e: Enrolment): Hono {
  const app = new Hono();
  app.use("*", securityHeaders());
  app.use("*", async (c, next) => guardRequests(e.origin)(c, next));
  app.use(
    "*",
    boundedBody(64 * 1024, (c) => refuse(c, 413, "Request body too large")),
  );
  const assets = loadAssets();
  app.get("/console/assets/:name", (c) => {
    const asset = assets.get(c.req.param("name"));
    if (!asset) return refuse(c, 404, "Not found");
    return c.body(new Uint8Array(asset.body), 200, { "Content-Type": asset.type });
  });
  app.get("/console/enrol", (c) => c.html(enrolPage(e.csrf, e.options.name)));
  app.post("/console/enrol/options", (c) => optionsRoute(e, c));
  app.post("/console/enrol/verify", (c) => verifyRoute(e, c));
  app.notFound((c) => refuse(c, 404, "Not found"));
  return app;
}

/** The body of a POST that carries the page's token and the right code, or the refusal. */
async function admitted(e: Enrolment, c: Context): Promise<{ body: unknown } | { refusal: Response }> {
  if (!sameSecret(c.req.header("x-csrf-token") ?? "", e.csrf))
    return { refusal: refuse(c, 403, "Invalid CSRF token") };
  const body = await readJson(c);
  if (!body.ok) return { refusal: refuse(c, 400, "Expected a JSON body") };
  const sent = decodeBody(enrolCodeSchema, body.value);
  if (!sent.ok && sent.error.field === "") return { refusal: refuse(c, 400, "Expected a JSON body") };
  if (!sent.ok || !sameSecret(sent.value.code.toUpperCase(), e.code)) {
    e.wrongCodes++;
    if (e.wrongCodes >= MAX_WRONG_CODES) {
      e.finish(fail(`${MAX_WRONG_CODES} wrong codes were typed; enrolment stopped`));
    }
    return { refusal: refuse(c, 403, "Wrong code") };
  }
  return { body: body.value };
}

async function optionsRoute(e: Enrolment, c: Context): Promise<Response> {
  const admission = await admitted(e, c);
  if ("refusal" in admission) return admission.refusal;
  const generated = await generateRegistrationOptions({
    rpName: "relay-shell console",
    rpID: e.options.rpId,
    userName: e.options.name,
    userID: new Uint8Array(e.userId),
    attestationType: "none",
    authenticatorSelection: { residentKey: "required", userVerification: "required" },
    supportedAlgorithmIDs: [...PASSKEY_ALGORITHMS],
    excludeCredentials: e.before.map((k) => ({ id: k.credentialId })),
    timeout: 120_000,
  });
  e.challenge = generated.challenge;
  return c.json(generated);
}

async function verifyRoute(e: Enrolment, c: Context): Promise<Response> {
  const admission = await admitted(e, c);
  if ("refusal" in admission) return admission.refusal;
  const issued = e.challenge;
  e.challenge = null;
  if (issued === null) return refuse(c, 400, "Ask for a challenge first");
  const sent = decodeBody(enrolVerifySchema, admission.body);
  if (!sent.ok) return refuse(c, 400, `Expected a JSON WebAuthn registration: ${problemText(sent.error)}`);
  try {
    const passkey = await registeredPasskey(e, sent.value.response, issued);
    const line = appendPasskey(e.options.passkeysFile, passkey);
    e.finish(ok({ passkey, line }));
    return c.json({ ok: true, name: passkey.name });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    e.options.logger.warn({ err: message }, "enrolment refused");
    return refuse(c, 400, `Enrolment refused: ${message}`);
  }
}

/** The passkey a verified registration made, with an algorithm the console accepts; throws otherwise. */
async function registeredPasskey(
  e: Enrolment,
  response: Parameters<typeof verifyRegistrationResponse>[0]["response"],
  issued: string,
): Promise<Passkey> {
  const { options } = e;
  const verified = await verifyRegistrationResponse({
    response,
    expectedChallenge: issued,
    expectedOrigin: e.origin,
    expectedRPID: options.rpId,
    requireUserVerification: true,
  });
  if (!verified.verified) throw new Error("the registration did not verify");
  const credential = verified.registrationInfo.credential;
  const algorithm = decodeCredentialPublicKey(credential.publicKey).get(cose.COSEKEYS.alg);
  if (algorithm === undefined || !(PASSKEY_ALGORITHMS as readonly number[]).includes(algorithm)) {
    throw new Error(
      `the authenticator chose COSE algorithm ${String(algorithm)}, which the console does not accept`,
    );
  }
  return {
    name: options.name,
    credentialId: credential.id,
    publicKey: isoBase64URL.fromBuffer(credential.publicKey),
    algorithm,
    transports: credential.transports ?? [],
    created: new Date(options.clock.now()).toISOString(),
  };
}

/** Appends the passkey's line unless the file gained it, or its name, meanwhile; the line. Throws otherwise. */
function appendPasskey(path: string, passkey: Passkey): string {
  const now = existingKeys(path);
  if (typeof now === "string") throw new Error(now);
  if (now.some((k) => k.credentialId === passkey.credentialId || k.name === passkey.name)) {
    throw new Error("this passkey or its name is already in the passkeys file");
  }
  const line = passkeyLine(passkey);
  appendLine(path, line);
  return line;
}
