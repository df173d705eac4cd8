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

/** Asking a runtime or a build tool for its version or help runs no project code. */
function infoOnly(args: RuleInput["args"]): boolean {
  return (
    args.length === 0 ||
    (args.length === 1 &&
      /^(?:-v|-V|--version|-version|-h|--help|-help|-\?|--info|--list-sdks|--list-runtimes|version|help|env|doctor)$/.test(
        args.at(0) ?? "",
      ))
  );
}

/**
 * Runtimes and build tools that run the project's own code: `java -jar app.jar` and a main class,
 * `dotnet run` or an assembly, Gradle and Maven builds (their build files are programs), `go run`,
 * `go test` and `go generate`, Cargo's builds (build scripts and procedural macros run), Bun's
 * scripts, the Rails commands that boot the application. What runs is in files the call does not
 * show, like `bash FILE`.
 */
/** Gradle and Maven tasks that list or describe the build. */
const REPORT_TASK =
  /^(?:tasks|dependencies|dependencyInsight|projects|properties|help|buildEnvironment|outgoingVariants|dependency:(?:tree|list|analyze|resolve)|help:\w+|versions:display-[\w-]+)$/;
/** Options of Gradle and Maven whose value is the next word. */
const BUILD_VALUED = new Set([
  "--configuration",
  "--dependency",
  "--group",
  "-p",
  "--project-dir",
  "-b",
  "--build-file",
  "-f",
  "--file",
  "-pl",
  "--projects",
]);

/** Every task or goal named is a reporting one. */
function reportsOnly(values: readonly string[]): boolean {
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (BUILD_VALUED.has(v)) i++;
    else if (!v.startsWith("-") && !REPORT_TASK.test(v)) return false;
  }
  return true;
}

export function projectCode({ name, args }: RuleInput): Hit | null {
  // A request for help or a version at the end (`java -jar cli.jar help`) is most likely just that;
  // it stays Tier 1, unproven.
  if (infoOnly(args) || /^(?:help|--help|-h|--version|version)$/.test(args.at(args.length - 1) ?? ""))
    return null;
  const verb = args.subcommand()?.value.toLowerCase() ?? "";
  switch (name) {
    case "bun":
      // Its own subcommands (`bun info`, `bun pm`) are the package manager's; a script or file runs code.
      return /^(?:run|test|x|exec|create|build)$|[./]/.test(verb) ? hit(2, "script_file") : null;
    case "go":
      return /^(?:run|test|generate)$/.test(verb) ? hit(2, "script_file") : null;
    case "cargo":
      return /^(?:run|r|test|t|bench|build|b|check|c|clippy|doc|d)$/.test(verb)
        ? hit(2, "script_file")
        : null;
    case "rails":
      // The status and listing tasks boot the application but report only.
      if (/(?::status|^routes|^about|^stats|^notes|^middleware|^time:zones(?::all)?|^secret)$/.test(verb))
        return null;
      // `rails generate` alone lists the generators.
      if (/^(?:generate|g|destroy|d)$/.test(verb))
        return args.length > 1 ? hit(2, "filesystem_change") : null;
      return verb === "new" ? hit(2, "filesystem_change") : hit(2, "script_file");
    case "dotnet":
      // `dotnet ef migrations list` and the SDK's own commands report; these run the project.
      return /^(?:run|test|watch|exec|build|publish|pack)$|\.dll$/.test(verb) ||
        (verb === "ef" && args.values.includes("update"))
        ? hit(2, "script_file")
        : null;
    case "gradle":
    case "gradlew":
    case "mvn":
    case "mvnw":
      // The reporting tasks still evaluate the build files (programs), so they stay unproven (Tier 1).
      return reportsOnly(args.values) ? null : hit(2, "script_file");
    default:
      return hit(2, "script_file");
  }
}

/**
 * Configuration management applying a catalogue or run list to the host: `puppet apply`,
 * `puppet agent` and `chef-client` change the host's configuration, unless told to only report
 * (`--noop`, `--why-run`).
 */
function configRun({ name, args }: RuleInput): Hit | null {
  if ((args.length > 0 && infoOnly(args)) || args.has("--noop", "--why-run", "-W")) return null;
  if (name === "puppet") {
    const verb = args.subcommand()?.value.toLowerCase() ?? "";
    return verb === "apply" || verb === "agent" ? hit(2, "config_change") : null;
  }
  return hit(2, "config_change");
}

/**
 * packer: `build` starts machines, runs the template's provisioners and publishes the image it
 * made; `init` and `plugins install` fetch plugins. Validating, inspecting and formatting read.
 */
function packer({ args }: RuleInput): Hit | null {
  const [verb, next] = args.operands().map((v) => v.toLowerCase());
  if (verb === "build") return hit(2, "infrastructure_change");
  return verb === "init" || (verb === "plugins" && (next === "install" || next === "remove"))
    ? hit(2, "package_change")
    : null;
}

export const BUILD_RULES = table([
  [["make", "gmake", "just", "task", "rake", "invoke"], make],
  [["java", "dotnet", "gradle", "gradlew", "mvn", "mvnw", "rails"], projectCode],
  [["puppet", "chef-client", "chef-solo"], configRun],
  ["packer", packer],
]);
