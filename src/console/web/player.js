// Plays a recording, or follows a live session read-only, with the terminal player the relay serves.

import { followDriver } from "./follow.js";

const element = document.getElementById("player");
const status = document.getElementById("player-status");

function say(text, className) {
  status.textContent = text;
  status.className = className;
}

function start() {
  const lib = globalThis.AsciinemaPlayer;
  if (!lib) throw new Error("the terminal player did not load");
  const live = element.dataset.kind === "live";
  // Live output is shown as it arrives, and an end keeps the screen and says why the relay ended it;
  // a recording plays from its start, long pauses cut short.
  const source = live
    ? followDriver(element.dataset.src, {
        live() {
          element.dataset.state = "playing";
          say("Following: output appears as the session prints it.", "muted");
        },
        reconnecting() {
          say("The connection to the relay dropped; reconnecting…", "warn");
        },
        ended(reason) {
          element.dataset.state = "ended";
          say(`The follow has ended: ${reason}. The screen below is the session as it last was.`, "warn");
        },
      })
    : element.dataset.src;
  const player = lib.create(source, element, {
    autoPlay: true,
    fit: "width",
    idleTimeLimit: live ? undefined : 2,
  });
  if (live) {
    say("Connecting…", "muted");
    return;
  }
  say("Playing…", "muted");
  player.addEventListener("playing", () => {
    element.dataset.state = "playing";
  });
  player.addEventListener("ended", () => {
    element.dataset.state = "ended";
    say("Played to the end.", "muted");
  });
}

try {
  start();
} catch (err) {
  say(`The player cannot start: ${err instanceof Error ? err.message : String(err)}`, "bad");
}
