import { readSync } from "node:fs";

/** Read up to `size` bytes of an open file as UTF-8 (short reads retried; a shrinking file ends early). */
export function readOpenFile(fd: number, size: number): string {
  const buffer = Buffer.alloc(size);
  let offset = 0;
  while (offset < size) {
    const n = readSync(fd, buffer, offset, size - offset, offset);
    if (n === 0) break;
    offset += n;
  }
  return buffer.subarray(0, offset).toString("utf8");
}
