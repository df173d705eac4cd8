/** Print `relay_shell: <message>` to stderr and exit: 2 for a refused configuration or usage, 1 for a failure. */
export function fail(message: string, code = 2): never {
  process.stderr.write(`relay_shell: ${message}\n`);
  process.exit(code);
}
