// What the console's pages share: the CSRF token of the page and a JSON POST that carries it.

/** The synchronizer token the server put in the page. */
export function csrfToken() {
  const meta = document.querySelector('meta[name="csrf-token"]');
  return meta ? meta.getAttribute("content") : "";
}

/** POST a JSON body to the console; resolves to the JSON answer, rejects with the server's message. */
export async function postJson(path, body) {
  const response = await fetch(path, {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/json", "x-csrf-token": csrfToken() },
    body: JSON.stringify(body ?? {}),
  });
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) {
    const message = data && typeof data.error === "string" ? data.error : `HTTP ${response.status}`;
    throw new Error(message);
  }
  return data;
}

/** The browser half of WebAuthn, loaded by the page from the relay (a UMD bundle). */
export function webauthn() {
  const lib = globalThis.SimpleWebAuthnBrowser;
  if (!lib) throw new Error("the WebAuthn library did not load");
  if (!lib.browserSupportsWebAuthn()) throw new Error("this browser does not support passkeys");
  return lib;
}
