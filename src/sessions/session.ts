import type { Clock } from "../core/index.js";
import { openSequenceStart, utf8Length } from "../core/index.js";
import type { Recording } from "./recording.js";
import { type BlockPool, RingBuffer } from "./ring-buffer.js";
import { EMPTY_LINE, type PendingLine } from "./terminal-line.js";
import type {
  AddSessionRequest,
  RecvResult,
  SessionInfo,
  SessionKind,
  SessionTransport,
  SessionViewer,
} from "./types.js";
import { Utf8StreamDecoder } from "./utf8-stream.js";

export interface SessionInit extends AddSessionRequest {
  id: string;
  bufferBytes: number;
  /** Where the ring's blocks come from and return to when the session is closed. */
  blocks: BlockPool | null;
  recording: Recording | null;
  clock: Clock;
}

type Wake = "change" | "timeout";

/**
 * One live terminal: its output buffer, its decoder, its counters and the
 * reads waiting on it. Owned by the registry; never seen by tools.
 */
export class Session {
  readonly id: string;
  readonly kind: SessionKind;
  readonly title: string;
  readonly owner: string;
  readonly createdAt: number;
  readonly transport: SessionTransport;
  readonly recording: Recording | null;
  cols: number;
  rows: number;
  lastUsed: number;
  bytesIn = 0;
  ended = false;
  exitCode: number | null = null;
  /** Reads currently waiting: the idle sweep leaves such a session alone. */
  waiting = 0;
  /** What was sent since the last Enter: the start of the line the terminal will run next. */
  line: PendingLine = EMPTY_LINE;
  #closing: Promise<void> | null = null;
  readonly #ring: RingBuffer;
  #decoder = new Utf8StreamDecoder();
  readonly #wakers = new Set<(why: Wake) => void>();
  readonly #viewers = new Set<SessionViewer>();
  readonly #clock: Clock;

  constructor(init: SessionInit) {
    this.id = init.id;
    this.kind = init.kind;
    this.title = init.title;
    this.owner = init.owner;
    this.cols = init.cols;
    this.rows = init.rows;
    this.transport = init.transport;
    this.recording = init.recording;
    this.#clock = init.clock;
    this.#ring = new RingBuffer(init.bufferBytes, init.blocks);
    this.createdAt = init.clock.monotonic();
    this.lastUsed = this.createdAt;
  }

