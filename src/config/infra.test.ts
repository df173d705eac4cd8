import { describe, expect, it } from "vitest";
import { readInfraEnvironment } from "./infra.js";
import { ConfigError } from "./load.js";

describe("readInfraEnvironment", () => {
  it("is all null outside systemd", () => {
    expect(readInfraEnvironment({ HOME: "/root" })).toEqual({
      credentialsDirectory: null,
      runtimeDirectory: null,
      stateDirectory: null,
    });
  });

  it("takes the directories systemd sets, the first of a list", () => {
    expect(
      readInfraEnvironment({
        CREDENTIALS_DIRECTORY: "/run/credentials/relay-shell-infra-broker.service",
        RUNTIME_DIRECTORY: "/run/relay-shell-infra:/run/other",
        STATE_DIRECTORY: "/var/lib/relay-shell-infra/",
      }),
    ).toEqual({
      credentialsDirectory: "/run/credentials/relay-shell-infra-broker.service",
      runtimeDirectory: "/run/relay-shell-infra",
      stateDirectory: "/var/lib/relay-shell-infra/",
    });
  });

  it("treats an empty value as unset", () => {
    expect(readInfraEnvironment({ CREDENTIALS_DIRECTORY: "" }).credentialsDirectory).toBeNull();
  });

  it("refuses relative paths, naming every variable", () => {
    let caught: unknown;
    try {
      readInfraEnvironment({ CREDENTIALS_DIRECTORY: "creds", STATE_DIRECTORY: "state" });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const problems = (caught as ConfigError).problems;
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^CREDENTIALS_DIRECTORY: expected an absolute directory path, got "creds"/);
    expect(problems[1]).toMatch(/^STATE_DIRECTORY: /);
  });
});
