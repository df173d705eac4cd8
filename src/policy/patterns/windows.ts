import type { Hit } from "../rules/args.js";
import { hit } from "../rules/args.js";

/**
 * PowerShell and cmd.exe rules for SSH targets that run Windows. Text is
 * tokenized in one linear pass (no tree-sitter: the bash grammar does not
 * know PowerShell): statements split at newlines, `;`, `|`, `&`, `{` and `}`;
 * parentheses only end a token and put the next word in command position.
 * Cmdlets, aliases and parameters match case-insensitively, and parameter
 * names match by prefix as PowerShell binds them (`-rec`, `-r`, `-Recurse:$true`).
 */

export interface WinStatement {
  raw: string[];
  lower: string[];
  /** Indexes of the tokens in command position. */
  commands: number[];
  /** The statement read what the previous one piped to it. */
  piped: boolean;
}

enum Ch {
  Plain,
  Blank,
  Quote,
  Tick,
  Break,
  Pipe,
  Amp,
  Open,
  Close,
}

function charKind(code: number): Ch {
  switch (code) {
    case 32:
    case 9:
    case 11:
    case 12:
      return Ch.Blank;
    case 34:
    case 39:
      return Ch.Quote;
    case 96:
      return Ch.Tick;
    case 10:
    case 13:
    case 59:
    case 123:
    case 125:
      return Ch.Break;
    case 124:
      return Ch.Pipe;
    case 38:
      return Ch.Amp;
    case 40:
      return Ch.Open;
    case 41:
      return Ch.Close;
    default:
      return Ch.Plain;
  }
}

const ASSIGN_OP = /^(?:[-+*/%]|\?\?)?=$/;

/**
 * Statements are handed to `onStatement` as they end (nothing accumulates, so
 * a megabyte of text does not keep every token alive); it returns true to stop.
 */
export function tokenizeWindows(text: string, onStatement: (st: WinStatement) => boolean): void {
  let stopped = false;
  let cur: WinStatement = { raw: [], lower: [], commands: [], piped: false };
  let token = "";
  let inToken = false;
  let commandNext = true;
  const endToken = () => {
    if (!inToken) return;
    if (commandNext) cur.commands.push(cur.raw.length);
    cur.raw.push(token);
    cur.lower.push(token.toLowerCase());
    // `$x = Remove-Item ...`: the right side of an assignment is in command position.
    commandNext = token.length <= 3 && ASSIGN_OP.test(token);
    token = "";
    inToken = false;
  };
  const endStatement = (piped: boolean) => {
    endToken();
    if (cur.raw.length > 0 && !stopped) stopped = onStatement(cur);
    cur = { raw: [], lower: [], commands: [], piped };
    commandNext = true;
  };
  const n = text.length;
  let i = 0;
  while (i < n && !stopped) {
    const code = text.charCodeAt(i);
    const kind = charKind(code);
    if (kind === Ch.Plain) {
      let j = i + 1;
      while (j < n && charKind(text.charCodeAt(j)) === Ch.Plain) j++;
      token += text.slice(i, j);
      inToken = true;
      i = j;
      continue;
    }
    switch (kind) {
      case Ch.Blank:
        endToken();
        break;
      case Ch.Quote: {
        const close = text.indexOf(text[i]!, i + 1);
        const end = close < 0 ? n : close;
        token += text.slice(i + 1, end);
        inToken = true;
        i = end;
        break;
      }
      case Ch.Tick:
        if (i + 1 < n) token += text[i + 1];
        inToken = true;
        i++;
        break;
      case Ch.Break:
        endStatement(false);
        break;
      case Ch.Pipe:
      case Ch.Amp: {
        const doubled = text.charCodeAt(i + 1) === code;
        endStatement(kind === Ch.Pipe && !doubled);
        if (doubled) i++;
        break;
      }
      case Ch.Open:
      case Ch.Close:
        if (inToken && (token === "$" || token === "@")) {
          token = "";
          inToken = false;
        }
        endToken();
        commandNext = kind === Ch.Open;
        break;
    }
    i++;
  }
  endStatement(false);
}

const DESTROY = hit(3, "windows_destructive");
const STATEFUL = hit(2, "windows_stateful");

/** `-Recurse`, `-rec`, `-r:$true`; `:$false` switches it off. */
function switchParam(tokens: string[], from: number, window: number, names: string[]): boolean {
  for (let i = from; i < Math.min(tokens.length, from + window); i++) {
    const t = tokens[i]!;
    if (t.length < 2 || t[0] !== "-") continue;
    const colon = t.indexOf(":");
    const name = colon < 0 ? t.slice(1) : t.slice(1, colon);
    const value = colon < 0 ? "" : t.slice(colon + 1);
    if (value === "$false" || value === "0") continue;
    if (name.length > 0 && names.some((n) => n.startsWith(name))) return true;
  }
  return false;
}

