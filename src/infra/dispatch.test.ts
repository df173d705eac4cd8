import { describe, expect, it } from "vitest";
import type { Logger } from "../core/index.js";
import type { ConsentCapability, InfraRequest } from "../infra-protocol/index.js";
import type { ApprovalGate, VerifiedApproval } from "./approvals.js";
import { createDispatcher, type DispatchDeps, isAllowed } from "./dispatch.js";
import type { BrokenProfile, Operations, OpResult, Principal, Profile } from "./types.js";

function profile(id: string, fields: Partial<Profile> = {}): Profile {
  return {
    id,
    file: `/etc/relay-shell/infra/${id}.json`,
    enabled: true,
    host: "backup.example",
    port: 22,
    user: "receiver",
    sourceRoots: ["/srv/data"],
    remoteRoot: ".",
    knownHostsFile: "/etc/relay-shell/infra/known_hosts",
    credentialId: "backup-key",
    limits: { timeoutSeconds: 60, outputBytes: 65536, transferBytes: 1 << 20, fileCount: 100 },
    allowedPrincipals: { uids: [1000], gids: [] },
    approval: "none",
    receiver: "rrsync",
    requireDryRun: true,
    ...fields,
  };
}

const ALICE: Principal = { uid: 1000, gid: 1000, pid: 42, groups: [] };
const MALLORY: Principal = { uid: 1001, gid: 1001, pid: 43, groups: [27] };

interface Call {
  op: string;
  profile: string;
  args: string[];
}

/** Operations that record their calls and answer OK, or what `answer` says. */
function fakeOperations(answer?: (call: Call) => Promise<OpResult>) {
  const calls: Call[] = [];
  const run =
    (op: string) =>
    (p: Profile, ...args: string[]) => {
      const call = { op, profile: p.id, args };
      calls.push(call);
      return answer ? answer(call) : Promise.resolve({ code: "OK" as const, message: `${op} ${p.id}` });
    };
  const operations: Operations = {
    probe: run("probe"),
    dryRun: run("dryRun"),
    replicate: run("replicate"),
    verify: run("verify"),
  };
  return { operations, calls };
}

/** The approval check and its consumption are approvals.test.ts's; here only where they sit in the order. */
const CAPABILITY: ConsentCapability = {
  request: "req-1",
  nonce: "n".repeat(32),
  payload: "{}",
  signature: "-----BEGIN SSH SIGNATURE-----\n-----END SSH SIGNATURE-----",
  signer: "alice@example.org",
};

function fakeApprovals(consumed: string[], spent: OpResult | null = null): ApprovalGate {
  const approval: VerifiedApproval = {
    record: {
      request: "req-1",
      claimed_signer: "alice@example.org",
      principal: "alice",
      fingerprint: "SHA256:x",
    },
    nonce: CAPABILITY.nonce,
    expiresAt: 0,
  };
  return {
    check(profile, request) {
      if (profile.approval !== "consent" || request.op === "probe" || request.op === "verify") {
        return { ok: true, value: null };
      }
      if (request.approval === undefined) {
        return { ok: false, error: { code: "APPROVAL_REQUIRED", message: "needs one" } };
      }
      return { ok: true, value: approval };
    },
    consume(op) {
      consumed.push(op);
      return spent;
    },
  };
}

