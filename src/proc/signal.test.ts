import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { RUN, sleepers, until } from "../../test/helpers/processes.js";
import { signalGroup, signalSession, toExitCode } from "./signal.js";
import { readProc } from "./stat.js";

/** A shell leading a session (and group) of its own, with two sleeps below it. */
async function shellWithSleeps(marker: string) {
  const child = spawn("/bin/sh", ["-c", `sleep ${marker}1 & sleep ${marker}2 & wait`], {
    detached: true,
    stdio: "ignore",
  });
  const exited = new Promise<NodeJS.Signals | null>((done) =>
    child.once("exit", (_c, signal) => done(signal)),
  );
  await until(() => sleepers(marker).length === 2);
  return { pid: child.pid as number, exited };
}

describe("signalGroup", () => {
  it("reaches every member of the group and reports a group that is gone", async () => {
    const marker = `${RUN}5101`;
    const { pid, exited } = await shellWithSleeps(marker);
    expect(signalGroup(pid, "SIGKILL")).toBe(true);
    expect(await exited).toBe("SIGKILL");
    await until(() => sleepers(marker).length === 0);
    // A group nobody leads (pids stop below 2^22 on Linux).
    expect(signalGroup(2 ** 22 + 1, "SIGKILL")).toBe(false);
  });

  it("refuses group ids that would reach our own group or every process", () => {
    // Signal 0 only asks whether the signal could be sent, so this stays harmless if the guard
    // broke: kill(0, 0) and kill(-1, 0) would answer true (our own group, every process we may signal).
    expect(signalGroup(0, 0)).toBe(false);
    expect(signalGroup(1, 0)).toBe(false);
    expect(signalGroup(-5, 0)).toBe(false);
    expect(signalGroup(Number.NaN, 0)).toBe(false);
    expect(signalGroup(process.pid, 0)).toBe(process.pid === readProc(process.pid)?.pgid);
  });
});

describe("signalSession", () => {
  it("signals the groups of a session's members, by number", async () => {
    const marker = `${RUN}5102`;
    const { pid, exited } = await shellWithSleeps(marker);
    expect(signalSession(pid, [9], false)).toBe(1);
    expect(await exited).toBe("SIGKILL");
    await until(() => sleepers(marker).length === 0);
    expect(signalSession(pid, [9], false)).toBe(0);
  });
});

describe("toExitCode", () => {
  it("keeps an exit status and turns a signal death into the negative signal number", () => {
    expect(toExitCode(3, null)).toBe(3);
    expect(toExitCode(null, "SIGKILL")).toBe(-9);
    expect(toExitCode(null, "SIGTERM")).toBe(-15);
    expect(toExitCode(null, null)).toBeNull();
  });
});
