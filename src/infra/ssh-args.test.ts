import { describe, expect, it } from "vitest";
import { toDetail } from "./remote.js";
import {
  childEnvironment,
  classifyFailure,
  type FailureContext,
  knownHostsName,
  remoteSpec,
  rsyncShell,
  sshOptions,
} from "./ssh-args.js";
import type { Profile } from "./types.js";

function profile(over: Partial<Profile> = {}): Profile {
  return {
    id: "backup",
    file: "/etc/relay-shell/infra/backup.json",
    enabled: true,
    host: "receiver.example",
    port: 2222,
    user: "deploy",
    sourceRoots: ["/srv/site"],
    remoteRoot: "backups",
    knownHostsFile: "/etc/relay-shell/infra/known_hosts",
    credentialId: "backup-key",
    limits: { timeoutSeconds: 120, outputBytes: 65536, transferBytes: 1 << 30, fileCount: 1000 },
    allowedPrincipals: { uids: [1000], gids: [] },
    approval: "none",
    receiver: "rrsync",
    requireDryRun: true,
    ...over,
  };
}

/** The value of every `-o Name=value` in an ssh argv. */
function options(argv: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  argv.forEach((arg, i) => {
    if (arg !== "-o") return;
    const [name = "", value = ""] = (argv[i + 1] ?? "").split("=");
    out[name] = value;
  });
  return out;
}

describe("sshOptions", () => {
  it("fixes every option that could let a connection trust, prompt, forward or use an agent", () => {
    const argv = sshOptions(profile(), "/var/lib/relay-infra/.ssh-home-x/id");
    expect(argv.slice(0, 2)).toEqual(["-F", "/dev/null"]);
    expect(options(argv)).toEqual({
      BatchMode: "yes",
      PasswordAuthentication: "no",
      KbdInteractiveAuthentication: "no",
      PubkeyAuthentication: "yes",
      IdentitiesOnly: "yes",
      IdentityAgent: "none",
      StrictHostKeyChecking: "yes",
      UserKnownHostsFile: "/etc/relay-shell/infra/known_hosts",
      GlobalKnownHostsFile: "/dev/null",
      UpdateHostKeys: "no",
      ConnectTimeout: "30",
      ClearAllForwardings: "yes",
    });
    expect(argv.slice(-6)).toEqual([
      "-i",
      "/var/lib/relay-infra/.ssh-home-x/id",
      "-p",
      "2222",
      "-l",
      "deploy",
    ]);
  });

  it("connects within the profile's time limit when it is shorter than 30 s", () => {
    const argv = sshOptions(profile({ limits: { ...profile().limits, timeoutSeconds: 5 } }), "/k");
    expect(options(argv).ConnectTimeout).toBe("5");
  });
});

