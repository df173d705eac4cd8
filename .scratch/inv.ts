import { parseInventory } from "../src/ssh/inventory.js";
for (const t of ['{"a": {"hostnmae": "x"}}', '{"a": {"port": 70000}}']) { try { parseInventory(t, "p"); } catch (e) { console.log(e.message); } }
