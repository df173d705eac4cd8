import { z } from "zod";
import { fail, ok, type Result } from "../core/index.js";

/**
 * Tool parameters are declared as data. One table yields both the zod parser
 * the runner validates with and the JSON Schema the client sees, so the two
 * can never drift apart.
 */
type ParamSpec =
  | {
      type: "string";
      description: string;
      default?: string;
      noNul?: boolean;
      /** The whole value must match (anchor it); announced as the JSON Schema `pattern`. */
      pattern?: RegExp;
      optional?: true;
    }
  | { type: "integer"; description: string; default?: number; optional?: true }
  | { type: "number"; description: string; default?: number }
  | { type: "boolean"; description: string; default?: boolean }
  | { type: "boolean_or_null"; description: string; default: null }
  /** A JSON object, taken as given (a tool that forwards another call's arguments). */
  | { type: "object"; description: string; default?: Record<string, never> };

export type ParamTable = Readonly<Record<string, ParamSpec>>;

type ValueOf<S extends ParamSpec> = S extends { type: "string" }
  ? string
  : S extends { type: "integer" | "number" }
    ? number
    : S extends { type: "boolean" }
      ? boolean
      : S extends { type: "object" }
        ? Record<string, unknown>
        : boolean | null;

/** Parsed arguments: every parameter is present, except `optional` ones, which may be undefined. */
export type ArgsOf<P extends ParamTable> = {
  [K in keyof P]: P[K] extends { optional: true } ? ValueOf<P[K]> | undefined : ValueOf<P[K]>;
};

const INT_TEXT = /^[+-]?\d{1,15}$/;
const NUMBER_TEXT = /^[+-]?(\d{1,15}(\.\d*)?|\.\d+)([eE][+-]?\d{1,3})?$/;

// Clients that send numbers and booleans as strings keep working (docs/wire-contract.md §1.5).
function coerceNumber(value: unknown): unknown {
  if (typeof value === "string") {
    const text = value.trim();
    if (NUMBER_TEXT.test(text)) return Number(text);
  }
  return value;
}

function coerceInteger(value: unknown): unknown {
  if (typeof value === "string") {
    const text = value.trim();
    if (INT_TEXT.test(text)) return Number(text);
  }
  return value;
}

function coerceBoolean(value: unknown): unknown {
  if (typeof value === "string") {
    const text = value.trim().toLowerCase();
    if (text === "true") return true;
    if (text === "false") return false;
  }
  return value;
}

/** An object sent as its JSON text, as some clients send every argument, is read as the object. */
function coerceObject(value: unknown): unknown {
  if (typeof value !== "string") return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

function fieldSchema(spec: ParamSpec): z.ZodType {
  switch (spec.type) {
    case "string": {
      let s = z.string();
      if (spec.noNul) s = s.refine((v) => !v.includes("\0"), "must not contain NUL bytes");
      if (spec.pattern) s = s.regex(stateless(spec.pattern), `must match ${spec.pattern.source}`);
      if (spec.optional) return s.optional();
      return spec.default === undefined ? s : s.default(spec.default);
    }
    case "integer": {
      const s = z.preprocess(coerceInteger, z.number().int().min(-1e15).max(1e15));
      if (spec.optional) return s.optional();
      return spec.default === undefined ? s : s.default(spec.default);
    }
    case "number": {
      const s = z.preprocess(coerceNumber, z.number().min(-1e15).max(1e15));
      return spec.default === undefined ? s : s.default(spec.default);
    }
    case "boolean": {
      const s = z.preprocess(coerceBoolean, z.boolean());
      return spec.default === undefined ? s : s.default(spec.default);
    }
    case "boolean_or_null":
      return z.preprocess(coerceBoolean, z.boolean().nullable()).default(null);
    case "object": {
      const s = z.preprocess(coerceObject, z.record(z.string(), z.unknown()));
      return spec.default === undefined ? s : s.default(spec.default);
    }
  }
}

/** A global or sticky regex keeps `lastIndex` between tests and would skip matches. */
function stateless(regex: RegExp): RegExp {
  return regex.global || regex.sticky ? new RegExp(regex.source, regex.flags.replace(/[gy]/g, "")) : regex;
}

export interface ArgParser<A> {
  /** The validated arguments, or one problem per field that failed (`field: problem`). */
  parse(raw: unknown): Result<A, string[]>;
}

/** Unknown argument names are dropped, not rejected (docs/wire-contract.md §1.5). */
export function createArgParser<P extends ParamTable>(table: P): ArgParser<ArgsOf<P>> {
  const shape: Record<string, z.ZodType> = {};
  for (const [name, spec] of Object.entries(table)) shape[name] = fieldSchema(spec);
  const schema = z.object(shape);
  return {
    parse(raw) {
      const input = raw === undefined || raw === null ? {} : raw;
      const result = schema.safeParse(input);
      if (result.success) return ok(result.data as ArgsOf<P>);
      const problems = result.error.issues.map((issue) => {
        const where = issue.path.length > 0 ? issue.path.join(".") : "arguments";
        return `${where}: ${issue.message}`;
      });
      return fail(problems);
    },
  };
}

/** The JSON Schema of a parameter table, as announced in tools/list. */
export function toInputSchema(table: ParamTable): {
  type: "object";
  properties: Record<string, Record<string, unknown>>;
  required?: string[];
} {
  const properties: Record<string, Record<string, unknown>> = {};
  const required: string[] = [];
  for (const [name, spec] of Object.entries(table)) {
    const type = spec.type === "boolean_or_null" ? ["boolean", "null"] : spec.type;
    const prop: Record<string, unknown> = { type, description: spec.description };
    // JSON Schema patterns have no flags: a pattern that needs them is checked by the server only.
    if (spec.type === "string" && spec.pattern && spec.pattern.flags.replace(/[gy]/g, "") === "") {
      prop.pattern = spec.pattern.source;
    }
    if (spec.default !== undefined) prop.default = spec.default;
    else if (!("optional" in spec && spec.optional)) required.push(name);
    properties[name] = prop;
  }
  return required.length > 0 ? { type: "object", properties, required } : { type: "object", properties };
}
