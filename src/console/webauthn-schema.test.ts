import { randomBytes } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { approvalBodySchema, approvalProblem, denialBodySchema, denialProblem } from "./approvals-schema.js";
import { decodeBody, problemText } from "./body.js";
import {
  assertionSchema,
  authenticationResponseSchema,
  registrationResponseSchema,
} from "./webauthn-schema.js";

/**
 * The schemas of the WebAuthn bodies the console receives, fed the bodies a browser sends, each cut
 * short by a field, with a field over its bound or replaced by anything, and anything at all. The
 * answer is the body or a problem that names the field, and nothing is thrown.
 */

const b64 = (bytes: number): string => randomBytes(bytes).toString("base64url");
const ID = b64(32);

/** What SimpleWebAuthn's browser half posts after navigator.credentials.get(). */
const AUTHENTICATION = {
  id: ID,
  rawId: ID,
  type: "public-key",
  response: { clientDataJSON: b64(180), authenticatorData: b64(37), signature: b64(71), userHandle: b64(16) },
  clientExtensionResults: {},
  authenticatorAttachment: "cross-platform",
};

/** What it posts after navigator.credentials.create(). */
const REGISTRATION = {
  id: ID,
  rawId: ID,
  type: "public-key",
  response: {
    clientDataJSON: b64(200),
    attestationObject: b64(300),
    authenticatorData: b64(164),
    transports: ["hybrid", "internal"],
    publicKeyAlgorithm: -7,
    publicKey: b64(91),
  },
  clientExtensionResults: { credProps: { rk: true } },
  authenticatorAttachment: "platform",
};

const APPROVAL = { digest: "a".repeat(64), assertion: AUTHENTICATION };

const SCHEMAS: Array<{ name: string; schema: z.ZodType; body: object }> = [
  { name: "a login's authentication response", schema: authenticationResponseSchema, body: AUTHENTICATION },
  { name: "an approval's assertion", schema: assertionSchema, body: AUTHENTICATION },
  { name: "an enrolment's registration response", schema: registrationResponseSchema, body: REGISTRATION },
  { name: "an approval's body", schema: approvalBodySchema, body: APPROVAL },
];

/** Every path to a field, nested objects and list entries included. */
function paths(value: unknown, prefix: Array<string | number> = []): Array<Array<string | number>> {
  if (typeof value !== "object" || value === null) return [];
  return Object.entries(value).flatMap(([key, inner]) => {
    const path = [...prefix, Array.isArray(value) ? Number(key) : key];
    return [path, ...paths(inner, path)];
  });
}

/** The dotted name decodeBody gives a path. */
const named = (path: Array<string | number>): string =>
  path.map((k, i) => (typeof k === "number" ? `[${k}]` : i === 0 ? k : `.${k}`)).join("");

/** A copy of `body` with the field at `path` deleted, or set to `to`. */
function edited(body: object, path: Array<string | number>, replacement?: { to: unknown }): unknown {
  const copy = structuredClone(body) as Record<string | number, unknown>;
  let at = copy;
  for (const key of path.slice(0, -1)) at = at[key] as Record<string | number, unknown>;
  const last = path.at(-1) as string | number;
  if (replacement !== undefined) at[last] = replacement.to;
  else if (Array.isArray(at)) at.splice(Number(last), 1);
  else delete at[last];
  return copy;
}

/** A refusal's text: one short line that names the field. */
function expectClear(problem: { field: string; why: string }): void {
  const text = problemText(problem);
  expect(text).toMatch(/^(the body|[\w.[\]]+) (is|must|has) /);
  expect(text.length).toBeLessThan(160);
  expect(text).not.toContain("\n");
}

