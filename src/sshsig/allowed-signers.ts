import { parsePublicKey, type SshPublicKey } from "./keys.js";
import { matchPatternList } from "./patterns.js";

/** One usable line of an allowed-signers file. */
export interface AllowedSigner {
  /** 1-based line number in the file, for messages. */
  line: number;
  /** The principals field as written, quotes removed: a comma-separated pattern list (`*@example.com,!eve@example.com`). */
  principals: string;
  /** The `namespaces="…"` pattern list; null when the line has none (every namespace). */
  namespaces: string | null;
  /** `valid-after`, epoch seconds; null when absent. */
  validAfter: number | null;
  /** `valid-before`, epoch seconds; null when absent. */
  validBefore: number | null;
  key: SshPublicKey;
}

export interface AllowedSigners {
  signers: AllowedSigner[];
  /** One message per refused line, each starting `line N: `; a refused line never matches. */
  problems: string[];
}

const OPTION_NAMES = ["cert-authority", "namespaces", "valid-after", "valid-before"] as const;

/**
 * Splits the options field at commas outside double quotes; `\"` inside a
 * quoted value is a literal quote (OpenSSH's `opt_dequote`).
 */
function parseOptions(field: string): {
  certAuthority: boolean;
  values: Map<string, string>;
  problems: string[];
} {
  const values = new Map<string, string>();
  const problems: string[] = [];
  let certAuthority = false;
  let i = 0;
  while (i <= field.length) {
    const nameMatch = /^[A-Za-z-]*/.exec(field.slice(i));
    const name = (nameMatch?.[0] ?? "").toLowerCase();
    i += nameMatch?.[0].length ?? 0;
    if (name === "") {
      problems.push(`empty or malformed option at "${field.slice(i, i + 20)}"`);
      break;
    }
    if (!(OPTION_NAMES as readonly string[]).includes(name)) {
      problems.push(`unknown option "${name}"`);
      break;
    }
    if (values.has(name) || (name === "cert-authority" && certAuthority)) {
      problems.push(`option "${name}" given twice`);
      break;
    }
    if (name === "cert-authority") {
      certAuthority = true;
    } else {
      if (field[i] !== "=" || field[i + 1] !== '"') {
        problems.push(`option "${name}" needs a quoted value (${name}="…")`);
        break;
      }
      i += 2;
      let value = "";
      while (i < field.length && field[i] !== '"') {
        if (field[i] === "\\" && field[i + 1] === '"') i++;
        value += field[i];
        i++;
      }
      if (i >= field.length) {
        problems.push(`option "${name}" has no closing quote`);
        break;
      }
      i++;
      values.set(name, value);
    }
    if (i === field.length) break;
    if (field[i] !== ",") {
      problems.push(`unexpected text after option "${name}"`);
      break;
    }
    i++;
  }
  return { certAuthority, values, problems };
}

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * `YYYYMMDD[Z]` or `YYYYMMDDHHMM[SS][Z]` → epoch seconds: UTC with the `Z`,
 * the relay's local time zone without it, as ssh-keygen reads them.
 */
