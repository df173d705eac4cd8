import { RelayError } from "../core/index.js";

/**
 * Settle with `work`, or reject with a CancelledError (`message`) as soon as
 * `signal` aborts. Only this wait gives up: the work goes on (a shared dial
 * other callers wait for, a copy winding down) and is not cancelled here.
 */
export function untilAborted<T>(
  work: Promise<T>,
  signal: AbortSignal | undefined,
  message: string,
): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) return Promise.reject(new RelayError("CancelledError", message));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new RelayError("CancelledError", message));
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}
