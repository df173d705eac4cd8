import { describe, expect, it } from "vitest";
import { buildEnv, DEFAULT_PATH } from "./env.js";
import { createProcessRunner } from "./process-runner.js";

describe("buildEnv", () => {
  it("copies the base, drops undefined, defaults PATH and LANG, forces the prompt switches", () => {
    const env = buildEnv({ HOME: "/root", GONE: undefined, DEBIAN_FRONTEND: "dialog" }, "");
    expect({ ...env }).toEqual({
      HOME: "/root",
      PATH: DEFAULT_PATH,
      LANG: "C.UTF-8",
      DEBIAN_FRONTEND: "noninteractive",
      GIT_TERMINAL_PROMPT: "0",
    });
  });

  it("keeps an existing PATH and LANG, even empty ones", () => {
    const env = buildEnv({ PATH: "/opt/bin", LANG: "" }, "");
    expect(env.PATH).toBe("/opt/bin");
    expect(env.LANG).toBe("");
  });

  it("sets strings as is and other JSON values as JSON text", () => {
    const env = buildEnv(
      {},
      '{"S":"x y","N":8080,"F":1.5,"T":true,"B":false,"O":{"a":1},"A":[1,"b"],"E":"","BIG":1e400}',
    );
    expect(env).toMatchObject({
      S: "x y",
      N: "8080",
      F: "1.5",
      T: "true",
      B: "false",
      O: '{"a":1}',
      A: '[1,"b"]',
      E: "",
      BIG: "Infinity",
    });
  });

  it("removes variables set to null, forced ones included", () => {
    const env = buildEnv(
      { HOME: "/root" },
      '{"HOME":null,"DEBIAN_FRONTEND":null,"GIT_TERMINAL_PROMPT":null,"PATH":null,"NEVER_SET":null}',
    );
    for (const name of ["HOME", "DEBIAN_FRONTEND", "GIT_TERMINAL_PROMPT", "PATH", "NEVER_SET"]) {
      expect(name in env).toBe(false);
    }
    expect(env.LANG).toBe("C.UTF-8");
  });

  it.each(["{not json", "[1,2]", '"text"', "42", "null", "true"])("ignores the overlay %j", (json) => {
    expect({ ...buildEnv({ A: "1" }, json) }).toEqual({ ...buildEnv({ A: "1" }, "") });
  });

  it("skips names and values the OS cannot carry", () => {
    const env = buildEnv(
      { "": "x", "A=B": "y", OK: "z", NUL: "a\u0000b" },
      '{"":"1","X=Y":"2","N\\u0000":"3","V":"a\\u0000b","W":"w"}',
    );
    expect({ ...env }).toEqual({
      OK: "z",
      W: "w",
      PATH: DEFAULT_PATH,
      LANG: "C.UTF-8",
      DEBIAN_FRONTEND: "noninteractive",
      GIT_TERMINAL_PROMPT: "0",
    });
  });

  it("stores __proto__ as an ordinary variable", () => {
    const env = buildEnv({}, '{"__proto__":"p"}');
    expect(Object.keys(env)).toContain("__proto__");
    expect(Object.getOwnPropertyDescriptor(env, "__proto__")?.value).toBe("p");
  });

  it("is what the child sees", async () => {
    const env = buildEnv(
      { PATH: DEFAULT_PATH },
      '{"RELAY_FLAG":true,"RELAY_PORT":8080,"GIT_TERMINAL_PROMPT":null}',
    );
    const outcome = await createProcessRunner().run({
      command:
        'printf "%s|%s|%s|%s" "$RELAY_FLAG" "$RELAY_PORT" "$(printenv GIT_TERMINAL_PROMPT || echo unset)" "$DEBIAN_FRONTEND"',
      env,
      timeoutMs: 5000,
      maxBufferBytes: 4096,
      mergeStderr: true,
    });
    expect(outcome.output).toBe("true|8080|unset|noninteractive");
  });
});
