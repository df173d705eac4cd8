import { postJson, webauthn } from "./request.js";

const button = document.getElementById("login");
const status = document.getElementById("status");

button.addEventListener("click", async () => {
  button.disabled = true;
  status.textContent = "Waiting for your passkey...";
  try {
    const optionsJSON = await postJson("/console/login/options");
    const response = await webauthn().startAuthentication({ optionsJSON });
    const done = await postJson("/console/login/verify", response);
    status.textContent = "Logged in.";
    window.location.assign(done.next);
  } catch (err) {
    status.textContent = `Login failed: ${err instanceof Error ? err.message : String(err)}`;
    button.disabled = false;
  }
});