function setup(
  options: { answer?: (call: Call) => Promise<OpResult>; reserve?: () => boolean; spent?: OpResult } = {},
) {
  const profiles = new Map<string, Profile>([
    ["alpha", profile("alpha")],
    ["beta", profile("beta")],
    ["grouped", profile("grouped", { allowedPrincipals: { uids: [], gids: [27] } })],
    ["off", profile("off", { enabled: false })],
    ["signed", profile("signed", { approval: "consent" })],
    ["theirs", profile("theirs", { allowedPrincipals: { uids: [4242], gids: [] } })],
  ]);
  const broken = new Map<string, BrokenProfile>([
    ["bad", { id: "bad", file: "/etc/relay-shell/infra/bad.json", problems: ['unknown key "hostt"'] }],
  ]);
  const { operations, calls } = fakeOperations(options.answer);
  const errors: object[] = [];
  const consumed: string[] = [];
  const logger: Logger = { info: () => undefined, warn: () => undefined, error: (obj) => errors.push(obj) };
  const deps: DispatchDeps = {
    profiles: { profiles, broken },
    operations,
    approvals: fakeApprovals(consumed, options.spent ?? null),
    reserveReceipt: options.reserve ?? (() => true),
    facts: () => ({ protocol: 1, uid: 998 }),
    logger,
  };
  return { dispatcher: createDispatcher(deps), calls, errors, consumed };
}

const req = (fields: InfraRequest): InfraRequest => fields;

describe("isAllowed", () => {
  it("allows by uid, by primary gid and by a supplementary group, and nothing else", () => {
    const p = profile("p", { allowedPrincipals: { uids: [7], gids: [50] } });
    expect(isAllowed({ uid: 7, gid: 1, pid: 1, groups: [] }, p)).toBe(true);
    expect(isAllowed({ uid: 8, gid: 50, pid: 1, groups: [] }, p)).toBe(true);
    expect(isAllowed({ uid: 8, gid: 1, pid: 1, groups: [3, 50] }, p)).toBe(true);
    expect(isAllowed({ uid: 8, gid: 7, pid: 7, groups: [7] }, p)).toBe(false);
  });
});

