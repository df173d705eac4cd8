import { SshsigError } from "./failure.js";

function malformed(message: string): SshsigError {
  return new SshsigError("malformed", message);
}

/**
 * A reader of the SSH wire encoding (RFC 4251 §5) over untrusted bytes: every
 * length is checked against what is left before a byte is taken, so a hostile
 * length can neither read past the end nor allocate.
 */
export class WireReader {
  private offset = 0;

  constructor(
    private readonly buf: Buffer,
    /** What is being read, for the error message ("signature blob", "public key"). */
    private readonly what: string,
  ) {}

  get remaining(): number {
    return this.buf.length - this.offset;
  }

  bytes(length: number): Buffer {
    if (length > this.remaining) throw malformed(`${this.what} is truncated`);
    const out = this.buf.subarray(this.offset, this.offset + length);
    this.offset += length;
    return out;
  }

  byte(): number {
    return this.bytes(1).readUInt8(0);
  }

  u32(): number {
    return this.bytes(4).readUInt32BE(0);
  }

  /** A length-prefixed byte string. */
  string(): Buffer {
    return this.bytes(this.u32());
  }

  /** A length-prefixed string that must be printable ASCII (names, namespaces, algorithms). */
  name(field: string): string {
    const raw = this.string();
    for (const b of raw) {
      if (b < 0x20 || b > 0x7e) throw malformed(`${this.what}: ${field} is not printable ASCII`);
    }
    return raw.toString("latin1");
  }

  /**
   * A non-negative mpint as its unsigned big-endian magnitude, leading zeros
   * removed (OpenSSH accepts redundant leading zeros too; a set top bit
   * without one is a negative number and refused).
   */
  mpint(field: string): Buffer {
    const raw = this.string();
    if (raw.length > 0 && ((raw[0] ?? 0) & 0x80) !== 0) {
      throw malformed(`${this.what}: ${field} is negative`);
    }
    let start = 0;
    while (start < raw.length && raw[start] === 0) start++;
    return raw.subarray(start);
  }

  /** Refuses bytes left over: a blob means exactly what it encodes, nothing appended. */
  end(): void {
    if (this.remaining !== 0) throw malformed(`${this.what} has ${this.remaining} trailing bytes`);
  }
}

/** Writes the parts of a blob this module has to rebuild (the signed preimages). */
export function wireString(data: Buffer | string): Buffer {
  const body = typeof data === "string" ? Buffer.from(data, "utf8") : data;
  const length = Buffer.alloc(4);
  length.writeUInt32BE(body.length, 0);
  return Buffer.concat([length, body]);
}

export function wireU32(value: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(value >>> 0, 0);
  return out;
}
