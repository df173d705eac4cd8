import { describe, expect, it } from "vitest";
import { RelayError } from "../core/index.js";
import { createTransferMeter, MAX_TRANSFER_DEPTH } from "./transfer-limits.js";

function thrown(run: () => void): RelayError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(RelayError);
    return err as RelayError;
  }
  throw new Error("expected a TransferLimitError");
}

describe("createTransferMeter", () => {
  it("counts entries up to the bound and refuses the next one", () => {
    const meter = createTransferMeter({ maxBytes: 1024, maxEntries: 3 });
    for (let i = 0; i < 3; i++) meter.entry("h:/d");
    const err = thrown(() => meter.entry("h:/d"));
    expect(err.type).toBe("TransferLimitError");
    expect(err.message).toBe(
      "more than 3 directory entries (RELAY_SHELL_TRANSFER_MAX_ENTRIES) at h:/d; the transfer was stopped",
    );
  });

  it("reserves file sizes against one budget for the whole transfer", () => {
    const meter = createTransferMeter({ maxBytes: 100, maxEntries: 10 });
    meter.reserve(60, "h:/a");
    meter.reserve(40, "h:/b");
    const err = thrown(() => meter.reserve(1, "h:/c"));
    expect(err.message).toBe(
      "h:/c is 1 bytes after 100 bytes of earlier files, over the 100 bytes one transfer may move " +
        "(RELAY_SHELL_TRANSFER_MAX_BYTES); it was not copied and the transfer was stopped",
    );
  });

  it.each([2 ** 50, 2 ** 64, -1, Number.NaN, 1.5])("refuses a size a server may claim: %s", (size) => {
    const meter = createTransferMeter({ maxBytes: 2 ** 40, maxEntries: 10 });
    expect(thrown(() => meter.reserve(size, "h:/x")).type).toBe("TransferLimitError");
    expect(meter.committedBytes).toBe(0);
  });

  it("refuses a directory deeper than the depth bound", () => {
    const meter = createTransferMeter({ maxBytes: 1024, maxEntries: 10 });
    meter.depth(MAX_TRANSFER_DEPTH, "h:/deep");
    expect(thrown(() => meter.depth(MAX_TRANSFER_DEPTH + 1, "h:/deep")).message).toBe(
      `h:/deep is more than ${MAX_TRANSFER_DEPTH} directories deep; the transfer was stopped`,
    );
  });

  it("shows a server-chosen name in a message as inert text", () => {
    const meter = createTransferMeter({ maxBytes: 10, maxEntries: 10 });
    expect(thrown(() => meter.reserve(11, "h:/\u001b[2Jx")).message).toMatch(/^h:\/\\x1b\[2Jx is 11 bytes/);
  });
});
