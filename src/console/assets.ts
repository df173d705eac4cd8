import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** A file the console serves, read once at start-up so a request never touches the disk. */
export interface Asset {
  type: string;
  body: Buffer;
}

const HERE = dirname(fileURLToPath(import.meta.url));

/**
 * The console's own files (web/), beside this module in the source tree
 * and, from the build, in the source tree the package ships: they are
 * served as written, with no bundler in between.
 */
function webDir(): string {
  for (const dir of [join(HERE, "web"), resolve(HERE, "..", "..", "src", "console", "web")]) {
    if (existsSync(join(dir, "console.css"))) return dir;
  }
  throw new Error(`the console's web files are missing (looked in ${join(HERE, "web")})`);
}

/**
 * @simplewebauthn/browser's UMD bundle (global `SimpleWebAuthnBrowser`). The
 * package exports only its ES entry, so the bundle is found from there.
 */
function webauthnBundle(): string {
  const entry = createRequire(import.meta.url).resolve("@simplewebauthn/browser");
  return resolve(dirname(entry), "..", "dist", "bundle", "index.umd.min.js");
}

/** asciinema-player's browser bundle (global `AsciinemaPlayer`) and its stylesheet. */
function playerFile(name: string): string {
  const entry = createRequire(import.meta.url).resolve("asciinema-player");
  return resolve(dirname(entry), "bundle", name);
}

const JS = "text/javascript; charset=utf-8";

/** Every asset by the name it is served under (/console/assets/NAME); nothing else is served. */
export function loadAssets(): ReadonlyMap<string, Asset> {
  const web = webDir();
  const files: Array<[name: string, path: string, type: string]> = [
    ["console.css", join(web, "console.css"), "text/css; charset=utf-8"],
    ["request.js", join(web, "request.js"), JS],
    ["login.js", join(web, "login.js"), JS],
    ["enrol.js", join(web, "enrol.js"), JS],
    ["approvals.js", join(web, "approvals.js"), JS],
    ["audit.js", join(web, "audit.js"), JS],
    ["audit-chart.js", join(web, "audit-chart.js"), JS],
    ["sessions.js", join(web, "sessions.js"), JS],
    ["player.js", join(web, "player.js"), JS],
    ["follow.js", join(web, "follow.js"), JS],
    ["time.js", join(web, "time.js"), JS],
    ["webauthn.js", webauthnBundle(), JS],
    ["asciinema-player.js", playerFile("asciinema-player.min.js"), JS],
    ["asciinema-player.css", playerFile("asciinema-player.css"), "text/css; charset=utf-8"],
  ];
  return new Map(files.map(([name, path, type]) => [name, { type, body: readFileSync(path) }]));
}
