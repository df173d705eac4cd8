import { type Hit, hit, type RuleInput, table } from "./args.js";

/**
 * HTTP clients. A request is a read until it names a method that changes the
 * resource or carries a body: a DELETE removes what the URL names (Tier 3,
 * remote_destruction), and so does a change sent to an endpoint that deletes
 * (`_delete_by_query`, below); POST, PUT, PATCH or any other method, and a body
 * or an upload, change remote state (Tier 2, remote_change). GET, HEAD and
 * OPTIONS read, also with `-G` turning data into a query.
 */

const DESTROY = hit(3, "remote_destruction");
const CHANGE = hit(2, "remote_change");

/** Methods that only read. */
const READS = new Set(["GET", "HEAD", "OPTIONS", "TRACE"]);

/**
 * Endpoints that delete though they are sent with POST: Elasticsearch's and OpenSearch's
 * `_delete_by_query` and `_close` (an index closed takes no reads or writes), Prometheus's
 * `admin/tsdb/delete_series` and `clean_tombstones` (which makes the deletion final), and the
 * `delete` and `_bulk_delete` actions of Kibana, Grafana and similar APIs. Judged by a segment of
 * the URL's path, as a server routes it.
 */
const DELETING_SEGMENT = /^(?:_delete_by_query|_close|delete_series|clean_tombstones|_?(?:bulk_)?delete)$/i;

