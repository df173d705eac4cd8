/**
 * A read-only MCP resource, defined in tools/ and served by server/. Reads
 * are not policy-gated (they reveal what a Tier-0 tool does) but every read
 * goes through `Relay.recordRead`, so it is audited and bounded like a call.
 */
export interface ResourceDef {
  name: string;
  description: string;
  mimeType: string;
  /** A fixed URI, or an RFC 6570 template such as `relay-shell://inventory/{host}`. */
  uri: string;
  template: boolean;
  /** Fixed audit label (`resource:<name>`): user input goes into args, never the label. */
  auditLabel: string;
  auditArgs(vars: Record<string, string>): Record<string, unknown>;
  read(vars: Record<string, string>): string;
}
