// Plays a recording, or follows a live session read-only, with the terminal player the relay serves.

const element = document.getElementById("player");
const status = document.getElementById("player-status");

function start() {
  const lib = globalThis.AsciinemaPlayer;
  if (!lib) throw new Error("the terminal player did not load");
  const live = element.dataset.kind === "live";
  // Live output is shown as it arrives (no buffering); a recording plays from its start, long pauses cut short.
  const source = live
    ? { driver: "eventsource", url: element.dataset.src, bufferTime: 0 }
    : element.dataset.src;
  const player = lib.create(source, element, {
    autoPlay: true,
    fit: "width",
    idleTimeLimit: live ? undefined : 2,
  });
  status.textContent = live ? "Following: output appears as the session prints it." : "Playing…";
  player.addEventListener("playing", () => {
    element.dataset.state = "playing";
  });
  player.addEventListener("ended", () => {
    element.dataset.state = "ended";
    status.textContent = live
      ? "The live follow has ended (the session ended, or the page fell behind)."
      : "Played to the end.";
  });
}

try {
  start();
} catch (err) {
  status.textContent = `The player cannot start: ${err instanceof Error ? err.message : String(err)}`;
}
