import { type ParseArgsConfig, parseArgs } from "node:util";

type Options = NonNullable<ParseArgsConfig["options"]>;

/** One flag as given: a switch has no value, a string option has one (maybe ""). */
export interface FlagToken<O extends Options> {
  name: keyof O & string;
  value: string | undefined;
  /** The argument exactly as it was typed, for messages. */
  typed: string;
}

/**
 * The flags of a command line, in order, or the message that refuses it.
 * Parsed leniently and checked token by token, so a refusal names the
 * argument exactly as it was typed (`-hx`, `--json=yes`, a stray word)
 * rather than a fragment of it. A switch given a value (`--json=yes`) is
 * refused here, not read as on; what a string option needs is the caller's.
 */
export function flagTokens<O extends Options>(argv: readonly string[], options: O): FlagToken<O>[] | string {
  const { tokens } = parseArgs({
    args: [...argv],
    options,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const out: FlagToken<O>[] = [];
  for (const token of tokens) {
    const typed = argv[token.index] ?? "";
    if (token.kind !== "option" || !Object.hasOwn(options, token.name)) return `unknown argument: ${typed}`;
    if (options[token.name]?.type === "boolean" && token.value !== undefined)
      return `unknown argument: ${typed}`;
    out.push({ name: token.name as keyof O & string, value: token.value, typed });
  }
  return out;
}