function slashFlag(tokens: string[], from: number, window: number, flags: string[]): boolean {
  for (let i = from; i < Math.min(tokens.length, from + window); i++)
    if (flags.includes(tokens[i]!)) return true;
  return false;
}

const DESTRUCTIVE_CMDLETS = new Set([
  "clear-disk",
  "format-volume",
  "initialize-disk",
  "stop-computer",
  "restart-computer",
  "remove-service",
  "remove-localuser",
  "remove-localgroup",
  "clear-eventlog",
  "remove-partition",
  "remove-virtualdisk",
  "remove-storagepool",
  "remove-vm",
  "remove-aduser",
  "remove-adcomputer",
  "remove-adgroup",
  "remove-adorganizationalunit",
  "disable-netadapter",
  "remove-netipaddress",
  "diskpart",
  "bcdedit",
]);

const STATEFUL_CMDLETS = new Set([
  "stop-service",
  "start-service",
  "restart-service",
  "set-service",
  "new-service",
  "suspend-service",
  "resume-service",
  "install-module",
  "install-package",
  "uninstall-module",
  "uninstall-package",
  "update-module",
  "install-windowsfeature",
  "uninstall-windowsfeature",
  "add-windowscapability",
  "remove-windowscapability",
  "enable-windowsoptionalfeature",
  "disable-windowsoptionalfeature",
  "remove-netfirewallrule",
  "disable-netfirewallrule",
  "set-netfirewallrule",
  "new-netfirewallrule",
  "enable-netfirewallrule",
  "set-netfirewallprofile",
  "set-itemproperty",
  "new-itemproperty",
  "remove-itemproperty",
  "new-localuser",
  "set-localuser",
  "disable-localuser",
  "add-localgroupmember",
  "remove-localgroupmember",
  "register-scheduledtask",
  "unregister-scheduledtask",
  "set-scheduledtask",
  "set-executionpolicy",
  "rename-computer",
  "set-date",
  "set-timezone",
  "msiexec",
]);

const REMOVERS = new Set([
  "remove-item",
  "ri",
  "rm",
  "rmdir",
  "rd",
  "del",
  "erase",
  "rp",
  "remove-itemproperty",
]);
const CMD_REMOVERS = new Set(["rmdir", "rd", "del", "erase"]);
const REGISTRY_REMOVERS = new Set(["rp", "remove-itemproperty"]);
const REMOVE_NAMED = hit(1, "file_destruction");
export const DOWNLOADS =
  /(?:invoke-webrequest|invoke-restmethod|\biwr\b|\birm\b|downloadstring|downloadfile|net\.webclient|start-bitstransfer|\bcurl\b|\bwget\b)/;

/** A command name without its directory and `.exe`. */
function commandName(token: string): string {
  const cut = Math.max(token.lastIndexOf("\\"), token.lastIndexOf("/"));
  const base = cut >= 0 ? token.slice(cut + 1) : token;
  return base.endsWith(".exe") ? base.slice(0, -4) : base;
}

export interface WindowsContext {
  /** Classify nested PowerShell/cmd text (`powershell -c "..."`, `cmd /c "..."`). */
  nested(text: string): Hit | null;
}

