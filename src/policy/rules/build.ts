import { type Hit, hit, type RuleInput, table } from "./args.js";

/**
 * Build runners run the recipes of a file in the working directory (a Makefile, a justfile,
 * package.json scripts): code the call does not show, like `bash FILE` (script_file); `install`
 * and `uninstall` targets change packages. Their dry-run and help forms are lowered before this.
 */
function make({ args }: RuleInput): Hit | null {
  if (args.operands().some((o) => o === "install" || o === "uninstall")) return hit(2, "package_change");
  if (args.length === 1 && /^(?:-v|--version|-h|--help)$/.test(args.at(0) ?? "")) return null;
  return hit(2, "script_file");
}

/** `npm run X`, `npm test`, `pnpm run X`: a script from package.json. */
export function packageScript({ args }: RuleInput): Hit | null {
  const verb = args.subcommand()?.value.toLowerCase();
  return verb === "run" || verb === "run-script" || verb === "test" || verb === "start" || verb === "exec"
    ? hit(2, "script_file")
    : null;
}

export const BUILD_RULES = table([[["make", "gmake", "just", "task", "rake", "invoke"], make]]);
