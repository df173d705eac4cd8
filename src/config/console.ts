import type { Settings } from "./types.js";

/**
 * The origin the operator console is reached under, and passkeys are bound
 * to: RELAY_SHELL_CONSOLE_ORIGIN, or localhost on the port the console is
 * served on (the HTTP listener's, or its own loopback port under stdio).
 */
export function consoleOrigin(
  settings: Pick<Settings, "consoleOrigin" | "transport" | "httpPort" | "consolePort">,
): string {
  if (settings.consoleOrigin !== "") return settings.consoleOrigin;
  const port = settings.transport === "http" ? settings.httpPort : settings.consolePort;
  return `http://localhost:${port}`;
}
