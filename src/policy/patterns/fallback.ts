import type { Tier } from "../../core/index.js";

/**
 * The pattern tables used when the shell parser cannot be trusted with the
 * text: a parse error, an input too large to parse in time, or an internal
 * failure. A port of the docs/wire-contract.md §5.6 families: case-insensitive, and an
 * alternative fires only at a token start (the previous character is not a
 * letter, digit or underscore; Unicode-aware, as Python's `\w` is).
 *
 * Linear time: every regex is a literal, or literals joined by single-class
 * runs whose classes do not overlap with what follows, so a failed attempt at
 * one position never re-scans more than the run it started. The "within N
 * tokens" rules are a token scan, not a regex.
 */

export interface FallbackHit {
  tier: Tier;
  /** The text around the match, for `part`. */
  part: string;
}

const W = "[\\p{L}\\p{N}_]";
const START = `(?<!${W})`;
const END = `(?!${W})`;

interface Pattern {
  /** Lower-case literals of which every match contains one: a cheap `includes` before the regex runs. */
  needles: string[];
  re: RegExp;
}

function p(needles: string[], body: string): Pattern {
  return { needles, re: new RegExp(body, "iu") };
}

const TIER3: Pattern[] = [
  p(
    [
      "shred",
      "fdisk",
      "sgdisk",
      "wipefs",
      "shutdown",
      "reboot",
      "halt",
      "poweroff",
      "userdel",
      "deluser",
      "gpasswd",
      "blkdiscard",
      "killall5",
      "flush",
      "dropdatabase",
    ],
    `${START}(?:shred|fdisk|sgdisk|wipefs|shutdown|reboot|halt|poweroff|userdel|deluser|gpasswd|blkdiscard|killall5|flushall|flushdb|dropdatabase)${END}`,
  ),
  p(["mkfs"], `${START}mkfs`),
  p(["init"], `${START}init[ \\t]+[06]${END}`),
  p(["passwd"], `${START}passwd\\s`),
  p(["drop"], `${START}drop\\s+(?:database|table|schema)${END}`),
  p(["truncate"], `${START}truncate\\s+table${END}`),
  p(["reset"], `${START}git\\s+reset\\s+--hard`),
  p(["clean"], `${START}git\\s+clean\\s+-[a-z]*f`),
  p(["iptables"], `${START}iptables\\s+-F`),
  p(["nft"], `${START}nft\\s+flush`),
  p([":()"], `:\\(\\)\\s*\\{`),
  p(["/dev/"], `(?<![\\p{L}\\p{N}_/])/dev/sd[a-z]${END}`),
  p(["/dev/"], `>\\s*/dev/(?:sd|hd|nvme|vd|xvd|mmcblk)`),
  p(["sysrq"], `/proc/sysrq-trigger`),
  p(["systemctl"], `${START}systemctl\\s+(?:reboot|poweroff|halt|kexec)`),
  p(["destroy"], `${START}(?:terraform|tofu|pulumi)\\s+destroy`),
  p(["-delete"], `${START}find\\s[^|;&\\n]{0,200}-delete`),
  p(["|"], `\\|\\s*(?:sudo\\s+)?(?:ba|da|z|k)?sh${END}`),
  p(["python"], `\\|\\s*(?:sudo\\s+)?python[0-9.]*\\s*(?:$|[|;&\\n])`),
  p(["base64"], `${START}base64\\s+(?:-d|--decode)`),
  p(["<("], `${START}(?:bash|sh)\\s+<\\(`),
  // Brace expansion in command position: `{rm,-rf,/}` runs `rm -rf /`, and the bash grammar rejects it.
  p(["{"], `(?:^|[;&|\\n(]\\s*)\\{[^{}\\s,]+,[^{}\\s]*\\}`),
];

