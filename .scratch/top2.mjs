import { readFileSync, readdirSync } from "node:fs";
for (const f of readdirSync("/tmp/prof")) {
const p = JSON.parse(readFileSync("/tmp/prof/" + f, "utf8"));
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map(); for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const dt = p.timeDeltas; const stacks = new Map();
for (let i = 0; i < p.samples.length; i++) { let n = byId.get(p.samples[i]); if (n.callFrame.functionName !== "writeBuffer") continue; const chain = []; let id = n.id; for (let k = 0; k < 8 && id; k++) { const x = byId.get(id); chain.push(`${x.callFrame.functionName}@${x.callFrame.url.split("/").slice(-2).join("/")}:${x.callFrame.lineNumber}`); id = parent.get(id); } const key = chain.join(" < "); stacks.set(key, (stacks.get(key) ?? 0) + dt[i]); }
console.log(f); for (const [k, v] of [...stacks.entries()].sort((a, b) => b[1] - a[1]).slice(0, 5)) console.log((v / 1000).toFixed(1), k);
}
