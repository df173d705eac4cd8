export type StreamName = "stdout" | "stderr";

interface DrainedOutput {
  output: string;
  totalBytes: number;
  droppedBytes: number;
}

/** Collects a child's output under ONE byte budget shared by stdout and stderr. */
export interface OutputSink {
  write(stream: StreamName, chunk: Uint8Array): void;
  /** Decode what was kept, once, so a character split across reads is never garbled. */
  drained(): DrainedOutput;
}

/**
 * Bytes beyond the budget are counted, not kept, so memory stays bounded
 * however much the child prints. Kept bytes are copied into growing buffers
 * rather than holding every chunk: a child dribbling one byte per read would
 * otherwise cost an object per byte.
 *
 * merged: one stream in arrival order. Not merged: stdout text then stderr
 * text, each in arrival order, both drawing on the same budget.
 */
export function createOutputSink(budgetBytes: number, merged: boolean): OutputSink {
  const budget = Number.isFinite(budgetBytes) ? Math.max(0, Math.floor(budgetBytes)) : 0;
  const first = createByteStore(budget);
  const second = merged ? first : createByteStore(budget);
  let kept = 0;
  let total = 0;
  return {
    write(stream, chunk) {
      total += chunk.length;
      const room = budget - kept;
      if (room <= 0) return;
      const piece = chunk.length <= room ? chunk : chunk.subarray(0, room);
      kept += piece.length;
      (stream === "stdout" ? first : second).append(piece);
    },
    drained() {
      // ignoreBOM keeps a leading U+FEFF the child really printed.
      const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
      const text = decoder.decode(first.bytes()) + (merged ? "" : decoder.decode(second.bytes()));
      return { output: text, totalBytes: total, droppedBytes: total - kept };
    },
  };
}

interface ByteStore {
  append(bytes: Uint8Array): void;
  bytes(): Uint8Array;
}

function createByteStore(limit: number): ByteStore {
  let buf = new Uint8Array(0);
  let used = 0;
  return {
    append(bytes) {
      const need = used + bytes.length;
      if (need > buf.length) {
        const grown = new Uint8Array(Math.min(limit, Math.max(need, buf.length * 2, 4096)));
        grown.set(buf.subarray(0, used));
        buf = grown;
      }
      buf.set(bytes, used);
      used = need;
    },
    bytes: () => buf.subarray(0, used),
  };
}
