import { consentId, createConsentWorld } from "./test/helpers/consent.js";

const world = createConsentWorld();
const relay = await world.startRelay();
const call = { command: "echo dG91Y2ggZ3JlZXRpbmcudHh0Cg== | base64 -d | sh", cwd: world.work };
const print = (s: string) => process.stdout.write(`${s}\n`);
print(`$ # the client calls shell_exec ${JSON.stringify(call)}`);
const first = await relay.call("shell_exec", call);
print(first.text);
const id = consentId(first.text);
print("");
print("$ relay-shell consent list");
print(world.cli(["list"]).stdout.trimEnd());
print("");
print(`$ relay-shell consent show ${id} --payload`);
print(world.cli(["show", id, "--payload"]).stdout.trimEnd());
print("");
print(`$ relay-shell consent approve ${id} --key ~/.ssh/id_ed25519 --yes`);
const a = world.cli(["approve", id, "--key", world.operatorKey, "--yes"]);
print((a.stderr + a.stdout).trimEnd());
print("");
print("$ # the client re-issues the same call");
print((await relay.call("shell_exec", call)).text);
print("$ # and once more");
print((await relay.call("shell_exec", call)).text.split("\n")[0] ?? "");
print("");
print("$ # the audit records of the exchange (args.consent)");
for (const r of world.records()) {
  print(JSON.stringify({ tool: r.tool, tier: r.tier, denied: r.denied, action: r.action, consent: (r.args as any).consent }));
}
await relay.close();
print(`\n# paths: ${world.root}`);
world.cleanup();
