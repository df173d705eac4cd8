import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { REPO_ROOT } from "../helpers/server.js";

const WORKER = join(REPO_ROOT, "test", "consent", "store-worker.mjs");

/** A child process with its own connection to the consent database. */
export interface StoreWorker {
  readonly instanceId: string;
  /** Write one command; resolve with the answer line. */
  send(command: Record<string, unknown>): Promise<Record<string, unknown>>;
  close(): void;
}

/** Start one worker on `path` and wait until its store is open. */
export function startWorker(path: string, busyTimeoutMs: number): Promise<StoreWorker> {
  const child: ChildProcess = spawn(process.execPath, [WORKER, path, String(busyTimeoutMs)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const waiting: Array<(value: Record<string, unknown>) => void> = [];
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  return new Promise((resolve, reject) => {
    let ready = false;
    child.once("exit", (code) => {
      if (!ready) reject(new Error(`store worker exited with ${code} before it was ready`));
    });
    lines.on("line", (line) => {
      const message = JSON.parse(line) as Record<string, unknown>;
      if (!ready) {
        if (message.ready !== true) {
          reject(new Error(`store worker could not open ${path}: ${String(message.detail)}`));
          return;
        }
        ready = true;
        resolve({
          instanceId: String(message.instanceId),
          send: (command) =>
            new Promise((answer) => {
              waiting.push(answer);
              child.stdin?.write(`${JSON.stringify(command)}\n`);
            }),
          close: () => {
            child.stdin?.end();
            child.kill();
          },
        });
        return;
      }
      waiting.shift()?.(message);
    });
  });
}

/**
 * Send one command to every worker at once and collect the answers: every
 * worker is already blocked reading its pipe, so the lines release them
 * together.
 */
export function sendAll(
  workers: readonly StoreWorker[],
  command: Record<string, unknown>,
): Promise<Array<Record<string, unknown>>> {
  return Promise.all(workers.map((w) => w.send(command)));
}
