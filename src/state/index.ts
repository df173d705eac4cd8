export type { StateResult } from "./errors.js";
export { migrate } from "./migrations.js";
export { openPgState, type PgState, type PgStateOptions } from "./pg.js";
export { createTerminalDirectory } from "./terminals.js";