  /** Connect the transport's events; output that arrived before this is delivered now. */
  attach(): void {
    this.transport.start({
      data: (chunk) => {
        this.#ring.write(chunk);
        this.recording?.output(chunk);
        this.#wake();
        for (const viewer of this.#viewers) viewer.output(chunk);
      },
      exit: (code) => this.markEnded(code),
    });
  }

  markEnded(code: number | null): void {
    if (this.ended) return;
    this.ended = true;
    this.exitCode = code;
    this.recording?.close();
    this.#wake();
    const viewers = [...this.#viewers];
    this.#viewers.clear();
    for (const viewer of viewers) viewer.ended(code);
  }

  /**
   * Show the output to an onlooker as it arrives, from now on. It consumes
   * nothing: the owner's reads see the same bytes. Returns the function that
   * stops it. A viewer must not throw and must not block; it bounds what it
   * holds itself.
   */
  watch(viewer: SessionViewer): () => void {
    this.#viewers.add(viewer);
    return () => {
      this.#viewers.delete(viewer);
    };
  }

  get closing(): boolean {
    return this.#closing !== null;
  }

  get buffered(): number {
    return this.#ring.length;
  }

  touch(): void {
    this.lastUsed = this.#clock.monotonic();
  }

  /**
   * Tear down once, whoever asks (kill, sweep): the transport's close is
   * awaited and the session counts as ended even if the transport never
   * reports an exit.
   */
  close(): Promise<void> {
    this.#closing ??= this.transport
      .close()
      .catch(() => undefined)
      .then(() => {
        this.markEnded(this.exitCode);
        // Nobody reads a closed session again: its memory goes to the next one.
        this.#ring.release();
      });
    return this.#closing;
  }

  /** Synchronous teardown at server exit. */
  destroy(): void {
    try {
      this.transport.destroy();
    } finally {
      this.markEnded(this.exitCode);
    }
  }

  /**
   * Up to `maxBytes` of output as text, also at most `maxBytes` UTF-8 bytes
   * once decoded (replacement marks are wider than the bytes they replace).
   * A character cut at the limit stays in the decoder for the next read;
   * with `holdOpen`, a control sequence the text ends inside of stays in
   * the ring (see holdBack).
   */
  take(maxBytes: number, holdOpen = false): { text: string; bytes: number } {
    let n = Math.min(maxBytes, this.#ring.length);
    for (;;) {
      const trial = this.#decoder.clone();
      // Decoded straight from the ring's blocks: a read copies no bytes before they become text.
      let text = "";
      for (const view of this.#ring.views(n)) text += trial.decode(view);
      // Every raw byte decodes to at most 3 bytes, so a third of the limit (less what the decoder holds) always fits.
      if (utf8Length(text) <= maxBytes || n <= 1) {
        const held = holdOpen ? this.#holdBack(text, trial, n) : null;
        if (held) return held;
        this.#decoder = trial;
        this.#ring.consume(n);
        return { text, bytes: n };
      }
      n = Math.max(1, Math.floor(maxBytes / 3) - 3);
    }
  }

  /**
   * Keep a trailing control sequence that has not ended yet (an OSC whose
   * terminator is still on its way, a CSI cut by the read) in the ring, so
   * the next read judges it whole instead of the runner removing its first
   * half and showing the rest as text (ADR 0016). Bounded: a sequence that
   * fills everything there is to read is delivered as it stands.
   */
  #holdBack(text: string, trial: Utf8StreamDecoder, n: number): { text: string; bytes: number } | null {
    const open = openSequenceStart(text);
    if (open === -1) return null;
    const tail = text.slice(open);
    // A replacement mark hides how many bytes it stood for: no hold, the runner removes the open sequence.
    if (tail.includes("\uFFFD")) return null;
    const keep = n - utf8Length(tail) - trial.pendingBytes;
    if (keep < 0 || (keep === 0 && n < this.#ring.length)) return null;
    const shorter = this.#decoder.clone();
    let head = "";
    for (const view of this.#ring.views(keep)) head += shorter.decode(view);
    if (head !== text.slice(0, open)) return null;
    this.#decoder = shorter;
    this.#ring.consume(keep);
    return { text: head, bytes: keep };
  }

  /** Decoded bytes that can never complete, once the session has ended. */
  flushText(): string {
    return this.#decoder.flush();
  }

  /** The text that tells a reader the session is over (docs/wire-contract.md §2.6, exact shapes). */
  endedText(): string {
    return this.exitCode === null
      ? `\n[session ${this.id} ended]`
      : `\n[session ${this.id} ended, exit=${this.exitCode}]`;
  }

  async read(timeoutMs: number, maxBytes: number, signal?: AbortSignal): Promise<RecvResult> {
    const deadline = this.#clock.monotonic() + timeoutMs;
    let timedOut = false;
    for (;;) {
      if (this.#ring.length > 0) {
        const { text, bytes } = this.take(maxBytes, !this.ended);
        // Only part of a character arrived so far: wait for the rest instead of returning nothing.
        if (text !== "") return { text, ended: false, exitCode: this.exitCode, bytes };
      }
      if (this.ended) {
        const tail = this.flushText();
        if (tail !== "") return { text: tail, ended: false, exitCode: this.exitCode, bytes: 0 };
        return { text: this.endedText(), ended: true, exitCode: this.exitCode, bytes: 0 };
      }
      const left = deadline - this.#clock.monotonic();
      if (timedOut || left <= 0 || signal?.aborted)
        return { text: "", ended: false, exitCode: null, bytes: 0 };
      timedOut = (await this.#waitForChange(left, signal)) === "timeout";
    }
  }

  write(data: Uint8Array): void {
    this.transport.write(data);
    this.bytesIn += data.length;
    this.recording?.input(data);
  }

  resize(cols: number, rows: number): void {
    this.transport.resize(cols, rows);
    this.cols = cols;
    this.rows = rows;
    this.recording?.resize(cols, rows);
    for (const viewer of this.#viewers) viewer.resize(cols, rows);
  }

  info(now: number): SessionInfo {
    return {
      id: this.id,
      kind: this.kind,
      title: this.title,
      size: `${this.cols}x${this.rows}`,
      age_s: round1((now - this.createdAt) / 1000),
      idle_s: round1((now - this.lastUsed) / 1000),
      buffered: this.#ring.length,
      produced: this.#ring.written,
      dropped: this.#ring.dropped,
      bytes_in: this.bytesIn,
      closed: this.ended,
      exit_code: this.exitCode,
      owner: this.owner,
      recording: this.recording?.path ?? "",
    };
  }

  #wake(): void {
    for (const wake of [...this.#wakers]) wake("change");
  }

  #waitForChange(timeoutMs: number, signal?: AbortSignal): Promise<Wake> {
    return new Promise((resolve) => {
      const done = (why: Wake) => {
        clearTimeout(timer);
        this.#wakers.delete(done);
        signal?.removeEventListener("abort", onAbort);
        resolve(why);
      };
      const onAbort = () => done("timeout");
      const timer = setTimeout(() => done("timeout"), timeoutMs);
      this.#wakers.add(done);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }
}

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}