/** Does some URL among `words` name a deleting endpoint? Query strings and fragments are not the path. */
function deletingUrl(words: readonly string[]): boolean {
  return words.some((w) => {
    const path = /^(?:[a-z][a-z0-9+.-]*:\/\/)?[^/\s]*(\/[^?#\s]*)/i.exec(w)?.[1];
    return path?.split("/").some((segment) => DELETING_SEGMENT.test(segment)) === true;
  });
}

/**
 * What a request does, from its method, whether it carries a body and the URLs it names: a
 * change sent to a deleting endpoint deletes.
 */
function request(method: string | null, body: boolean, urls: readonly string[] = []): Hit | null {
  let verdict: Hit | null = body ? CHANGE : null;
  if (method !== null) {
    const m = method.toUpperCase();
    if (m === "DELETE") return DESTROY;
    verdict = READS.has(m) ? null : CHANGE;
  }
  return verdict !== null && deletingUrl(urls) ? DESTROY : verdict;
}

/** curl short options that take a value (the value is the rest of the word or the next word). */
const CURL_VALUED = new Set("AbcCdDeEFHKmoPQrtTuUwxXYyz");

/** curl long options that send a body or upload a file. */
const CURL_BODY = new Set([
  "data",
  "data-raw",
  "data-binary",
  "data-urlencode",
  "data-ascii",
  "form",
  "form-string",
  "json",
  "upload-file",
]);

/** FTP/SFTP commands sent with `-Q` that delete the file or directory they name. */
const FTP_DELETE = /^[-+*]?\s*(?:dele|rmd|rm|rmdir)\b/i;

/** curl long options whose value is the next word (besides the body options), so that value is not a URL. */
const CURL_LONG_VALUED = new Set(
  "header user user-agent referer cookie cookie-jar output proxy cacert cert key resolve connect-to max-time connect-timeout retry write-out range interface dump-header oauth2-bearer aws-sigv4 unix-socket config".split(
    " ",
  ),
);

function curl({ args }: RuleInput): Hit | null {
  const v = args.values;
  let method: string | null = null;
  let body = false;
  let get = false;
  const quotes: string[] = [];
  const urls: string[] = [];
  for (let i = 0; i < v.length; i++) {
    const a = v[i]!;
    if (i >= args.optionEnd || !a.startsWith("-")) {
      if (i !== args.optionEnd) urls.push(a);
      continue;
    }
    if (a.startsWith("--") && a.length > 2) {
      const eq = a.indexOf("=");
      const name = (eq < 0 ? a.slice(2) : a.slice(2, eq)).toLowerCase();
      const value = (): string => (eq < 0 ? (v[++i] ?? "") : a.slice(eq + 1));
      if (name === "request") method = value();
      else if (CURL_BODY.has(name)) {
        value();
        body = true;
      } else if (name === "quote") quotes.push(value());
      else if (name === "get") get = true;
      else if (name === "url") urls.push(value());
      else if (CURL_LONG_VALUED.has(name)) value();
      continue;
    }
    if (a.length < 2) continue;
    for (let k = 1; k < a.length; k++) {
      const letter = a[k]!;
      if (letter === "G") get = true;
      if (!CURL_VALUED.has(letter)) continue;
      const value = k + 1 < a.length ? a.slice(k + 1) : (v[++i] ?? "");
      if (letter === "X") method = value;
      else if (letter === "d" || letter === "F" || letter === "T") body = true;
      else if (letter === "Q") quotes.push(value);
      break;
    }
  }
  if (quotes.some((q) => FTP_DELETE.test(q))) return DESTROY;
  const verdict = request(method, body && !get, urls);
  return verdict ?? (quotes.length > 0 ? CHANGE : null);
}

function wget({ args }: RuleInput): Hit | null {
  const method = args.optionValue("--method") ?? null;
  const longs = args.longs();
  const body = longs.some((l) => /^(?:post|body)-(?:data|file)$/.test(l));
  return request(method, body, args.operands());
}

/** httpie and xh options that take a value; every other option is a flag. */
const HTTPIE_VALUED = new Set([
  "-a",
  "--auth",
  "-A",
  "--auth-type",
  "-o",
  "--output",
  "-p",
  "--print",
  "-P",
  "--history-print",
  "-s",
  "--style",
  "--session",
  "--session-read-only",
  "--pretty",
  "--format-options",
  "--verify",
  "--cert",
  "--cert-key",
  "--cert-key-pass",
  "--proxy",
  "--timeout",
  "--max-redirects",
  "--max-headers",
  "--boundary",
  "--response-charset",
  "--response-mime",
  "--ssl",
  "--ciphers",
  "--default-scheme",
  "--http-version",
  "--resolve",
  "--interface",
  "--unix-socket",
]);

/**
 * A request item: `name=value`, `name:=json`, `field@file` and `name=@file`
 * send data; `name==value` is a query parameter and `Header:value` a header.
 * The first separator decides (`:` in a URL never reaches here).
 */
function sendsData(item: string): boolean {
  const at = item.search(/[:=@]/);
  if (at < 0) return false;
  const [c, next] = [item[at], item[at + 1]];
  if (c === "=") return next !== "=";
  if (c === "@") return true;
  return next === "=";
}

/** httpie (`http`, `https`) and xh: `[METHOD] URL [ITEM …]`; data items without a method make a POST. */
function httpie({ args }: RuleInput): Hit | null {
  const v = args.values;
  const operands: string[] = [];
  let raw = false;
  for (let i = 0; i < v.length; i++) {
    const a = v[i]!;
    if (i >= args.optionEnd || !(a.startsWith("-") && a.length > 1)) {
      operands.push(a);
      continue;
    }
    if (a === "--offline") return null;
    if (a === "--raw" || a.startsWith("--raw=")) {
      raw = true;
      if (a === "--raw") i++;
    } else if (HTTPIE_VALUED.has(a)) i++;
  }
  const [first, second] = operands;
  if (first === undefined) return null;
  const hasMethod = second !== undefined && /^[a-z]+$/i.test(first);
  const items = operands.slice(hasMethod ? 2 : 1);
  const url = hasMethod ? second : first;
  return request(hasMethod ? first : null, raw || items.some(sendsData), [url]);
}

export const HTTP_RULES = table([
  ["curl", curl],
  [["wget", "wget2"], wget],
  [["http", "https", "xh", "xhs"], httpie],
]);
