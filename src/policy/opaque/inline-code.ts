/**
 * Programs in languages without a grammar here (Perl, Ruby, Node.js/Deno/Bun,
 * PHP, Lua, Julia, Tcl …) are read for one family of APIs: deletion (Tier 3),
 * and the calls that hand a string to a shell or exec, whose string literals
 * are then classified as shell command lines. Everything else such a program
 * does (writes, network) stays at the Tier-2 floor of an opaque or inline
 * program. Every pattern here is a set of alternatives of literal words and
 * bounded runs, so the scan stays linear.
 */

/** API calls that delete or destroy. */
const DESTRUCTIVE_CODE = new RegExp(
  [
    // Perl File::Path, Ruby Pathname#rmtree, Python shutil (for unparsable Python)
    String.raw`\brmtree\b`,
    String.raw`\bremove_tree\b`,
    String.raw`\bos\s*\.\s*(?:remove|unlink|rmdir|removedirs)\b`,
    // unlink/rmdir as a call, a Perl list operator, or a PHP callback name
    String.raw`\bunlink(?:Sync)?\s*\(`,
    String.raw`\bunlink\s+[\w$@"']`,
    String.raw`\brmdir\s+[$@"']`,
    `["'](?:unlink|rmdir)["']`,
    String.raw`\.unlink\s*\(`,
    String.raw`\brimraf\b`,
    // Node fs, fs/promises, fs-extra; Deno; Julia rm()
    String.raw`\bfs(?:\.promises)?\s*\.\s*(?:rm|rmSync|rmdir|rmdirSync|unlink|unlinkSync)\b`,
    String.raw`\.(?:rmSync|rmdirSync|unlinkSync|rm|removeSync|emptyDirSync|emptyDir)\s*\(`,
    String.raw`\bDeno\s*\.\s*remove(?:Sync)?\b`,
    String.raw`\brm\s*\(`,
    // Ruby FileUtils, File, Dir
    String.raw`\bFileUtils\s*\.\s*(?:rm|rm_r|rm_rf|rm_f|rmdir|remove|remove_dir|remove_entry|remove_entry_secure|remove_file)\b`,
    String.raw`\bFile\s*\.\s*(?:delete|unlink|rm|rm_rf|rmdir)\b`,
    String.raw`\bDir\s*\.\s*(?:rmdir|delete|unlink)\b`,
    // PHP and Lua file system
    String.raw`\brmdir\s*\(`,
    String.raw`\bdeleteRecursively\b`,
    String.raw`\bshred\b`,
    String.raw`\btruncate\s*\(`,
    // Tcl
    String.raw`\bfile\s+delete\b`,
    // MongoDB shell: a database or a collection dropped, every document deleted
    String.raw`\bdropDatabase\s*\(`,
    String.raw`\.drop\s*\(\s*\)`,
    String.raw`\.(?:deleteMany|remove)\s*\(\s*\{\s*\}\s*\)`,
    // fork bombs
    String.raw`\bfork\s+while\s+fork\b`,
    String.raw`\bwhile\s*\(\s*(?:1|true)\s*\)\s*(?:\{\s*)?(?:os\.)?fork\b`,
  ].join("|"),
  "i",
);

/** Calls that hand a string to a shell or exec: their string literals are commands. */
const EXECUTES_CODE = new RegExp(
  [
    String.raw`\bsystem\s*\(`,
    String.raw`\bsystem\s+["'q]`,
    String.raw`\bexec\s+["'q]`,
    String.raw`\bpopen\d?\w*\s*\(`,
    String.raw`\bexec[a-zA-Z]*\s*\(`,
    String.raw`\bspawn[a-zA-Z]*\s*\(`,
    String.raw`\bsubprocess\b`,
    String.raw`\bcheck_output\b`,
    String.raw`\bcall\s*\(`,
    String.raw`\brun\s*\(`,
    "`",
    String.raw`%x\s*[({[|!]`,
    String.raw`\bqx\s*[^\w\s]`,
    String.raw`\bshell_exec\s*\(`,
    String.raw`\bpassthru\s*\(`,
    String.raw`\bproc_open\s*\(`,
    String.raw`\bpcntl_exec\b`,
    String.raw`\bchild_process\b`,
    String.raw`\bKernel\s*\.\s*(?:system|exec|spawn)\b`,
    String.raw`\bIO\s*\.\s*popen\b`,
    String.raw`\bOpen3\b`,
    String.raw`\bexecSync\b`,
    String.raw`\bos\s*\.\s*(?:system|execute)\b`,
    String.raw`\bDeno\s*\.\s*(?:run|Command)\b`,
    String.raw`\bBun\s*\.\s*(?:spawn|spawnSync|\$)`,
    // Perl's pipe open: open(F, "cmd |"), open(my $f, "-|", "cmd")
    String.raw`\bopen\b[^;\n]{0,120}\|`,
  ].join("|"),
);

export interface InlineAnalysis {
  destructive: boolean;
  /** Candidate shell command lines found in string literals, when the program runs commands. */
  commands: string[];
}

const CLOSER: Readonly<Record<string, string>> = { "(": ")", "{": "}", "[": "]", "<": ">" };

/** Perl `qx{…}`/`qq(…)`/`q/…/` and Ruby `%x(…)`/`%Q{…}`: quoted text with a chosen delimiter. */
function delimitedLiterals(code: string, out: string[]): void {
  const open = /(?:\bq[qxw]?|%[xqQw]?)\s*([({[<|!/#~^])/g;
  for (let m = open.exec(code); m !== null; m = open.exec(code)) {
    const d = m[1]!;
    const close = CLOSER[d] ?? d;
    const start = m.index + m[0].length;
    const end = code.indexOf(close, start);
    if (end < 0) return;
    out.push(code.slice(start, end));
    open.lastIndex = end + 1;
  }
}

/** Pipe-open markers around a command (`"rm -rf x |"`, `"| sh"`, `"-|"`). */
function stripPipe(line: string): string {
  return line.replace(/^\s*-?\|\s*/, "").replace(/\s*\|-?\s*$/, "");
}

/**
 * Look inside an inline program. String literals are collected in one linear
 * scan; literals separated only by commas (and an opening bracket) are joined
 * with spaces so that `["rm", "-rf", "/"]` and the argument array of a spawn call
 * are seen as the command line `rm -rf /`.
 */
export function analyzeInline(code: string): InlineAnalysis {
  const destructive = DESTRUCTIVE_CODE.test(code);
  if (!EXECUTES_CODE.test(code)) return { destructive, commands: [] };
  const commands: string[] = [];
  let group: string[] = [];
  let gapEnd = -1;
  let i = 0;
  while (i < code.length) {
    const q = code[i]!;
    if (q !== '"' && q !== "'" && q !== "`") {
      i++;
      continue;
    }
    let j = i + 1;
    let lit = "";
    while (j < code.length && code[j] !== q) {
      if (code[j] === "\\" && j + 1 < code.length) {
        lit += code[j + 1];
        j += 2;
      } else {
        lit += code[j];
        j++;
      }
    }
    const between = gapEnd < 0 ? "" : code.slice(gapEnd, i);
    if (group.length > 0 && !/^\s*,\s*\[?\s*$/.test(between)) {
      commands.push(group.join(" "));
      group = [];
    }
    group.push(lit);
    gapEnd = j + 1;
    i = j + 1;
  }
  if (group.length > 0) commands.push(group.join(" "));
  delimitedLiterals(code, commands);
  return { destructive, commands: commands.map(stripPipe).filter((c) => c.trim() !== "") };
}
