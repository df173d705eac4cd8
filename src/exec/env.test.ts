import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RelayError } from "../core/index.js";
import { buildEnv, DEFAULT_PATH, envOverlay } from "./env.js";
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

  it("sets strings as is and numbers and booleans as JSON text", () => {
    const env = buildEnv({}, '{"S":"x y","N":8080,"F":1.5,"T":true,"B":false,"E":"","BIG":1e400}');
    expect(env).toMatchObject({
      S: "x y",
      N: "8080",
      F: "1.5",
      T: "true",
      B: "false",
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

  it("applies no overlay for an empty or blank env_json", () => {
    expect({ ...buildEnv({ A: "1" }, "  \n") }).toEqual({ ...buildEnv({ A: "1" }, "") });
  });

  const refusal = (json: string): string => {
    try {
      buildEnv({}, json);
    } catch (err) {
      expect(err).toBeInstanceOf(RelayError);
      return `${(err as RelayError).type}: ${(err as RelayError).message}`;
    }
    throw new Error(`accepted ${json}`);
  };
  const SHAPE = 'a flat JSON object such as {"NAME":"value","OTHER":null}';

  it.each([
    ["[1,2]", "an array"],
    ['"text"', "a string"],
    ["42", "a number"],
    ["null", "null"],
    ["true", "a boolean"],
  ])("refuses %j, which is not an object", (json, kind) => {
    expect(refusal(json)).toBe(`ValueError: env_json must be ${SHAPE}, got ${kind}`);
  });

  it("refuses malformed JSON instead of running without the overlay", () => {
    expect(refusal('{"DRY_RUN":"1",}')).toMatch(
      /^ValueError: env_json is not valid JSON \(.+\); expected a flat/,
    );
    expect(refusal("{not json")).toMatch(/^ValueError: env_json is not valid JSON/);
  });

  it("refuses an array or object as a value and names the variable", () => {
    expect(refusal('{"S":"x","O" : {"a":1}}')).toBe(
      'ValueError: env_json: the value of "O" is an object; a variable\'s value must be a string, number, boolean or null',
    );
    expect(refusal('{"A\\"B":[1,"b"]}')).toBe(
      'ValueError: env_json: the value of "A\\"B" is an array; a variable\'s value must be a string, number, boolean or null',
    );
    // Brackets inside strings are text, not nesting.
    expect(buildEnv({}, '{"P":"[{x}]","Q":"\\"["}')).toMatchObject({ P: "[{x}]", Q: '"[' });
  });

  it("refuses 10,000-deep nesting with a ValueError, quickly and without recursion", () => {
    const start = performance.now();
    expect(refusal(`{"A":${"[".repeat(10_000)}${"]".repeat(10_000)}}`)).toBe(
      'ValueError: env_json: the value of "A" is an array; a variable\'s value must be a string, number, boolean or null',
    );
    expect(refusal(`{"A":${'{"a":'.repeat(10_000)}1${"}".repeat(10_000)}}`)).toMatch(
      /the value of "A" is an object/,
    );
    expect(refusal("[".repeat(1_000_000))).toBe(
      `ValueError: env_json must be ${SHAPE}, got nested arrays or objects`,
    );
    expect(performance.now() - start).toBeLessThan(2000);
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

describe("envOverlay", () => {
  it("is exactly what buildEnv applies on top of the base (property)", () => {
    const name = fc.oneof(
      fc.constantFrom("PATH", "HOME", "A", "__proto__", "B=C", "N\u0000UL", ""),
      fc.string(),
    );
    const value = fc.oneof(
      fc.string(),
      fc.constant("x\u0000y"),
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
    );
    fc.assert(
      fc.property(fc.dictionary(name, value, { maxKeys: 6 }), (overlay) => {
        const base = { HOME: "/root", A: "base" };
        const json = JSON.stringify(overlay);
        // A Map, so that `__proto__` is a name like any other.
        const applied = new Map(Object.entries(buildEnv(base, "")));
        for (const [key, v] of Object.entries(envOverlay(json))) {
          if (v === null) applied.delete(key);
          else applied.set(key, v);
        }
        expect([...applied].sort()).toEqual(Object.entries(buildEnv(base, json)).sort());
      }),
      { numRuns: 200 },
    );
  });

  it("names a removed variable with null and refuses what buildEnv refuses", () => {
    expect({ ...envOverlay('{"A":1,"B":null,"C":true}') }).toEqual({ A: "1", B: null, C: "true" });
    expect({ ...envOverlay("") }).toEqual({});
    expect(() => envOverlay('{"A":{"x":1}}')).toThrow(RelayError);
    expect(() => envOverlay("[1]")).toThrow(RelayError);
  });
});
