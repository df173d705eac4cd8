import { randomBytes } from "node:crypto";

export interface Ids {
  /** `bytes` random bytes as lowercase hex. */
  hex(bytes: number): string;
  /** URL-safe base64 token of `bytes` random bytes, no padding. */
  token(bytes: number): string;
}

export const cryptoIds: Ids = {
  hex: (bytes) => randomBytes(bytes).toString("hex"),
  token: (bytes) => randomBytes(bytes).toString("base64url"),
};
