// A relay's consume of one approval, in a process of its own on the BUILT store, so a test can kill
// it in the middle of the transaction. Arguments: the database URL, the request id and its nonce.
import { openPgStore } from "../../dist/consent/pg-store.js";
import { cryptoIds, systemClock } from "../../dist/core/index.js";
import { openPgState } from "../../dist/state/index.js";

const [url, id, nonce] = process.argv.slice(2);
const state = openPgState(url, { instance: "doomed-relay", poolMax: 1, statementTimeoutMs: 30_000 });
if (!state.ok) throw new Error(state.error.detail);
const store = await openPgStore(state.value, { clock: systemClock, ids: cryptoIds });
if (!store.ok) throw new Error(store.error.detail);
process.stdout.write("consuming\n");
const result = await store.value.consume(id, nonce);
process.stdout.write(`${JSON.stringify(result)}\n`);
await state.value.close();
