import { postJson, webauthn } from "./request.js";

const form = document.getElementById("enrol");
const code = document.getElementById("code");
const status = document.getElementById("status");

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const button = form.querySelector("button");
  button.disabled = true;
  status.textContent = "Waiting for your passkey...";
  try {
    const optionsJSON = await postJson("/console/enrol/options", { code: code.value.trim() });
    const response = await webauthn().startRegistration({ optionsJSON });
    const done = await postJson("/console/enrol/verify", { code: code.value.trim(), response });
    status.textContent = `Enrolled passkey "${done.name}". You can close this page.`;
  } catch (err) {
    status.textContent = `Enrolment failed: ${err instanceof Error ? err.message : String(err)}`;
    button.disabled = false;
  }
});
