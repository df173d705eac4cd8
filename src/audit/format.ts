import type { AuditFormat } from "../config/index.js";
import { canonicalJson, pythonJson } from "../core/index.js";
import type { AuditRecord } from "./types.js";

export const CEF_HEADER = "CEF:0|relay-shell|relay-shell|1.0|audit|tool-call|5|";
export const LEEF_HEADER = "LEEF:2.0|relay-shell|relay-shell|1.0|audit|x09|";

/** One record as one line of the configured format, without the newline. */
export function formatRecord(record: AuditRecord, format: AuditFormat): string {
  switch (format) {
    case "jsonl":
      return pythonJson(record);
    case "cef":
      return CEF_HEADER + keyValues(record, escapeCef).join(" ");
    case "leef":
      return LEEF_HEADER + keyValues(record, escapeLeef).join("\t");
  }
}

function keyValues(record: AuditRecord, escapeValue: (text: string) => string): string[] {
  const fields = record as unknown as Record<string, unknown>;
  return Object.keys(fields)
    .filter((key) => fields[key] !== undefined)
    .sort() // record field names are ASCII, where unit order is code-point order
    .map((key) => `${escapeValue(key)}=${escapeValue(pythonStr(fields[key]))}`);
}

/**
 * A value as Python's `str()` would print it, which is what SIEM parsers of
 * the Python release were built against: `True`, `False`, `None`, float repr;
 * objects and arrays as compact JSON.
 */
export function pythonStr(value: unknown): string {
  if (value === true) return "True";
  if (value === false) return "False";
  if (value === null || value === undefined) return "None";
  if (typeof value === "string") return value;
  // Numbers, like objects, take their canonical JSON form: integers as digits,
  // other values as Python's float repr.
  return canonicalJson(value);
}

const CEF_ESCAPES: Record<string, string> = {
  "\\": "\\\\",
  "=": "\\=",
  "|": "\\|",
  "\n": "\\n",
  "\r": "\\r",
};
const LEEF_ESCAPES: Record<string, string> = {
  "\\": "\\\\",
  "=": "\\=",
  "\t": "\\t",
  "\n": "\\n",
  "\r": "\\r",
};

/** CEF extension value escaping; newlines are escaped so a record stays on one line. */
export function escapeCef(text: string): string {
  return text.replace(/[\\=|\n\r]/g, (c) => CEF_ESCAPES[c] ?? c);
}

/** LEEF value escaping; the tab is the field delimiter declared in the header. */
export function escapeLeef(text: string): string {
  return text.replace(/[\\=\t\n\r]/g, (c) => LEEF_ESCAPES[c] ?? c);
}