describe("rsyncShell", () => {
  it("is the ssh argv joined by single spaces", () => {
    const shell = rsyncShell(profile(), "/state/.ssh-home-x/id");
    expect(shell.split(" ")).toEqual(["ssh", ...sshOptions(profile(), "/state/.ssh-home-x/id")]);
  });

  it.each([
    ["a space", "/state dir/id"],
    ["a quote", "/state'/id"],
    ["a double quote", '/state"/id'],
    ["a backslash", "/state\\/id"],
    ["a tab", "/state\t/id"],
  ])("refuses a word with %s rsync would split or unquote", (_, keyFile) => {
    expect(() => rsyncShell(profile(), keyFile)).toThrow(/would be split by rsync's -e/);
  });

  it("refuses a pin path with whitespace even if the profile check were skipped", () => {
    expect(() => rsyncShell(profile({ knownHostsFile: "/etc/known hosts" }), "/k")).toThrow(/would be split/);
  });
});

describe("remoteSpec", () => {
  it("joins the remote root and a checked relative path, as a directory", () => {
    expect(remoteSpec(profile(), "runs/r1")).toBe("receiver.example:backups/runs/r1/");
    expect(remoteSpec(profile(), ".")).toBe("receiver.example:backups/");
    expect(remoteSpec(profile({ remoteRoot: "." }), "runs/r1")).toBe("receiver.example:runs/r1/");
    expect(remoteSpec(profile({ remoteRoot: "." }), "")).toBe("receiver.example:./");
  });

  it("brackets an IPv6 host", () => {
    expect(remoteSpec(profile({ host: "::1" }), "runs/r1")).toBe("[::1]:backups/runs/r1/");
  });

  it.each(["../x", "runs/../../etc", "/etc", "-rf", "runs/*", "runs/a b", "runs//x", "runs/.hidden"])(
    "refuses %j",
    (path) => {
      expect(remoteSpec(profile(), path)).toBeNull();
    },
  );
});

describe("knownHostsName", () => {
  it("is the bare host on port 22 and [host]:port elsewhere", () => {
    expect(knownHostsName(profile({ port: 22 }))).toBe("receiver.example");
    expect(knownHostsName(profile())).toBe("[receiver.example]:2222");
  });
});

describe("childEnvironment", () => {
  it("holds PATH, HOME and LANG only, whatever the daemon's own environment holds", () => {
    const saved = process.env.SSH_AUTH_SOCK;
    process.env.SSH_AUTH_SOCK = "/tmp/agent.sock";
    try {
      expect(Object.keys(childEnvironment("/state/h")).sort()).toEqual(["HOME", "LANG", "PATH"]);
      expect(childEnvironment("/state/h").HOME).toBe("/state/h");
    } finally {
      if (saved === undefined) delete process.env.SSH_AUTH_SOCK;
      else process.env.SSH_AUTH_SOCK = saved;
    }
  });
});

describe("classifyFailure", () => {
  const base: FailureContext = {
    profile: profile(),
    exitCode: 255,
    timedOut: false,
    write: true,
    missingCode: "RUN_NOT_FOUND",
    what: "the copy to runs/r1",
  };
  const rsyncTail =
    "rsync: connection unexpectedly closed (0 bytes received so far) [sender]\nrsync error: unexplained error (code 255) at io.c(232) [sender=3.5.0]\n";

  it.each([
    [
      "PIN_MISSING",
      "No ED25519 host key is known for [127.0.0.1]:2222 and you have requested strict checking.\r\nHost key verification failed.\r\n",
    ],
    [
      "PIN_CHANGED",
      "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\r\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\r\nHost key for [127.0.0.1]:2222 has changed and you have requested strict checking.\r\nHost key verification failed.\r\n",
    ],
    ["NETWORK_FAILURE", "ssh: connect to host 127.0.0.1 port 1: Connection refused\r\n"],
    ["NETWORK_FAILURE", "ssh: connect to host 10.255.255.1 port 22: Connection timed out\r\n"],
    ["NETWORK_FAILURE", "ssh: Could not resolve hostname nowhere.invalid: Name or service not known\r\n"],
    ["NETWORK_FAILURE", "kex_exchange_identification: Connection closed by remote host\r\n"],
    [
      "NETWORK_FAILURE",
      "kex_exchange_identification: read: Connection reset by peer\r\nConnection reset by 127.0.0.1 port 2222\r\n",
    ],
    ["CREDENTIAL_REJECTED", "deploy@127.0.0.1: Permission denied (publickey).\r\n"],
    ["CREDENTIAL_UNAVAILABLE", 'Load key "/state/.ssh-home-x/id": invalid format\r\n'],
    ["RECEIVER_REFUSED", "/usr/bin/rrsync error: option --delete has been disabled on this server.\n"],
  ] as const)("maps to %s before anything was sent, even for a write", (code, stderr) => {
    const result = classifyFailure(stderr + rsyncTail, base);
    expect(result.code).toBe(code);
    expect(result.interrupted).toBe(false);
  });

  it("maps a missing path on the receiver to the caller's code", () => {
    const stderr =
      "/usr/bin/rrsync error: post-realpath open failed (race detected): backups/runs/r9/ No such file or directory\n";
    expect(classifyFailure(stderr + rsyncTail, { ...base, write: false }).code).toBe("RUN_NOT_FOUND");
  });

  it.each([
    "Connection closed by 127.0.0.1 port 2222\r\n",
    "Connection reset by 127.0.0.1 port 2222\r\n",
    "client_loop: send disconnect: Broken pipe\r\n",
  ])(
    "says a write whose connection was lost (%j) is of unknown state, a read a network failure",
    (stderr) => {
      expect(classifyFailure(stderr + rsyncTail, base)).toMatchObject({
        code: "WRITE_INTERRUPTED",
        interrupted: true,
      });
      expect(classifyFailure(stderr + rsyncTail, { ...base, write: false })).toMatchObject({
        code: "NETWORK_FAILURE",
        interrupted: false,
      });
    },
  );

  it("says a write that failed after connecting is of unknown state", () => {
    const result = classifyFailure(`rsync: [sender] write error: Broken pipe (32)\n${rsyncTail}`, base);
    expect(result).toMatchObject({ code: "WRITE_INTERRUPTED", interrupted: true });
    expect(result.message).toMatch(/failed \(exit 255\) after it may have written/);
  });

  it("says a write stopped by the time limit or a signal is of unknown state", () => {
    expect(classifyFailure("", { ...base, exitCode: null, timedOut: true })).toMatchObject({
      code: "WRITE_INTERRUPTED",
      interrupted: true,
      message: expect.stringMatching(/stopped after the profile's 120 s limit/),
    });
    expect(classifyFailure("", { ...base, exitCode: -9 })).toMatchObject({
      code: "WRITE_INTERRUPTED",
      message: expect.stringMatching(/killed by signal 9/),
    });
  });

  it("reports a read that timed out as a network failure and any other as a failed transfer", () => {
    const read = { ...base, write: false };
    expect(classifyFailure("", { ...read, exitCode: null, timedOut: true }).code).toBe("NETWORK_FAILURE");
    expect(classifyFailure(rsyncTail, { ...read, exitCode: 12 })).toMatchObject({
      code: "TRANSFER_FAILED",
      interrupted: false,
    });
  });
});

describe("toDetail", () => {
  it("cuts out key material and long base64 lines", () => {
    const key =
      "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----";
    const detail = toDetail(
      `before\n${key}\nQUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9w\nafter`,
    );
    expect(detail).not.toContain("b3BlbnNzaC1rZXkt");
    expect(detail).not.toContain("QUJDREVGR0hJSktM");
    expect(detail).toContain("before");
    expect(detail).toContain("after");
  });

  it("keeps the end of long output within its bound", () => {
    const detail = toDetail(`${"x ".repeat(10_000)}\nthe last line`);
    expect(Buffer.byteLength(detail)).toBeLessThanOrEqual(2048 + 64);
    expect(detail.endsWith("the last line")).toBe(true);
  });
});

describe("classifyFailure reads names as names", () => {
  const profile = {
    host: "127.0.0.1",
    port: 2222,
    user: "deploy",
    knownHostsFile: "/etc/pin",
    credentialId: "backup-key",
    limits: { timeoutSeconds: 30 },
  } as unknown as Profile;
  const cut =
    "created 2 directories for backups/runs/r1\n.d..t...... ./\ncd+++++++++ site/\n<f+++++++++ site/Permission denied (publickey)\n<f+++++++++ site/deploy@h: Permission denied (publickey).\n<f+++++++++ site/blob\nclient_loop: send disconnect: Broken pipe\nrsync: [sender] write error: Broken pipe (32)\n";

  it("a write rsync itemized before it was cut is WRITE_INTERRUPTED, whatever its names spell", () => {
    const result = classifyFailure(cut, {
      profile,
      exitCode: 255,
      timedOut: false,
      write: true,
      missingCode: "RECEIVER_REFUSED",
      what: "the copy",
    });
    expect(result).toMatchObject({ code: "WRITE_INTERRUPTED", interrupted: true });
  });

  it("a listing entry named like ssh's refusal is not ssh's refusal", () => {
    const listing =
      "-rw-r--r--          5 2026/12/04 08:00:00 deploy@h: Permission denied (publickey).\nrsync: connection unexpectedly closed (0 bytes received so far) [receiver]\n";
    const result = classifyFailure(listing, {
      profile,
      exitCode: 12,
      timedOut: false,
      write: false,
      missingCode: "RUN_NOT_FOUND",
      what: "listing runs/r1",
    });
    expect(result.code).toBe("TRANSFER_FAILED");
  });
});
