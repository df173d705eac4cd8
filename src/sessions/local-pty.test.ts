import { chmodSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { RUN, sleepers, until } from "../../test/helpers/processes.js";
import { RelayError } from "../core/index.js";
import { findExecutable, openLocalPty } from "./local-pty.js";
import type { SessionTransport } from "./types.js";

const dir = mkdtempSync(join(tmpdir(), "relay-pty-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, LANG: "C.UTF-8", TERM: "xterm-256color" };

/** A terminal for `argv` in the test directory, 80x24, with the test environment. */
function openIn(argv: string[], extra: { killGraceMs?: number } = {}): SessionTransport {
  return openLocalPty({ argv, cwd: dir, env: ENV, cols: 80, rows: 24, ...extra });
}

function collect(transport: SessionTransport) {
  const state = { text: "", exit: undefined as number | null | undefined };
  transport.start({
    data: (chunk) => {
      state.text += Buffer.from(chunk).toString("utf8");
    },
    exit: (code) => {
      state.exit = code;
    },
  });
  return state;
}

describe("findExecutable", () => {
  it("searches PATH, resolves relative paths against cwd, and names what is missing", () => {
    expect(findExecutable("sh", dir, "/nonexistent:/bin:/usr/bin")).toMatch(/\/sh$/);
    const script = join(dir, "tool.sh");
    writeFileSync(script, "#!/bin/sh\necho hi\n");
    chmodSync(script, 0o755);
    expect(findExecutable("./tool.sh", dir, "")).toBe(script);
    writeFileSync(join(dir, "plain"), "x");
    expect(() => findExecutable("./plain", dir, "")).toThrow(/not executable: \.\/plain/);
    expect(() => findExecutable("no-such-program-xyz", dir, "/bin")).toThrow(RelayError);
    expect(() => findExecutable("no-such-program-xyz", dir, "/bin")).toThrow(
      "command not found: no-such-program-xyz",
    );
  });
});

describe("openLocalPty", () => {
  it("refuses a missing working directory before forking", () => {
    expect(() =>
      openLocalPty({ argv: ["sh"], cwd: join(dir, "missing"), env: ENV, cols: 80, rows: 24 }),
    ).toThrow(/cwd does not exist/);
  });

  it("leaks no descriptor: not for a refused spawn, not for a finished session", async () => {
    const fds = () => readdirSync("/proc/self/fd").length;
    const before = fds();
    for (let i = 0; i < 10; i++) {
      expect(() =>
        openLocalPty({ argv: ["no-such-program-xyz"], cwd: dir, env: ENV, cols: 80, rows: 24 }),
      ).toThrow();
      expect(() =>
        openLocalPty({ argv: ["sh"], cwd: join(dir, "nope"), env: ENV, cols: 80, rows: 24 }),
      ).toThrow();
    }
    expect(fds()).toBe(before);
    for (let i = 0; i < 5; i++) {
      const state = collect(openLocalPty({ argv: ["true"], cwd: dir, env: ENV, cols: 80, rows: 24 }));
      await until(() => state.exit !== undefined);
    }
    await until(() => fds() === before, 3000);
  });

  it("holds output until started, then reports the exit status", async () => {
    const pty = openIn(["sh", "-c", "echo early; exit 3"]);
    await new Promise((done) => setTimeout(done, 300));
    const state = collect(pty);
    await until(() => state.exit !== undefined);
    expect(state.text).toContain("early");
    expect(state.exit).toBe(3);
  });

  it("output held before start survives later reads into the shared read buffer", async () => {
    const pty = openIn(["bash", "-c", "for i in $(seq 1 300); do echo line$i; sleep 0.001; done"]);
    await new Promise((done) => setTimeout(done, 1500));
    const state = collect(pty);
    await until(() => state.exit !== undefined);
    const expected = Array.from({ length: 300 }, (_, i) => `line${i + 1}\r\n`).join("");
    expect(state.text).toBe(expected);
  });

  it("reads every chunk into one reused buffer: a flood allocates nothing per read", async () => {
    const pty = openIn(["bash", "-c", "head -c 2000000 /dev/zero | tr '\\0' x"]);
    const stores = new Set<ArrayBufferLike>();
    let chunks = 0;
    let got = 0;
    let exit: number | null | undefined;
    pty.start({
      data: (chunk) => {
        stores.add(chunk.buffer);
        chunks++;
        got += chunk.length;
      },
      exit: (code) => {
        exit = code;
      },
    });
    await until(() => exit !== undefined, 20_000);
    expect(got).toBe(2_000_000);
    expect(chunks).toBeGreaterThan(10);
    expect(stores.size).toBe(1);
  });

  it("delivers every byte a program prints right before it exits", async () => {
    const bytes = 4 * 1024 * 1024;
    for (let run = 0; run < 4; run++) {
      const pty = openIn(["bash", "-c", `head -c ${bytes} /dev/zero | tr '\\0' x`]);
      let got = 0;
      let exit: number | null | undefined;
      pty.start({
        data: (chunk) => {
          got += chunk.length;
        },
        exit: (code) => {
          exit = code;
        },
      });
      await until(() => exit !== undefined, 20_000);
      expect({ run, got, exit }).toEqual({ run, got: bytes, exit: 0 });
    }
  });

  it("reports a signal death as a negative status", async () => {
    const pty = openLocalPty({ argv: ["sh", "-c", "kill -TERM $$"], cwd: dir, env: ENV, cols: 80, rows: 24 });
    const state = collect(pty);
    await until(() => state.exit !== undefined);
    expect(state.exit).toBe(-15);
  });

  it("a signal reaches the foreground job of an interactive shell, which survives", async () => {
    const marker = `${RUN}7301`;
    const pty = openIn(["bash", "--norc", "--noprofile", "-i"]);
    const state = collect(pty);
    pty.write(new TextEncoder().encode(`sleep ${marker}\n`));
    await until(() => sleepers(marker).length === 1);
    expect(pty.signal("INT")).toBe("INT");
    await until(() => sleepers(marker).length === 0);
    pty.write(new TextEncoder().encode("echo still-$((40+2))\n"));
    await until(() => state.text.includes("still-42"));
    expect(state.exit).toBeUndefined();
    await pty.close();
  });

  it("close kills the whole session: background jobs in their own groups too", async () => {
    const marker = `${RUN}7302`;
    const pty = openIn(["bash", "--norc", "--noprofile", "-i"]);
    const state = collect(pty);
    pty.write(
      new TextEncoder().encode(`(trap '' HUP; sleep ${marker}1) & sleep ${marker}2 & sleep ${marker}3\n`),
    );
    await until(() => sleepers(marker).length === 3);
    const started = performance.now();
    await pty.close();
    expect(sleepers(marker)).toEqual([]);
    expect(state.exit).not.toBeUndefined();
    // HUP ends an interactive shell at once; nobody waited for the KILL grace.
    expect(performance.now() - started).toBeLessThan(4000);
  });

  it("close also ends what outlived the child, after the child exited", async () => {
    const marker = `${RUN}7305`;
    const pty = openIn(["bash", "-c", `(trap '' HUP; exec sleep ${marker}) & sleep 0.3; exit 0`]);
    const state = collect(pty);
    await until(() => state.exit !== undefined);
    expect(state.exit).toBe(0);
    await until(() => sleepers(marker).length === 1);
    await pty.close();
    expect(sleepers(marker)).toEqual([]);
  });

  it("close escalates to KILL for a program that ignores HUP and TERM", async () => {
    const marker = `${RUN}7303`;
    const pty = openIn(["sh", "-c", `trap '' HUP TERM; sleep ${marker}; :`], { killGraceMs: 200 });
    const state = collect(pty);
    await until(() => sleepers(marker).length === 1);
    await pty.close();
    expect(sleepers(marker)).toEqual([]);
    expect(state.exit).toBe(-9);
  });

  it("destroy kills synchronously", async () => {
    const marker = `${RUN}7304`;
    const pty = openLocalPty({ argv: ["sleep", marker], cwd: dir, env: ENV, cols: 80, rows: 24 });
    await until(() => sleepers(marker).length === 1);
    pty.destroy();
    await until(() => sleepers(marker).length === 0, 2000);
  });
});
