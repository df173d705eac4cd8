/** Widest and tallest terminal accepted; the kernel stores each side in 16 bits, and no screen is this big. */
const MAX_TERMINAL_SIDE = 1000;

/** Terminal sides clamped to 1..1000 (non-finite values become 1); the result is what is applied and reported. */
export function clampTerminalSize(cols: number, rows: number): { cols: number; rows: number } {
  return { cols: side(cols), rows: side(rows) };
}

function side(value: number): number {
  if (!Number.isFinite(value)) return 1;
  return Math.min(MAX_TERMINAL_SIDE, Math.max(1, Math.trunc(value)));
}
