// The terminal player's driver for a live follow: the relay's event stream, drawn as it arrives.
//
// The player's own event-source driver drops the reason the relay gives when it ends a stream and
// covers the terminal with its own "stream ended" notice. This one hands the reason to the page
// and leaves the screen as it last was, so the operator can still read it.

/** A timing snapshot in the player's shape: `time` seconds into the stream, running at `rate`. */
function timing(time, rate) {
  return { time, rate, sampledAt: performance.timeOrigin + performance.now() };
}

/**
 * A driver (the player's `create(driver, …)` takes a function) following `url`. `events` is told
 * when the follow is live (`live()`), when it reconnects (`reconnecting()`) and when it ended, with
 * the reason the relay gave, or the one its refusal gave (`ended(reason)`).
 */
export function followDriver(url, events) {
  return ({ dispatch }) => {
    let source = null;
    let startedAt = null;
    let stopped = false;
    /** Seconds into the stream when it ended: the clock stands still from then on. */
    let endedAt = null;
    const elapsed = () => (startedAt === null ? null : (performance.now() - startedAt) / 1000);

    function finish(reason) {
      if (stopped) return;
      stopped = true;
      endedAt = elapsed();
      source?.close();
      // Paused, not ended: the player keeps the screen and puts nothing over it.
      dispatch("pause");
      dispatch("timing", timing(endedAt, 0));
      events.ended(reason);
    }

    /** Why the relay would not take the stream back: its refusal's message, read once. */
    async function refusal() {
      try {
        const answer = await fetch(url, {
          credentials: "same-origin",
          headers: { accept: "text/event-stream" },
        });
        if (answer.ok) {
          answer.body?.cancel();
          return "the connection to the relay was lost; reload the page to follow again";
        }
        const data = await answer.json().catch(() => null);
        return data && typeof data.error === "string" ? data.error : `HTTP ${answer.status}`;
      } catch (err) {
        return `the relay cannot be reached (${err instanceof Error ? err.message : String(err)})`;
      }
    }

    function onMessage(event) {
      const data = JSON.parse(event.data);
      if (Array.isArray(data)) {
        const [, code, payload] = data;
        if (code === "o") dispatch("output", payload);
        else if (code === "r") {
          const [cols, rows] = String(payload).split("x").map(Number);
          if (cols > 0 && rows > 0) dispatch("resize", { cols, rows });
        }
      } else if (typeof data.cols === "number" && typeof data.rows === "number") {
        // The screen so far: the stream starts (and, after a reconnection, starts again) with it.
        startedAt = performance.now();
        dispatch("reset", { size: { cols: data.cols, rows: data.rows }, init: data.init || undefined });
        dispatch("playing");
        dispatch("timing", timing(0, 1));
        events.live();
      }
    }

    return {
      play() {
        if (source !== null) return true;
        dispatch("play");
        source = new EventSource(url);
        source.addEventListener("message", onMessage);
        source.addEventListener("done", (event) => {
          let reason = "the relay ended the follow";
          try {
            const data = JSON.parse(event.data);
            if (data && typeof data.reason === "string" && data.reason !== "") reason = data.reason;
          } catch {}
          finish(reason);
        });
        source.addEventListener("error", () => {
          if (stopped) return;
          if (source.readyState === EventSource.CLOSED)
            refusal()
              .then(finish)
              .catch(() => finish("the connection to the relay was lost"));
          else events.reconnecting();
        });
        return true;
      },
      stop() {
        if (!stopped) endedAt = elapsed();
        stopped = true;
        source?.close();
      },
      getTiming: () => (stopped ? timing(endedAt, 0) : timing(elapsed(), startedAt === null ? 0 : 1)),
    };
  };
}
