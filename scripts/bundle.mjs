// Bundles the server's entry (src/cli/main.ts) with the relay's own modules and the
// pure-JavaScript packages it loads at start-up into dist/cli/main.js, over what tsc wrote there. Node's ES module
// loader spends most of the start-up resolving, reading and linking some three hundred small
// files; one file starts in about half the time (docs/performance.md). Packages with native parts,
// worker threads or files found by path at run time stay external and load from node_modules as
// before; so does everything outside dist/cli/main.js (the launcher, dist/exec/launcher.js, is a
// program of its own and keeps its unbundled modules).
import { readdirSync, rmSync } from "node:fs";
import { build } from "esbuild";

// From the sources, which tsc has type-checked by then: bundling tsc's own main.js would, on an
// incremental build that left it alone, bundle the last bundle.
const ENTRY = new URL("../src/cli/main.ts", import.meta.url).pathname;
const OUT_DIR = new URL("../dist/cli/", import.meta.url).pathname;

const EXTERNAL = [
  // Native code, or files located through require.resolve at run time.
  "koffi",
  "better-sqlite3",
  "@lydell/node-pty",
  "web-tree-sitter",
  "tree-sitter-bash",
  "tree-sitter-python",
  "ssh2",
  // Worker threads and transports found by path.
  "pino",
  // Loaded only when their feature is on; they gain nothing from the bundle.
  "hono",
  "@hono/node-server",
  "@simplewebauthn/server",
  "@simplewebauthn/browser",
  "asciinema-player",
  "prom-client",
];

// Chunks of an earlier build would otherwise pile up (tsc does not clean dist/).
for (const name of readdirSync(OUT_DIR))
  if (/^bundle-[A-Z0-9]+\.js(\.map)?$/.test(name)) rmSync(OUT_DIR + name);

/** What both programs are built with. */
const SHARED = {
  allowOverwrite: true,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: EXTERNAL,
  logLevel: "warning",
  legalComments: "none",
  // Maps beside each bundle, for stack traces read with `node --enable-source-maps`: read only then,
  // so a start pays nothing for them.
  sourcemap: "linked",
  sourcesContent: false,
};

await build({
  entryPoints: [ENTRY],
  outdir: OUT_DIR,
  // What main.js imports only for a subcommand or a setting (the console, consent, the INFRA-1
  // daemon, the HTTP edge) goes to chunks of its own, read only when it is imported.
  splitting: true,
  // Chunks sit beside main.js, so a module's import.meta.url names the same folder in every chunk.
  chunkNames: "bundle-[hash]",
  ...SHARED,
});

// The Node launcher (used where the native one is not built) is a program of its own that the
// server forks by path: one file too, so the package ships what runs and nothing beside it.
await build({
  entryPoints: [new URL("../src/exec/launcher.ts", import.meta.url).pathname],
  outfile: new URL("../dist/exec/launcher.js", import.meta.url).pathname,
  ...SHARED,
});
