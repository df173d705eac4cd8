import { sshBench } from "../bench/ssh.bench.js";
for (const f of await sshBench.run()) console.log(f);