/** Classify one command-position token of a statement. */
export function classifyWindowsCommand(
  st: WinStatement,
  at: number,
  joined: string,
  upstreamDownload: boolean,
  ctx: WindowsContext,
): Hit | null {
  const name = commandName(st.lower[at]!);
  const args = st.lower;
  const next = at + 1;
  const a1 = args[next];
  if (REMOVERS.has(name)) {
    if (switchParam(args, next, 16, ["recurse", "force"])) return DESTROY;
    if (CMD_REMOVERS.has(name) && slashFlag(args, next, 8, ["/s", "/q"])) return DESTROY;
    if (REGISTRY_REMOVERS.has(name)) return STATEFUL;
    // Removing what a pipeline hands over (`… | Remove-Item`) is a removal per item, as `xargs rm`
    // is; a named item is the POSIX rules' deletion family: Tier 1, as the conformance rows have it.
    return st.piped ? DESTROY : REMOVE_NAMED;
  }
  if (DESTRUCTIVE_CMDLETS.has(name)) return DESTROY;
  if (name === "format") {
    for (let i = next; i < Math.min(args.length, next + 8); i++)
      if (/^[a-z]:\\?$/.test(args[i]!)) return DESTROY;
    return null;
  }
  if (name === "vssadmin" && a1 === "delete" && args[next + 1] === "shadows") return DESTROY;
  if (name === "vssadmin" && a1 === "resize") return DESTROY;
  if (name === "wmic" && args.slice(next, next + 4).includes("delete")) return DESTROY;
  if (name === "wbadmin" && a1?.startsWith("delete")) return DESTROY;
  if (name === "cipher" && slashFlag(args, next, 8, ["/w"])) return DESTROY;
  if (name === "cipher" && args.slice(next, next + 8).some((t) => t.startsWith("/w:"))) return DESTROY;
  if ((name === "reg" || name === "sc") && a1 === "delete") return DESTROY;
  if (name === "wevtutil" && (a1 === "cl" || a1 === "clear-log")) return DESTROY;
  if (name === "shutdown") return slashFlag(args, next, 4, ["/a", "-a", "/?"]) ? null : DESTROY;
  if (name === "net" && (a1 === "user" || a1 === "localgroup")) {
    return slashFlag(args, next, 8, ["/delete", "/del", "/d"]) ? hit(3, "account_access") : STATEFUL;
  }
  if (name === "netsh") {
    const rest = args.slice(next, next + 8);
    if (
      rest.includes("interface") &&
      rest.some((t) => t === "disable" || t === "admin=disabled" || t === "disabled")
    ) {
      return hit(3, "network_lockout");
    }
    return a1 === "advfirewall" ||
      a1 === "firewall" ||
      rest.includes("set") ||
      rest.includes("add") ||
      rest.includes("delete")
      ? STATEFUL
      : null;
  }
  if (STATEFUL_CMDLETS.has(name)) return STATEFUL;
  if (name === "sc" || name === "net") {
    const verbs = ["stop", "start", "config", "create", "failure", "pause", "continue", "share", "use"];
    return a1 !== undefined && verbs.includes(a1) ? STATEFUL : null;
  }
  if (name === "reg")
    return a1 !== undefined && ["add", "import", "copy", "restore", "load", "unload"].includes(a1)
      ? STATEFUL
      : null;
  if (name === "choco" || name === "winget" || name === "scoop") {
    const verbs = ["install", "uninstall", "upgrade", "update", "remove", "add", "import"];
    return a1 !== undefined && verbs.includes(a1) ? STATEFUL : null;
  }
  if (name === "schtasks")
    return slashFlag(args, next, 8, ["/create", "/delete", "/change", "/run", "/end"]) ? STATEFUL : null;
  if (name === "stop-process" || name === "taskkill" || name === "kill" || name === "spps")
    return hit(2, "process_kill");
  if (name === "runas") return hit(2, "privilege_escalation");
  if (name === "start-process" || name === "saps" || name === "start") {
    for (let i = next; i < args.length - 1; i++) {
      if (args[i]!.startsWith("-verb") && args[i + 1] === "runas") return hit(2, "privilege_escalation");
      if (/^-verb:runas$/.test(args[i]!)) return hit(2, "privilege_escalation");
    }
    return null;
  }
  if (name === "invoke-expression" || name === "iex") {
    if (upstreamDownload || DOWNLOADS.test(joined)) return hit(3, "remote_code");
    if (joined.includes("frombase64string")) return hit(3, "decoded_code");
    return hit(3, st.piped ? "piped_to_shell" : "dynamic_command");
  }
  if (name === "powershell" || name === "pwsh") return powershell(st, next, ctx);
  if (name === "cmd") {
    for (let i = next; i < args.length; i++) {
      if (args[i] === "/c" || args[i] === "/k") return ctx.nested(st.raw.slice(i + 1).join(" "));
    }
    return null;
  }
  return null;
}

function powershell(st: WinStatement, from: number, ctx: WindowsContext): Hit | null {
  for (let i = from; i < st.lower.length; i++) {
    const t = st.lower[i]!;
    if (!t.startsWith("-")) continue;
    const name = t.slice(1);
    if (name.length >= 1 && "encodedcommand".startsWith(name) && name.startsWith("e")) {
      const payload = st.raw[i + 1];
      const decoded = payload === undefined ? null : decodeUtf16Base64(payload);
      if (decoded === null) return hit(3, "decoded_code");
      const inner = ctx.nested(decoded);
      return inner !== null && inner.tier >= 2 ? inner : hit(2, "decoded_code");
    }
    if (name.length >= 1 && "command".startsWith(name)) return ctx.nested(st.raw.slice(i + 1).join(" "));
  }
  return null;
}

function decodeUtf16Base64(payload: string): string | null {
  if (!/^[A-Za-z0-9+/=]+$/.test(payload)) return null;
  const bytes = Buffer.from(payload, "base64");
  if (bytes.length < 2) return null;
  return bytes.toString("utf16le");
}
