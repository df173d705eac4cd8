/**
 * Where piped code comes from: programs that download (their output is
 * remote code) and programs that decode or decompress (their output is
 * decoded data), for the origin of what a shell or interpreter runs.
 */

export const DOWNLOADERS = new Set([
  "curl",
  "wget",
  "wget2",
  "fetch",
  "aria2c",
  "http",
  "https",
  "xh",
  "lwp-request",
  "lwp-download",
  "get",
  "nc",
  "ncat",
  "netcat",
  "socat",
  "tftp",
  "ftp",
  "invoke-webrequest",
  "iwr",
]);

const ALWAYS_DECODES = new Set([
  "gunzip",
  "zcat",
  "gzcat",
  "bunzip2",
  "bzcat",
  "unxz",
  "xzcat",
  "unzstd",
  "zstdcat",
  "lz4cat",
  "unlz4",
  "uncompress",
  "uudecode",
  "lzcat",
  "unlzma",
  "brotli-d",
]);

const DECODE_FLAG = new Set([
  "base64",
  "base32",
  "basenc",
  "gzip",
  "bzip2",
  "xz",
  "zstd",
  "lz4",
  "lzma",
  "brotli",
  "pigz",
]);

/** Does this argv turn encoded or compressed input into something else (base64 -d, xxd -r, openssl enc -d ...)? */
export function isDecoder(name: string, args: string[]): boolean {
  if (ALWAYS_DECODES.has(name)) return true;
  if (DECODE_FLAG.has(name))
    return args.some((a) => /^-[a-zA-Z]*[dD]/.test(a) || a === "--decode" || a === "--decompress");
  if (name === "xxd") return args.some((a) => /^-[a-zA-Z]*r/.test(a));
  if (name === "openssl")
    return args.some((a) => a === "-d" || a === "-decrypt" || a === "-base64" || a === "base64");
  if (name === "printf" || name === "echo")
    return args.some((a) => /\\(?:x[0-9a-fA-F]|[0-7]{2,3}|u[0-9a-fA-F])/.test(a));
  if (name === "rev" || name === "certutil") return true;
  return false;
}