describe.each(SCHEMAS)("the schema of $name", ({ schema, body }) => {
  it("takes what the browser sends as it is", () => {
    expect(decodeBody(schema, JSON.parse(JSON.stringify(body)))).toEqual({ ok: true, value: body });
  });

  it("names the field cut from a body, or takes the body without an optional one", () => {
    for (const path of paths(body)) {
      const cut = edited(body, path);
      const answer = decodeBody(schema, cut);
      if (answer.ok) {
        expect(answer.value, named(path)).toEqual(cut);
        continue;
      }
      expectClear(answer.error);
      // A cut list entry leaves the list short, never a hole; anything else is missing.
      if (typeof path.at(-1) !== "number")
        expect(answer, named(path)).toEqual({ ok: false, error: { field: named(path), why: "is missing" } });
    }
  });

  it("refuses every text field over its bound, and takes it at the bound", () => {
    for (const path of paths(body)) {
      const over = decodeBody(schema, edited(body, path, { to: "A".repeat(70_000) }));
      if (over.ok) throw new Error(`${named(path)} took 70,000 characters`);
      expectClear(over.error);
      const bound = /^is over (\d+) characters/.exec(over.error.why);
      if (bound === null) continue; // not a text field: it is refused for its type
      expect(over.error.field).toBe(named(path));
      const max = Number(bound[1]);
      expect(decodeBody(schema, edited(body, path, { to: "A".repeat(max) })).ok, named(path)).toBe(true);
      expect(decodeBody(schema, edited(body, path, { to: "A".repeat(max + 1) })).ok).toBe(false);
    }
  });

  it("refuses a field replaced by anything else, naming it, never throwing", () => {
    fc.assert(
      fc.property(fc.constantFrom(...paths(body)), fc.jsonValue({ maxDepth: 3 }), (path, junk) => {
        const answer = decodeBody(schema, edited(body, path, { to: junk }));
        if (answer.ok) return;
        expectClear(answer.error);
        expect(named(path).startsWith(answer.error.field) || answer.error.field.startsWith(named(path))).toBe(
          true,
        );
      }),
      { numRuns: 500 },
    );
  });

  it("answers anything at all with the body or a clear problem", () => {
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), fc.anything({ withMap: true, withTypedArray: true })), (junk) => {
        const answer = decodeBody(schema, junk);
        if (!answer.ok) expectClear(answer.error);
      }),
      { numRuns: 500 },
    );
  });
});

describe("what reaches @simplewebauthn", () => {
  it("is only the fields WebAuthn defines: a field a newer browser adds is dropped", () => {
    const sent = {
      ...REGISTRATION,
      future: "x",
      response: { ...REGISTRATION.response, more: 1 },
      clientExtensionResults: { prf: { enabled: true }, credProps: { rk: true, other: 2 } },
    };
    const answer = decodeBody(registrationResponseSchema, sent);
    expect(answer).toEqual({
      ok: true,
      value: { ...REGISTRATION, clientExtensionResults: { credProps: { rk: true } } },
    });
  });

  it("is base64url text, a known type and attachment, and a bounded list of transports", () => {
    const refused = (body: unknown) => {
      const answer = decodeBody(registrationResponseSchema, body);
      return answer.ok ? "taken" : problemText(answer.error);
    };
    expect(refused({ ...REGISTRATION, id: "a+b/c=" })).toBe("id is not base64url text");
    expect(refused({ ...REGISTRATION, id: "" })).toBe("id is empty");
    expect(refused({ ...REGISTRATION, type: "password" })).toBe('type must be "public-key"');
    expect(refused({ ...REGISTRATION, authenticatorAttachment: "usb" })).toBe(
      'authenticatorAttachment must be "platform" or "cross-platform"',
    );
    const transports = Array.from({ length: 17 }, () => "usb");
    expect(refused(edited(REGISTRATION, ["response", "transports"], { to: transports }))).toBe(
      "response.transports has over 16 entries",
    );
    expect(refused(edited(REGISTRATION, ["response", "transports", 1], { to: 5 }))).toBe(
      "response.transports[1] must be text",
    );
    expect(refused(edited(REGISTRATION, ["response", "publicKeyAlgorithm"], { to: 1.5 }))).toBe(
      "response.publicKeyAlgorithm must be a COSE algorithm number",
    );
    expect(refused([REGISTRATION])).toBe("the body must be an object");
  });
});

describe("the approvals page's bodies", () => {
  const problem = (
    schema: z.ZodType,
    body: unknown,
    words: (p: { field: string; why: string }) => string,
  ) => {
    const answer = decodeBody(schema, body);
    return answer.ok ? "taken" : words(answer.error);
  };

  it("are refused in the words the page shows, naming the field", () => {
    expect(problem(approvalBodySchema, AUTHENTICATION, approvalProblem)).toBe(
      "Send the digest of the act the page showed; reload the page",
    );
    expect(problem(approvalBodySchema, { ...APPROVAL, digest: "A".repeat(64) }, approvalProblem)).toBe(
      "Send the digest of the act the page showed; reload the page",
    );
    expect(
      problem(approvalBodySchema, edited(APPROVAL, ["assertion", "response", "signature"]), approvalProblem),
    ).toBe("Expected a JSON WebAuthn response: assertion.response.signature is missing");
    expect(problem(approvalBodySchema, { ...APPROVAL, note: 1 }, approvalProblem)).toBe(
      'Expected the JSON body the approvals page sends: the body has an unknown field "note"',
    );
    expect(problem(denialBodySchema, { reason: 5 }, denialProblem)).toBe("Give a reason for the denial");
    expect(problem(denialBodySchema, "no", denialProblem)).toBe(
      "Expected a JSON body with a reason: the body must be an object",
    );
  });
});
