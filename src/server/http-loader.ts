export type HttpEdgeModule = typeof import("./http-edge.js");

/** Load the streamable HTTP edge (and with it OAuth and /metrics) on demand. */
export function loadHttpEdge(): Promise<HttpEdgeModule> {
  return import("./http-edge.js");
}