export function parseSignerTime(text: string): number | null {
  const m = /^(\d{4})(\d{2})(\d{2})(?:(\d{2})(\d{2})(\d{2})?)?(Z?)$/.exec(text);
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map((v) => Number(v ?? 0)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = month === 2 && !leap ? 28 : (DAYS_IN_MONTH[month - 1] ?? 0);
  if (month < 1 || month > 12 || day < 1 || day > days || hour > 23 || minute > 59 || second > 59)
    return null;
  const ms =
    m[7] === "Z"
      ? Date.UTC(year, month - 1, day, hour, minute, second)
      : new Date(year, month - 1, day, hour, minute, second).getTime();
  return Math.floor(ms / 1000);
}

/** Reads the first whitespace-delimited field, where double quotes protect spaces. */
function quotedToken(text: string): { token: string; rest: string } {
  let quoted = false;
  let i = 0;
  for (; i < text.length; i++) {
    const c = text[i];
    if (!quoted && (c === " " || c === "\t")) break;
    if (c === "\\" && text[i + 1] === '"') i++;
    else if (c === '"') quoted = !quoted;
  }
  return { token: text.slice(0, i), rest: text.slice(i).trimStart() };
}

/** Every OpenSSH key type name starts so; anything else where a key may start is an options field. */
function looksLikeKeyType(token: string): boolean {
  return /^(?:ssh-|ecdsa-|sk-)/.test(token);
}

/** One line → a signer, or what is wrong with it. */
function parseLine(text: string, line: number): AllowedSigner | string {
  let rest = text;
  let principals: string;
  if (rest.startsWith('"')) {
    const close = rest.indexOf('"', 1);
    if (close < 0) return "the quoted principals have no closing quote";
    principals = rest.slice(1, close);
    rest = rest.slice(close + 1);
    if (rest !== "" && !/^[ \t]/.test(rest)) return "the quoted principals must be followed by a space";
  } else {
    const space = rest.search(/[ \t]/);
    principals = space < 0 ? rest : rest.slice(0, space);
    rest = space < 0 ? "" : rest.slice(space);
  }
  rest = rest.trimStart();
  if (principals === "" || principals.split(",").some((p) => p === "" || p === "!")) {
    return "the principals field is empty or has an empty pattern";
  }
  if (rest === "") return "no key after the principals";

  let namespaces: string | null = null;
  let validAfter: number | null = null;
  let validBefore: number | null = null;
  const first = quotedToken(rest);
  if (!looksLikeKeyType(first.token)) {
    const options = parseOptions(first.token);
    if (options.problems.length > 0) return options.problems.join("; ");
    if (options.certAuthority) {
      return "cert-authority lines are not supported (certificates are not accepted); this line never matches";
    }
    namespaces = options.values.get("namespaces") ?? null;
    for (const name of ["valid-after", "valid-before"] as const) {
      const value = options.values.get(name);
      if (value === undefined) continue;
      const seconds = parseSignerTime(value);
      if (seconds === null) return `${name}="${value}" is not a time (YYYYMMDD[Z] or YYYYMMDDHHMM[SS][Z])`;
      if (name === "valid-after") validAfter = seconds;
      else validBefore = seconds;
    }
    if (validAfter !== null && validBefore !== null && validBefore <= validAfter) {
      return "valid-before is not later than valid-after, so the key is never valid";
    }
    rest = first.rest;
    if (rest === "") return "no key after the options";
    const next = quotedToken(rest).token;
    if (!looksLikeKeyType(next)) {
      return `"${next}" where the key type belongs (options are separated by commas, with no spaces)`;
    }
  }
  let key: SshPublicKey;
  try {
    key = parsePublicKey(rest);
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  return { line, principals, namespaces, validAfter, validBefore, key };
}

/**
 * Parses an OpenSSH allowed-signers file (ssh-keygen(1), "ALLOWED SIGNERS"):
 * `principals [options] keytype base64 [comment]` per line, `#` comments and
 * blank lines skipped. A line that cannot be read whole, a `cert-authority`
 * line and a line whose key type is not supported are left out and named in
 * `problems`, so a typo never widens who may sign. Never throws.
 */
export function parseAllowedSigners(text: string): AllowedSigners {
  const signers: AllowedSigner[] = [];
  const problems: string[] = [];
  const lines = text.split("\n");
  for (const [index, raw] of lines.entries()) {
    const content = raw.replace(/\r$/, "").trim();
    if (content === "" || content.startsWith("#")) continue;
    const parsed = parseLine(content, index + 1);
    if (typeof parsed === "string") problems.push(`line ${index + 1}: ${parsed}`);
    else signers.push(parsed);
  }
  return { signers, problems };
}

/** True when `principal` matches the signer's principals pattern list (a `!pattern` match excludes). */
export function signerAllowsPrincipal(signer: AllowedSigner, principal: string): boolean {
  return matchPatternList(principal, signer.principals);
}

/** True when the signer's `namespaces` option, if any, allows `namespace`. */
export function signerAllowsNamespace(signer: AllowedSigner, namespace: string): boolean {
  return signer.namespaces === null || matchPatternList(namespace, signer.namespaces);
}
