export interface InFlightSample {
  /** Calls a second. */
  rate: number;
  /** Milliseconds of CPU the whole machine spent per call meanwhile (every process, every CPU). */
  cpuMs: number;
  /** The share of the machine's CPU time that was busy meanwhile, 0 to 1. */
  busy: number;
}

export function machineCpu(): { busyMs: number; totalMs: number };

export function inFlightSample(
  once: () => Promise<unknown>,
  total: number,
  inFlight: number,
): Promise<InFlightSample>;

export function sample(
  once: () => Promise<unknown>,
  options: { sequential: number; total: number; inFlight: number; warmup: number },
): Promise<InFlightSample & { times: number[] }>;
