// Times as the operator reads them: the browser's local time on the page, the UTC instant on hover.

const pad = (n, width = 2) => String(n).padStart(width, "0");

/** "YYYY-MM-DD HH:MM:SS" of `date` in local time, or in UTC with `utc`. */
function stamp(date, utc) {
  const [y, mo, d, h, mi, s] = utc
    ? [
        date.getUTCFullYear(),
        date.getUTCMonth() + 1,
        date.getUTCDate(),
        date.getUTCHours(),
        date.getUTCMinutes(),
        date.getUTCSeconds(),
      ]
    : [
        date.getFullYear(),
        date.getMonth() + 1,
        date.getDate(),
        date.getHours(),
        date.getMinutes(),
        date.getSeconds(),
      ];
  return `${y}-${pad(mo)}-${pad(d)} ${pad(h)}:${pad(mi)}:${pad(s)}`;
}

/** The local text of an instant (ISO 8601 or epoch ms) and its UTC title; the input as given when it is not a time. */
export function timeText(value) {
  const date = new Date(value);
  if (value === undefined || value === null || value === "" || Number.isNaN(date.getTime()))
    return { text: value === undefined || value === null ? "" : String(value), title: "" };
  return { text: stamp(date, false), title: `${stamp(date, true)} UTC` };
}

/** Set `node` to the local time of `value`, with the UTC time as its title (shown on hover). */
export function showTime(node, value) {
  const { text, title } = timeText(value);
  node.textContent = text;
  if (title !== "") {
    node.title = title;
    node.classList.add("time");
  }
  return node;
}

/** "HH:MM" of an instant in local time (the chart's axis). */
export function localMinute(ms) {
  const date = new Date(ms);
  return `${pad(date.getHours())}:${pad(date.getMinutes())}`;
}
