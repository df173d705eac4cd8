import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join, relative } from "node:path";
import { REPO_ROOT } from "./helpers/server.js";

/**
 * The end-to-end suites start the built server (dist/cli/main.js), which forks
 * the built launcher (dist/exec/launcher.js); without a build first, a run
 * after an edit would test the code as it was at the last build. So every run
 * (`npm test`, `npx vitest run <files>`) compiles src/ first, incrementally:
 * after the first build only what changed is compiled again.
 */
const TSC = join(REPO_ROOT, "node_modules", ".bin", "tsc");
/** Ignored by git; kept outside dist/ so a published package never carries it. */
const BUILD_INFO = join(REPO_ROOT, ".build-cache", "tsconfig.build.tsbuildinfo");
const SRC = join(REPO_ROOT, "src");
const DIST = join(REPO_ROOT, "dist");

/** The dist/ file of every src/ module that has none (a deleted dist/, or a partial one). */
function missingOutputs(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return missingOutputs(path);
    if (!entry.name.endsWith(".ts") || entry.name.endsWith(".test.ts")) return [];
    const output = join(DIST, relative(SRC, path)).replace(/\.ts$/, ".js");
    return existsSync(output) ? [] : [relative(REPO_ROOT, output)];
  });
}

export default function buildBeforeTests(): void {
  // An incremental build trusts its build info and does not check that the outputs it recorded are
  // still there: when some are gone, start from scratch.
  if (missingOutputs().length > 0) rmSync(BUILD_INFO, { force: true });
  try {
    execFileSync(TSC, ["-p", "tsconfig.build.json", "--incremental", "--tsBuildInfoFile", BUILD_INFO], {
      cwd: REPO_ROOT,
      stdio: "inherit",
    });
  } catch {
    throw new Error(
      "the build failed (tsc -p tsconfig.build.json): the tests would run against a stale dist/",
    );
  }
  const missing = missingOutputs();
  if (missing.length > 0) throw new Error(`the build left out ${missing.join(", ")}`);
  // The server the suites start is the bundle `npm run build` makes (scripts/bundle.mjs), so that
  // is what they test.
  try {
    execFileSync(process.execPath, [join(REPO_ROOT, "scripts", "bundle.mjs")], {
      cwd: REPO_ROOT,
      stdio: "inherit",
    });
  } catch {
    throw new Error("the bundle step failed (node scripts/bundle.mjs): the tests would run a stale server");
  }
  // The native process launcher the server starts where it could be built (ADR 0031).
  execFileSync(process.execPath, [join(REPO_ROOT, "scripts", "build-launcher.mjs")], {
    cwd: REPO_ROOT,
    stdio: "inherit",
  });
}
