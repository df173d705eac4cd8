import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  clearStaleSocket,
  directoryProblem,
  socketDirectoryProblem,
  stateDirectoryProblem,
} from "./socket-dir.js";

const UID = process.geteuid?.() ?? 0;
let base = "";

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), "relay-infra-dir-"));
});

afterEach(() => {
  rmSync(base, { recursive: true, force: true });
});

function dir(name: string, mode: number): string {
  const path = join(base, name);
  mkdirSync(path);
  chmodSync(path, mode);
  return path;
}

describe("directoryProblem", () => {
  it("accepts the broker's own directory with an allowed mode", () => {
    expect(socketDirectoryProblem(join(dir("a", 0o700), "s.sock"), UID)).toBeNull();
    expect(socketDirectoryProblem(join(dir("b", 0o750), "s.sock"), UID)).toBeNull();
    expect(stateDirectoryProblem(dir("c", 0o700), UID)).toBeNull();
  });

  it.each([0o755, 0o770, 0o777, 0o1700, 0o2750, 0o500])("refuses a socket directory of mode %o", (mode) => {
    const path = dir("d", mode);
    expect(socketDirectoryProblem(join(path, "s.sock"), UID)).toBe(
      `socket directory ${path} has mode 0${mode.toString(8).padStart(3, "0")}; it must be 0700 or 0750 (owner uid ${UID}, mode 0${mode.toString(8).padStart(3, "0")})`,
    );
  });

  it("refuses a state directory that is not exactly 0700", () => {
    expect(stateDirectoryProblem(dir("s", 0o750), UID)).toMatch(/has mode 0750; it must be 0700/);
  });

  it("refuses a directory of another uid, naming both", () => {
    const path = dir("o", 0o700);
    expect(directoryProblem("socket directory", path, UID + 1, [0o700])).toBe(
      `socket directory ${path} is owned by uid ${UID}, not by the broker's uid ${UID + 1} (owner uid ${UID}, mode 0700)`,
    );
  });

  it("refuses a symbolic link to a good directory, a file, and a missing path", () => {
    const good = dir("good", 0o700);
    symlinkSync(good, join(base, "link"));
    expect(socketDirectoryProblem(join(base, "link", "s.sock"), UID)).toMatch(
      /link is a symbolic link, not a directory/,
    );
    writeFileSync(join(base, "file"), "");
    expect(stateDirectoryProblem(join(base, "file"), UID)).toMatch(/file is a regular file, not a directory/);
    expect(stateDirectoryProblem(join(base, "missing"), UID)).toMatch(
      /missing does not exist; create it owned by uid \d+ with mode 0700/,
    );
  });
});

describe("clearStaleSocket", () => {
  let server: Server | null = null;

  afterEach(() => {
    server?.close();
    server = null;
  });

  it("has nothing to do where nothing is", async () => {
    expect(await clearStaleSocket(join(base, "none.sock"))).toBeNull();
  });

  it("leaves a file that is not a socket where it is", async () => {
    const path = join(base, "plain");
    writeFileSync(path, "keep me");
    expect(await clearStaleSocket(path)).toBe(`${path} is a regular file, not a socket; it is not removed`);
    expect(readFileSync(path, "utf8")).toBe("keep me");
    symlinkSync(path, join(base, "link.sock"));
    expect(await clearStaleSocket(join(base, "link.sock"))).toMatch(/is a symbolic link, not a socket/);
  });

  it("refuses a socket something answers on", async () => {
    const path = join(base, "live.sock");
    server = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => server?.listen(path, resolve));
    expect(await clearStaleSocket(path)).toBe(`${path} is in use: another process answers on it`);
  });
});
