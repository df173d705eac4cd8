import type { TestServer } from "./server.js";

/** Read a session through the server until `needle` appears in its output, or fail after `ms`. */
export async function recvUntil(s: TestServer, id: string, needle: string, ms = 10_000): Promise<string> {
  let text = "";
  const deadline = Date.now() + ms;
  while (!text.includes(needle)) {
    if (Date.now() > deadline) throw new Error(`no ${needle} in ${JSON.stringify(text)}`);
    const r = await s.call("session_recv", { session_id: id, timeout: 1 });
    if (r.text.startsWith("[ERROR")) throw new Error(r.text);
    text += r.text;
  }
  return text;
}