const TIER2: Pattern[] = [
  p(["sudo", "doas", "pkexec", "runas"], `${START}(?:sudo|doas|pkexec|runas)${END}`),
  p(["systemctl"], `${START}systemctl\\s+(?:start|stop|restart|reload|disable|enable|mask|kill)`),
  p(["service"], `${START}service\\s+[\\w@.-]+\\s+(?:start|stop|restart|reload)`),
  p(["apt"], `${START}(?:apt|apt-get)\\s+(?:install|remove|purge|upgrade|dist-upgrade)`),
  p(["yum", "dnf"], `${START}(?:yum|dnf)\\s+(?:install|remove)`),
  p(["pip"], `${START}pip[0-9.]*\\s+install`),
  p(["npm"], `${START}npm\\s+(?:install|i)${END}`),
  p(["docker"], `${START}docker\\s+(?:run|rm|stop|kill|compose|build)`),
  p(["kubectl"], `${START}kubectl\\s+(?:apply|delete|scale|rollout)`),
  p(["chown", "crontab", "ssh-copy-id"], `${START}(?:chown|crontab|ssh-copy-id)${END}`),
  p(["chmod"], `${START}chmod\\s+-R`),
  p(["chmod"], `${START}chmod\\s+[0-7]{3,4}\\s+/`),
  p(["ln"], `${START}ln\\s+-s`),
  p(["mv"], `${START}mv\\s+/`),
  p(["cp"], `${START}cp\\s+-[a-z]+\\s+/`),
  p(["sed"], `${START}sed\\s+-i`),
  p(["tee"], `${START}tee\\s+(?:-a\\s+)?/etc/`),
  p(["/etc/"], `>>?\\s*/etc/`),
  p(["git"], `${START}git\\s+(?:push|commit|merge|rebase)${END}`),
  p(["ufw"], `${START}ufw\\s+(?:allow|deny|enable|disable)`),
  p(["python", "perl", "ruby", "node"], `${START}(?:python[0-9.]*|perl|ruby|node)\\s+-[a-z]*[ce]${END}`),
];

function firstMatch(patterns: Pattern[], text: string, lower: string): RegExpExecArray | null {
  for (const pat of patterns) {
    if (!pat.needles.some((n) => lower.includes(n))) continue;
    const m = pat.re.exec(text);
    if (m !== null) return m;
  }
  return null;
}

/** Only texts with one of these words need the token scan. */
const TOKEN_RULE_HINT = /(?:rm|dd|push|link)(?![\p{L}\p{N}_])/iu;

const SEPARATORS = new Set(["|", ";", "&", "&&", "||"]);

/** A token's command name: quotes and backslashes dropped, directory stripped, lower-cased. */
function tokenName(token: string): string {
  const bare = /['"\\]/.test(token) ? token.replace(/['"\\]/g, "") : token;
  const slash = bare.lastIndexOf("/");
  return (slash < 0 ? bare : bare.slice(slash + 1)).toLowerCase();
}

function snippet(text: string, index: number): string {
  return text.slice(index, index + 120);
}

/**
 * The token-window rules: rm with a recursive or forced flag (next token) or a
 * long option within 16 tokens; dd with `of=/dev/...` before a separator;
 * `git push` with a force option later on the line; `ip link ... down`.
 */
function tokenRules(text: string): FallbackHit | null {
  const lines = text.split("\n");
  for (const line of lines) {
    const tokens = line.split(/[ \t\r\f\v]+/);
    let rmAt = -100;
    let ddOpen = false;
    let pushSeen = false;
    let linkSeen = false;
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i]!;
      const name = tokenName(t);
      if (SEPARATORS.has(t)) ddOpen = false;
      if (name === "rm") rmAt = i;
      else if (i === rmAt + 1 && /^-[a-z]*f|^-[rf]/i.test(t)) return { tier: 3, part: snippet(line, 0) };
      else if (i - rmAt <= 16 && /^--(?:recursive|force|no-preserve-root)/i.test(t))
        return { tier: 3, part: snippet(line, 0) };
      if (name === "dd") ddOpen = true;
      else if (ddOpen && /^of=\/dev\/(?!null|zero|stdout|stderr)/i.test(t))
        return { tier: 3, part: snippet(line, 0) };
      if (name === "push" && tokenName(tokens[i - 1] ?? "") === "git") pushSeen = true;
      else if (pushSeen && (/^--force/i.test(t) || /^-[a-z]*f/i.test(t) || /^\+/.test(t)))
        return { tier: 3, part: snippet(line, 0) };
      if (name === "link" && tokenName(tokens[i - 1] ?? "") === "ip") linkSeen = true;
      else if (linkSeen && t.toLowerCase() === "down") return { tier: 3, part: snippet(line, 0) };
    }
  }
  return null;
}

/** Highest tier the pattern tables give, or null for "nothing matched" (the caller's default is Tier 1). */
export function fallbackClassify(text: string): FallbackHit | null {
  const lower = text.toLowerCase();
  const t3 = firstMatch(TIER3, text, lower);
  if (t3 !== null) return { tier: 3, part: snippet(text, t3.index) };
  if (TOKEN_RULE_HINT.test(text)) {
    const windowHit = tokenRules(text);
    if (windowHit !== null) return windowHit;
  }
  const t2 = firstMatch(TIER2, text, lower);
  return t2 === null ? null : { tier: 2, part: snippet(text, t2.index) };
}
