import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { ConfigError, loadSettings } from "../../src/config/index.js";

type LoadOptions = NonNullable<Parameters<typeof loadSettings>[1]>;

/**
 * What the settings tests share: fresh working directories under one
 * temporary root (each with an optional .env file), load options with the
 * home directory `/home/op` and no XDG_STATE_HOME, and the ConfigError lines
 * an environment produces. `cleanup` removes the root.
 */
export function settingsHarness(prefix: string) {
  const root = mkdtempSync(join(tmpdir(), prefix));
  let count = 0;
  const workdir = (envFile?: string): string => {
    const dir = join(root, `cwd-${count++}`);
    mkdirSync(dir);
    if (envFile !== undefined) writeFileSync(join(dir, ".env"), envFile);
    return dir;
  };
  const opts = (over: LoadOptions = {}): LoadOptions => ({
    cwd: workdir(),
    homeDir: "/home/op",
    xdgStateHome: "",
    ...over,
  });
  /** The ConfigError lines for an environment (fails the test when it loads). */
  const problems = (env: Record<string, string>, options: LoadOptions = opts()): string[] => {
    try {
      loadSettings(env, options);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as ConfigError).message.split("\n");
    }
    throw new Error("expected a ConfigError");
  };
  const cleanup = () => rmSync(root, { recursive: true, force: true });
  return { workdir, opts, problems, cleanup };
}
