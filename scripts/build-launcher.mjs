// Compiles the native process launcher (native/*.c, ADR 0031) into dist/exec/relay-launcher
// with the system's C compiler ($CC, else cc). Where there is no compiler, or the C library lacks
// what the launcher needs (glibc 2.34 or later), nothing is built and the server uses the Node
// launcher (dist/exec/launcher.js) instead: the step says so and succeeds. A failure to compile
// a launcher that was there before removes the old one, so a stale binary never runs.
//
//   --require   no native launcher is a failure (exit 1), not a fallback: CI builds it this way.
//   --sanitize  (or RELAY_LAUNCHER_SANITIZE=1) builds dist/exec/relay-launcher-asan instead, with
//               AddressSanitizer and UndefinedBehaviorSanitizer, whose reports abort the launcher
//               (native/sanitize-options.c); failing to build it always fails. The launcher suites
//               run against it with RELAY_LAUNCHER_BINARY=dist/exec/relay-launcher-asan.
import { execFileSync } from "node:child_process";
import { mkdirSync, renameSync, rmSync } from "node:fs";

const args = new Set(process.argv.slice(2));
const sanitize = args.has("--sanitize") || process.env.RELAY_LAUNCHER_SANITIZE === "1";
const required = sanitize || args.has("--require");

const native = (name) => new URL(`../native/${name}`, import.meta.url).pathname;
const SOURCES = ["launcher.c", "frames.c", "spawn.c", "subreaper.c", "proc.c", "util.c"].map(native);
const OUT_DIR = new URL("../dist/exec/", import.meta.url).pathname;
const OUT = `${OUT_DIR}${sanitize ? "relay-launcher-asan" : "relay-launcher"}`;
const WARNINGS = ["-std=c11", "-Wall", "-Wextra", "-Werror"];
const FLAGS = sanitize
  ? [
      ...WARNINGS,
      "-O1",
      "-g",
      "-fsanitize=address,undefined",
      "-fno-sanitize-recover=all",
      "-fno-omit-frame-pointer",
    ]
  : [...WARNINGS, "-O2", "-D_FORTIFY_SOURCE=2", "-fstack-protector-strong"];
const sources = sanitize ? [...SOURCES, native("sanitize-options.c")] : SOURCES;

mkdirSync(OUT_DIR, { recursive: true });
const compiler = process.env.CC || "cc";
const partial = `${OUT}.tmp-${process.pid}`;
try {
  execFileSync(compiler, [...FLAGS, "-o", partial, ...sources], { stdio: ["ignore", "inherit", "inherit"] });
  renameSync(partial, OUT);
} catch (err) {
  rmSync(partial, { force: true });
  rmSync(OUT, { force: true });
  const why = err.code === "ENOENT" ? `no C compiler (${compiler})` : "the compiler failed";
  if (required) {
    process.stderr.write(`relay-shell: ${OUT} was not built (${why})\n`);
    process.exit(1);
  }
  process.stderr.write(
    `relay-shell: the native process launcher was not built (${why}); the Node launcher will be used\n`,
  );
}
