import type { Tier } from "../core/index.js";

/**
 * The pattern tables used when the shell parser cannot be trusted with the
 * text: a parse error, an input too large to parse in time, or an internal
 * failure. A port of the CONTRACT §5.6 families: case-insensitive, and an
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

function rx(body: string): RegExp {
  return new RegExp(body, "iu");
}

const TIER3 = [
  rx(`${START}(?:shred|fdisk|sgdisk|wipefs|shutdown|reboot|halt|poweroff|userdel|deluser|gpasswd|blkdiscard|killall5|flushall|flushdb|dropdatabase)${END}`),
  rx(`${START}mkfs`),
  rx(`${START}init[ \\t]+[06]${END}`),
  rx(`${START}passwd\\s`),
  rx(`${START}drop\\s+(?:database|table|schema)${END}`),
  rx(`${START}truncate\\s+table${END}`),
  rx(`${START}git\\s+reset\\s+--hard`),
  rx(`${START}git\\s+clean\\s+-[a-z]*f`),
  rx(`${START}iptables\\s+-F`),
  rx(`${START}nft\\s+flush`),
  rx(`:\\(\\)\\s*\\{`),
  rx(`(?<![\\p{L}\\p{N}_/])/dev/sd[a-z]${END}`),
  rx(`>\\s*/dev/(?:sd|hd|nvme|vd|xvd|mmcblk)`),
  rx(`/proc/sysrq-trigger`),
  rx(`${START}systemctl\\s+(?:reboot|poweroff|halt|kexec)`),
  rx(`${START}(?:terraform|tofu|pulumi)\\s+destroy`),
  rx(`${START}find\\s[^|;&\\n]{0,200}-delete`),
  rx(`\\|\\s*(?:sudo\\s+)?(?:ba|da|z|k)?sh${END}`),
  rx(`\\|\\s*(?:sudo\\s+)?python[0-9.]*\\s*(?:$|[|;&\\n])`),
  rx(`${START}base64\\s+(?:-d|--decode)`),
  rx(`${START}(?:bash|sh)\\s+<\\(`),
];

const TIER2 = [
  rx(`${START}(?:sudo|doas|pkexec|runas)${END}`),
  rx(`${START}systemctl\\s+(?:start|stop|restart|reload|disable|enable|mask|kill)`),
  rx(`${START}service\\s+[\\w@.-]+\\s+(?:start|stop|restart|reload)`),
  rx(`${START}(?:apt|apt-get)\\s+(?:install|remove|purge|upgrade|dist-upgrade)`),
  rx(`${START}(?:yum|dnf)\\s+(?:install|remove)`),
  rx(`${START}pip[0-9.]*\\s+install`),
  rx(`${START}npm\\s+(?:install|i)${END}`),
  rx(`${START}docker\\s+(?:run|rm|stop|kill|compose|build)`),
  rx(`${START}kubectl\\s+(?:apply|delete|scale|rollout)`),
  rx(`${START}(?:chown|crontab|ssh-copy-id)${END}`),
  rx(`${START}chmod\\s+-R`),
  rx(`${START}chmod\\s+[0-7]{3,4}\\s+/`),
  rx(`${START}ln\\s+-s`),
  rx(`${START}mv\\s+/`),
  rx(`${START}cp\\s+-[a-z]+\\s+/`),
  rx(`${START}sed\\s+-i`),
  rx(`${START}tee\\s+(?:-a\\s+)?/etc/`),
  rx(`>>?\\s*/etc/`),
  rx(`${START}git\\s+(?:push|commit|merge|rebase)${END}`),
  rx(`${START}ufw\\s+(?:allow|deny|enable|disable)`),
  rx(`${START}(?:python[0-9.]*|perl|ruby|node)\\s+-[a-z]*[ce]${END}`),
];

const SEPARATORS = new Set(["|", ";", "&", "&&", "||"]);

/** A token's command name: quotes and backslashes dropped, directory stripped, lower-cased. */
function tokenName(token: string): string {
  const bare = token.replace(/['"\\]/g, "");
  return bare.slice(bare.lastIndexOf("/") + 1).toLowerCase();
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
      else if (i - rmAt <= 16 && /^--(?:recursive|force|no-preserve-root)/i.test(t)) return { tier: 3, part: snippet(line, 0) };
      if (name === "dd") ddOpen = true;
      else if (ddOpen && /^of=\/dev\/(?!null|zero|stdout|stderr)/i.test(t)) return { tier: 3, part: snippet(line, 0) };
      if (name === "push" && tokenName(tokens[i - 1] ?? "") === "git") pushSeen = true;
      else if (pushSeen && (/^--force/i.test(t) || /^-[a-z]*f/i.test(t) || /^\+/.test(t))) return { tier: 3, part: snippet(line, 0) };
      if (name === "link" && tokenName(tokens[i - 1] ?? "") === "ip") linkSeen = true;
      else if (linkSeen && t.toLowerCase() === "down") return { tier: 3, part: snippet(line, 0) };
    }
  }
  return null;
}

/** Highest tier the pattern tables give, or null for "nothing matched" (the caller's default is Tier 1). */
export function fallbackClassify(text: string): FallbackHit | null {
  for (const re of TIER3) {
    const m = re.exec(text);
    if (m !== null) return { tier: 3, part: snippet(text, m.index) };
  }
  const windowHit = tokenRules(text);
  if (windowHit !== null) return windowHit;
  for (const re of TIER2) {
    const m = re.exec(text);
    if (m !== null) return { tier: 2, part: snippet(text, m.index) };
  }
  return null;
}
