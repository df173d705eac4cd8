import { z } from "zod";
import { problemText } from "./body.js";
import { assertionSchema, expected } from "./webauthn-schema.js";

/*
 * The bodies the approvals page posts (src/console/web/approvals.js): `{digest}` for the options,
 * `{digest, assertion}` to approve, `{reason}` to deny. Each is exactly these fields.
 */

/** A deny reason is one line a human reads in the refusal; longer text is refused, not cut. */
const MAX_REASON_CHARS = 500;
/** An act's digest as the page shows it and sends it back: sha256 hex. */
const DIGEST = /^[0-9a-f]{64}$/;
/** What the operator is told whenever the digest sent back is missing or not one. */
const SEND_DIGEST = "Send the digest of the act the page showed; reload the page";

/** C0 and C1 controls, DEL and the line and paragraph separators. */
function isControl(ch: string): boolean {
  const cp = ch.codePointAt(0) ?? 0;
  return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp === 0x2028 || cp === 0x2029;
}

const digest = z.string(expected("text")).regex(DIGEST, { error: "is not a sha256 digest in hex" });

export const optionsBodySchema = z.strictObject({ digest }, expected("an object"));

export const approvalBodySchema = z.strictObject(
  { digest, assertion: assertionSchema },
  expected("an object"),
);

/** The reason is shown to the MCP client and on the operator's terminal: one line, no controls. */
export const denialBodySchema = z.strictObject(
  {
    reason: z
      .string({ error: "Give a reason for the denial" })
      .refine((r) => r.trim() !== "", { error: "Give a reason for the denial" })
      .refine((r) => !Array.from(r).some(isControl), {
        error: "The reason must be one line of text without control characters",
      })
      .refine((r) => Array.from(r).length <= MAX_REASON_CHARS, {
        error: `The reason is over ${MAX_REASON_CHARS} characters`,
      }),
  },
  expected("an object"),
);

/** The refusal of an options or approval body: the digest's own words, else the field and why. */
export function approvalProblem(problem: { field: string; why: string }): string {
  if (problem.field === "digest") return SEND_DIGEST;
  if (problem.field.startsWith("assertion"))
    return `Expected a JSON WebAuthn response: ${problemText(problem)}`;
  return `Expected the JSON body the approvals page sends: ${problemText(problem)}`;
}

/** The refusal of a denial body: the reason's own sentence, else the field and why. */
export function denialProblem(problem: { field: string; why: string }): string {
  return problem.field === "reason"
    ? problem.why
    : `Expected a JSON body with a reason: ${problemText(problem)}`;
}
