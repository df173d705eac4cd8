import { readdirSync, readFileSync } from "node:fs";

/** Unique per test run, so processes of an earlier run can never match. */
export const RUN = `${process.pid}${Math.floor(Math.random() * 1e6)}`;

export /** Pids of living (not zombie) `sleep <n>` processes whose argument starts with `prefix`. */
function sleepers(prefix: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
      if (
        (argv[0] ?? "").split("/").at(-1) === "sleep" &&
        (argv[1] ?? "").startsWith(prefix) &&
        state !== "Z"
      ) {
        found.push(Number(entry));
      }
    } catch {
      // Gone between the listing and the read.
    }
  }
  return found;
}

/** Poll until `check` holds, or fail after `ms`. */
export async function until(check: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((done) => setTimeout(done, 25));
  }
}
