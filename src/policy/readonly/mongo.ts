import type { Word } from "../shell/words.js";

/**
 * `mongosh --eval 'JS'` (and the legacy `mongo`): the JavaScript given is read
 * as a narrow expression language, and proven only when every call in it is a
 * reading method. Anything outside that language is not proven: assignments,
 * functions and arrows, `new`, comments, template strings, a call through
 * anything but a listed name, a free identifier, the aggregation stages that
 * write (`$out`, `$merge`) and the operators that run server-side code
 * (`$where`, `$function`, `$accumulator`).
 */

/** Functions of the shell itself that print or build values. */
const GLOBAL_CALLS = new Set(
  "print printjson printjsononeline tojson ObjectId ISODate NumberLong NumberInt NumberDecimal Date UUID Timestamp stringify".split(
    " ",
  ),
);

/** Methods of `db`, `rs`, `sh`, a collection and a cursor that only read. */
const READ_METHODS = new Set(
  [
    // db
    "getCollectionNames getCollectionInfos stats serverStatus hostInfo version isMaster hello currentOp getName",
    "getSiblingDB getCollection getMongo getDBNames getUsers getUser getRoles getRole getReplicationInfo",
    "printReplicationInfo printSecondaryReplicationInfo printSlaveReplicationInfo getProfilingStatus",
    "getProfilingLevel serverBuildInfo serverCmdLineOpts getLogComponents",
    // rs and sh
    "status conf config getBalancerState isBalancerRunning",
    // a collection
    "find findOne countDocuments estimatedDocumentCount count distinct aggregate getIndexes getIndexKeys",
    "dataSize storageSize totalSize totalIndexSize latencyStats explain getShardDistribution isCapped",
    // a cursor
    "limit skip sort toArray pretty size hint itcount batchSize maxTimeMS readPref next hasNext",
    "projection collation comment min max",
  ]
    .join(" ")
    .split(" "),
);

/** The printing functions `forEach` may be given. */
const PRINTERS = new Set(["print", "printjson", "printjsononeline"]);

/** Roots an expression may start from; other free names may be anything the shell defines. */
const ROOTS = new Set(["db", "rs", "sh", "JSON", "true", "false", "null", "undefined", "Infinity", "NaN"]);

/** Keys and strings that write or run code on the server. */
const ACTING_OPERATORS = /\$(?:out|merge|where|function|accumulator)\b/;

type Token = { kind: "name" | "string" | "number" | "regex" | "punct"; text: string };

/** Where a `/` starts a regular expression literal rather than a division. */
const VALUE_START = new Set(["(", ",", ":", "[", "{", ";"]);

/** Tokens of `source`, or null when it holds anything outside the language. */
function tokens(source: string): Token[] | null {
  if (/\/\/|\/\*|`|\\u|=/.test(source)) return null;
  const out: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const rest = source.slice(i);
    const name = /^[A-Za-z_$][\w$]*/.exec(rest);
    const number = /^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(rest);
    const quoted = /^(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')/.exec(rest);
    const prev = out[out.length - 1];
    const regex =
      c === "/" && (prev === undefined || VALUE_START.has(prev.text))
        ? /^\/(?:[^/\\\n]|\\.)+\/[gimsuy]*/.exec(rest)
        : null;
    const match = name ?? number ?? quoted ?? regex;
    if (match !== null) {
      const kind = name !== null ? "name" : number !== null ? "number" : quoted !== null ? "string" : "regex";
      out.push({ kind, text: match[0] });
      i += match[0].length;
    } else if ("{}[](),:.;".includes(c)) {
      out.push({ kind: "punct", text: c });
      i++;
    } else return null;
  }
  return out;
}

/** True when `source` only calls reading methods on values it built from literals and `db`/`rs`/`sh`. */
export function mongoEvalReadsOnly(source: string): boolean {
  if (ACTING_OPERATORS.test(source)) return false;
  const list = tokens(source);
  if (list === null || list.length === 0) return false;
  for (let k = 0; k < list.length; k++) {
    const t = list[k]!;
    const prev = list[k - 1];
    const next = list[k + 1];
    if (t.text === "(" && prev?.kind !== "name") return false;
    if (t.kind !== "name") continue;
    // `.forEach(printjson)`: each document printed, the one function argument the language allows.
    if (t.text === "forEach" && prev?.text === "." && next?.text === "(") {
      const [fn, close] = [list[k + 2], list[k + 3]];
      if (fn === undefined || !PRINTERS.has(fn.text) || close?.text !== ")") return false;
      k += 3;
      continue;
    }
    if (next?.text === "(") {
      const member = prev?.text === ".";
      if (!(member ? READ_METHODS.has(t.text) || GLOBAL_CALLS.has(t.text) : GLOBAL_CALLS.has(t.text)))
        return false;
    } else if (prev?.text !== "." && next?.text !== ":" && !ROOTS.has(t.text)) return false;
  }
  return true;
}

/** mongosh's options whose value is the next word. */
const MONGO_VALUED = new Set([
  "--host",
  "--port",
  "-u",
  "--username",
  "-p",
  "--password",
  "--authenticationDatabase",
  "--authenticationMechanism",
  "--tlsCAFile",
  "--tlsCertificateKeyFile",
  "--apiVersion",
]);

/** Options that read a script, keep a prompt open on stdin, or load code. */
const MONGO_ACTING = /^(?:-f|--file|--shell|--nodb|--retryWrites|--tlsCertificateKeyFilePassword)(?:=|$)/;

/** `mongosh [options] [connection] --eval JS …`: every --eval reads and no file or prompt runs. */
export function mongoShellReadsOnly(args: readonly Word[]): boolean {
  const evals: Word[] = [];
  for (let i = 0; i < args.length; i++) {
    const w = args[i]!;
    const v = w.value;
    if (w.dynamic || w.glob) return false;
    if (v === "--eval") {
      const code = args[i + 1];
      if (code === undefined) return false;
      evals.push(code);
      i++;
    } else if (v.startsWith("--eval=")) evals.push({ ...w, value: v.slice(7) });
    else if (MONGO_ACTING.test(v)) return false;
    else if (MONGO_VALUED.has(v)) i++;
    else if (!v.startsWith("-") && /\.js$/i.test(v)) return false;
  }
  return evals.length > 0 && evals.every((e) => !e.dynamic && mongoEvalReadsOnly(e.value));
}
