import { createRequire } from "node:module";

type Ssh2Module = typeof import("ssh2");

const requireFromHere = createRequire(import.meta.url);

/**
 * ssh2 (CommonJS, with native crypto) is loaded on the first dial rather than
 * at start-up: a server that never uses SSH does not pay for it before it can
 * answer `initialize`. Node caches the module after the first load.
 */
export function loadSsh2(): Ssh2Module {
  return requireFromHere("ssh2") as Ssh2Module;
}
