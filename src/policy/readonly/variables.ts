import type { Word } from "../shell/words.js";

/**
 * Variables a command may set without changing what runs or what it reads as
 * code: shell locals in lower case (which programs do not read, proxies aside)
 * and the locale, time-zone and terminal ones, and `ETCDCTL_API=3`. Anything else (PATH, LD_*,
 * GIT_*, LESSOPEN, BASH_ENV, KUBECONFIG, HOME …) may point a program at code.
 * A pager variable is allowed only when it names `cat` or nothing.
 */
export function safeVariable(name: string, value: Word | null): boolean {
  if (/^[a-z_][a-z0-9_]*$/.test(name)) return !/_proxy$/.test(name);
  if (SAFE_VARIABLES.test(name)) return true;
  // etcdctl's API version: 3 is the only one current releases speak.
  if (name === "ETCDCTL_API") return value !== null && !value.dynamic && value.value === "3";
  if (PAGER_VARIABLES.has(name))
    return value !== null && !value.dynamic && (value.value === "" || value.value === "cat");
  return false;
}

const SAFE_VARIABLES = /^(?:LANG|LANGUAGE|LC_[A-Z]+|TZ|COLUMNS|LINES|NO_COLOR|TERM|SYSTEMD_COLORS)$/;
const PAGER_VARIABLES = new Set(["PAGER", "SYSTEMD_PAGER", "GIT_PAGER", "MANPAGER", "AWS_PAGER"]);
