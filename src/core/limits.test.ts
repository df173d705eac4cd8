import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  FOLLOW_UP_MS,
  LAUNCHER_CLOSE_DEADLINE_MS,
  MAX_OUTPUT_BYTES,
  MAX_REQUEST_FRAME_BYTES,
  REAP_WAIT_MS,
  WALK_LIMIT,
} from "./limits.js";

/** The `#define`s of native/launcher.h, by name, as their text. */
function nativeDefines(): Map<string, string> {
  const header = readFileSync(new URL("../../native/launcher.h", import.meta.url), "utf8");
  return new Map(
    [...header.matchAll(/^#define (\w+) (.+)$/gm)].map((m) => [m[1] ?? "", (m[2] ?? "").trim()]),
  );
}

describe("the limits of process supervision", () => {
  it("are the native launcher's own hard bounds too, number for number", () => {
    const defines = nativeDefines();
    expect(defines.get("WALK_LIMIT")).toBe(String(WALK_LIMIT));
    expect(defines.get("MAX_FRAME")).toBe(`${MAX_REQUEST_FRAME_BYTES}u`);
    expect(defines.get("MAX_BUDGET")).toBe(`${MAX_OUTPUT_BYTES}u`);
    expect(defines.get("CLOSE_DEADLINE_MS")).toBe(String(LAUNCHER_CLOSE_DEADLINE_MS));
    expect(defines.get("FOLLOW_UP_DELAYS_MS")).toBe(FOLLOW_UP_MS.join(", "));
  });

  it("leave the launcher no timing of a command to own: the server sends those", () => {
    const sources = ["launcher.h", "launcher.c", "frames.c", "subreaper.c"].map((name) =>
      readFileSync(new URL(`../../native/${name}`, import.meta.url), "utf8"),
    );
    for (const name of ["PIPE_GRACE_MS", "REAP_WAIT_MS", "KILL_GRACE_MS"])
      for (const source of sources) expect(source).not.toMatch(new RegExp(`#define ${name}\\b`));
  });

  it("let a closing launcher answer a killed command before it gives up on it", () => {
    expect(LAUNCHER_CLOSE_DEADLINE_MS).toBeGreaterThan(REAP_WAIT_MS);
  });
});
