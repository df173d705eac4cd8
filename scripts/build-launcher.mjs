// Compiles the native process launcher (native/*.c, ADR 0031) into dist/exec/relay-launcher
// with the system's C compiler ($CC, else cc). Where there is no compiler, or the C library lacks
// what the launcher needs (glibc 2.34 or later), nothing is built and the server uses the Node
// launcher (dist/exec/launcher.js) instead: the step says so and succeeds. A failure to compile
// a launcher that was there before removes the old one, so a stale binary never runs.
import { execFileSync } from "node:child_process";
import { mkdirSync, renameSync, rmSync } from "node:fs";

const SOURCES = ["launcher.c", "subreaper.c", "proc.c", "util.c"].map(
  (name) => new URL(`../native/${name}`, import.meta.url).pathname,
);
const OUT_DIR = new URL("../dist/exec/", import.meta.url).pathname;
const OUT = `${OUT_DIR}relay-launcher`;
const FLAGS = [
  "-std=c11",
  "-O2",
  "-Wall",
  "-Wextra",
  "-Werror",
  "-D_FORTIFY_SOURCE=2",
  "-fstack-protector-strong",
];

mkdirSync(OUT_DIR, { recursive: true });
const compiler = process.env.CC || "cc";
const partial = `${OUT}.tmp-${process.pid}`;
try {
  execFileSync(compiler, [...FLAGS, "-o", partial, ...SOURCES], { stdio: ["ignore", "inherit", "inherit"] });
  renameSync(partial, OUT);
} catch (err) {
  rmSync(partial, { force: true });
  rmSync(OUT, { force: true });
  const why = err.code === "ENOENT" ? `no C compiler (${compiler})` : "the compiler failed";
  process.stderr.write(
    `relay-shell: the native process launcher was not built (${why}); the Node launcher will be used\n`,
  );
}
