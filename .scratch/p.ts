import { parseSshConfig } from "../src/ssh/ssh-config.js";
for (const t of ['Host "unterminated\n  HostName x', '  \t\n===\nHost\n', 'Host a\n  IdentityFile "a b\n', '\u0000\u0001 x', 'Match\n', 'Include ~/x\nHost a b\n HostName=y']) {
  try { const c = parseSshConfig(t, "/x"); console.log("ok", c.aliases, c.compute("a")); } catch (e) { console.log("throw", (e as Error).message); }
}