describe("createDispatcher", () => {
  it("answers status with the principal's profiles, every broken one and the facts, no key or credential", async () => {
    const { dispatcher, calls } = setup();
    const mine = await dispatcher.dispatch(ALICE, req({ op: "status" }));
    expect(mine.code).toBe("OK");
    const data = mine.data as { profiles: { id: string }[]; broken: unknown[]; broker: unknown };
    expect(data.profiles.map((p) => p.id)).toEqual(["alpha", "beta", "off", "signed"]);
    expect(data.broken).toEqual([{ id: "bad", problems: ['unknown key "hostt"'] }]);
    expect(data.broker).toEqual({ protocol: 1, uid: 998 });
    expect(JSON.stringify(mine)).not.toMatch(/backup-key|known_hosts|credential/);
    const theirs = await dispatcher.dispatch(MALLORY, req({ op: "status" }));
    expect((theirs.data as { profiles: { id: string }[] }).profiles.map((p) => p.id)).toEqual(["grouped"]);
    expect(calls).toEqual([]);
  });

  it("tells a principal no profile lists that no profile is usable, and nothing else", async () => {
    const { dispatcher } = setup();
    const stranger: Principal = { uid: 5000, gid: 5000, pid: 44, groups: [] };
    const answer = await dispatcher.dispatch(stranger, req({ op: "status" }));
    expect(answer.code).toBe("OK");
    expect(answer.message).toBe("no profile is usable by uid 5000");
    expect(answer.data).toEqual({ principal: { uid: 5000, gid: 5000, groups: [] }, profiles: [] });
    expect(JSON.stringify(answer)).not.toMatch(/bad|hostt|\/etc\/|998/);
    // Asking for the broken profile by name tells it no more.
    const named = await dispatcher.dispatch(stranger, req({ op: "probe", profile: "bad" }));
    expect(named.code).toBe("PRINCIPAL_NOT_ALLOWED");
    expect(JSON.stringify(named)).not.toMatch(/hostt|\/etc\//);
  });

  it.each([
    [ALICE, req({ op: "probe" }), "PROFILE_REQUIRED"],
    [ALICE, req({ op: "probe", profile: "bad" }), "PROFILE_INVALID"],
    [ALICE, req({ op: "probe", profile: "nosuch" }), "PROFILE_NOT_FOUND"],
    [MALLORY, req({ op: "probe", profile: "alpha" }), "PRINCIPAL_NOT_ALLOWED"],
    [ALICE, req({ op: "probe", profile: "theirs" }), "PRINCIPAL_NOT_ALLOWED"],
    // Not allowed comes before disabled: a stranger learns nothing about the profile's state.
    [MALLORY, req({ op: "probe", profile: "off" }), "PRINCIPAL_NOT_ALLOWED"],
    [ALICE, req({ op: "probe", profile: "off" }), "PROFILE_DISABLED"],
    [ALICE, req({ op: "rsync-dry-run", profile: "signed", run_id: "r1" }), "APPROVAL_REQUIRED"],
    // The approval step comes after the principal: a stranger never learns the profile wants one.
    [MALLORY, req({ op: "rsync-dry-run", profile: "signed", run_id: "r1" }), "PRINCIPAL_NOT_ALLOWED"],
    [ALICE, req({ op: "rsync-dry-run", profile: "alpha" }), "RUN_ID_REQUIRED"],
    [ALICE, req({ op: "verify", profile: "alpha" }), "RUN_ID_REQUIRED"],
    [ALICE, req({ op: "replicate", profile: "alpha", idempotency_key: "key-00001" }), "RUN_ID_REQUIRED"],
    [ALICE, req({ op: "replicate", profile: "alpha", run_id: "r1" }), "IDEMPOTENCY_KEY_REQUIRED"],
  ])("refuses %j %j with %s and runs nothing", async (principal, request, code) => {
    const { dispatcher, calls } = setup();
    const result = await dispatcher.dispatch(principal, request);
    expect(result.code).toBe(code);
    expect(result.message.length).toBeGreaterThan(0);
    expect(calls).toEqual([]);
  });

  it("hands an admitted request to its operation with the run id and key", async () => {
    const { dispatcher, calls } = setup();
    await dispatcher.dispatch(ALICE, req({ op: "probe", profile: "alpha" }));
    await dispatcher.dispatch(MALLORY, req({ op: "rsync-dry-run", profile: "grouped", run_id: "r1" }));
    await dispatcher.dispatch(
      ALICE,
      req({ op: "replicate", profile: "alpha", run_id: "r1", idempotency_key: "key-00001" }),
    );
    await dispatcher.dispatch(ALICE, req({ op: "verify", profile: "beta", run_id: "r2" }));
    expect(calls).toEqual([
      { op: "probe", profile: "alpha", args: [] },
      { op: "dryRun", profile: "grouped", args: ["r1"] },
      { op: "replicate", profile: "alpha", args: ["r1", "key-00001"] },
      { op: "verify", profile: "beta", args: ["r2"] },
    ]);
  });

  it("consumes an approval after the receipt's room is reserved, right before the operation", async () => {
    const signed = req({ op: "replicate", profile: "signed", run_id: "r1", idempotency_key: "key-00001" });
    const ok = setup();
    const done = await ok.dispatcher.dispatch(ALICE, { ...signed, approval: CAPABILITY });
    expect(done).toMatchObject({ code: "OK", approval: { request: "req-1", principal: "alice" } });
    expect(ok.consumed).toEqual(["replicate"]);
    expect(ok.calls).toEqual([{ op: "replicate", profile: "signed", args: ["r1", "key-00001"] }]);
    // No room for the receipt: the operation does not run and the approval is not spent on it.
    const full = setup({ reserve: () => false });
    const refused = await full.dispatcher.dispatch(ALICE, { ...signed, approval: CAPABILITY });
    expect(refused).toMatchObject({ code: "RECEIPT_UNAVAILABLE", approval: { request: "req-1" } });
    expect(full.consumed).toEqual([]);
    expect(full.calls).toEqual([]);
    // A nonce the store refuses stops the operation.
    const reused = setup({ spent: { code: "APPROVAL_REUSED", message: "used" } });
    expect((await reused.dispatcher.dispatch(ALICE, { ...signed, approval: CAPABILITY })).code).toBe(
      "APPROVAL_REUSED",
    );
    expect(reused.calls).toEqual([]);
    // probe and verify only read: a consent profile serves them without an approval.
    const reads = setup();
    expect((await reads.dispatcher.dispatch(ALICE, req({ op: "probe", profile: "signed" }))).code).toBe("OK");
    expect(reads.consumed).toEqual([]);
  });

  it("does not run an operation whose receipt cannot be written", async () => {
    const { dispatcher, calls } = setup({ reserve: () => false });
    const result = await dispatcher.dispatch(ALICE, req({ op: "probe", profile: "alpha" }));
    expect(result.code).toBe("RECEIPT_UNAVAILABLE");
    expect(calls).toEqual([]);
    // Status performs nothing and is still answered.
    expect((await dispatcher.dispatch(ALICE, req({ op: "status" }))).code).toBe("OK");
  });

  it("turns an exception into INTERNAL_ERROR with a generic sentence, the detail only in the log", async () => {
    const secret =
      "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAAb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----";
    const { dispatcher, errors } = setup({ answer: () => Promise.reject(new Error(`boom ${secret}`)) });
    const result = await dispatcher.dispatch(ALICE, req({ op: "probe", profile: "alpha" }));
    expect(result.code).toBe("INTERNAL_ERROR");
    expect(result.message).not.toContain("boom");
    expect(errors).toHaveLength(1);
    expect(JSON.stringify(errors)).toContain("boom");
    expect(JSON.stringify(errors)).not.toContain("AAAA");
    // A synchronous throw is caught the same way.
    const sync = setup({
      answer: () => {
        throw new Error("sync");
      },
    });
    expect((await sync.dispatcher.dispatch(ALICE, req({ op: "probe", profile: "alpha" }))).code).toBe(
      "INTERNAL_ERROR",
    );
  });

  it("runs operations on one profile one at a time, in order, and other profiles meanwhile", async () => {
    const pending: { call: Call; release: () => void }[] = [];
    const { dispatcher } = setup({
      answer: (call) =>
        new Promise((resolve) => {
          pending.push({ call, release: () => resolve({ code: "OK", message: call.op }) });
        }),
    });
    const tick = () => new Promise((resolve) => setImmediate(resolve));
    const first = dispatcher.dispatch(ALICE, req({ op: "probe", profile: "alpha" }));
    const second = dispatcher.dispatch(ALICE, req({ op: "verify", profile: "alpha", run_id: "r1" }));
    const elsewhere = dispatcher.dispatch(ALICE, req({ op: "probe", profile: "beta" }));
    await tick();
    expect(pending.map((p) => `${p.call.op}:${p.call.profile}`)).toEqual(["probe:alpha", "probe:beta"]);
    pending[1]?.release();
    expect((await elsewhere).code).toBe("OK");
    expect(pending).toHaveLength(2);
    pending[0]?.release();
    await first;
    await tick();
    expect(pending.map((p) => `${p.call.op}:${p.call.profile}`)).toEqual([
      "probe:alpha",
      "probe:beta",
      "verify:alpha",
    ]);
    pending[2]?.release();
    expect((await second).message).toBe("verify");
  });

  it("goes on with a profile's queue after an operation failed", async () => {
    let fail = true;
    const { dispatcher } = setup({
      answer: () => {
        if (fail) {
          fail = false;
          return Promise.reject(new Error("first fails"));
        }
        return Promise.resolve({ code: "OK", message: "second" });
      },
    });
    const results = await Promise.all([
      dispatcher.dispatch(ALICE, req({ op: "probe", profile: "alpha" })),
      dispatcher.dispatch(ALICE, req({ op: "probe", profile: "alpha" })),
    ]);
    expect(results.map((r) => r.code)).toEqual(["INTERNAL_ERROR", "OK"]);
  });
});
