export { openLocalPty } from "./local-pty.js";
export { createSessionRegistry } from "./registry.js";
export { resolveSignalName } from "./signals.js";
export { TERMINAL_ID } from "./terminal-id.js";
export { assembleLine, type LineAssembly, showLine } from "./terminal-line.js";
export { clampTerminalSize } from "./terminal-size.js";
export type {
  DescendantReaper,
  SessionRegistry,
  SessionRegistryConfig,
  SessionTransport,
  TransportEvents,
} from "./types.js";
