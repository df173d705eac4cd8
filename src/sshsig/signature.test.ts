import { describe, expect, it } from "vitest";
import { SshsigError } from "./failure.js";
import { requireUserPresence } from "./signature.js";

describe("requireUserPresence", () => {
  it("refuses a verified FIDO signature whose flags lack user presence", () => {
    for (const flags of [0x00, 0x04, 0x80, 0xfe]) {
      expect(() => requireUserPresence({ sk: { flags, counter: 1 } })).toThrow(
        expect.objectContaining({ code: "no-user-presence" }),
      );
    }
    expect(() => requireUserPresence({ sk: { flags: 0, counter: 1 } })).toThrow(SshsigError);
  });

  it("passes a FIDO signature with the flag, whatever else is set, and a plain key's signature", () => {
    for (const flags of [0x01, 0x05, 0x81, 0xff]) {
      expect(() => requireUserPresence({ sk: { flags, counter: 0 } })).not.toThrow();
    }
    expect(() => requireUserPresence({})).not.toThrow();
  });
});
