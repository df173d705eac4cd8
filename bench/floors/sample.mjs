// The one sampling loop of the floors: warm up, time `sequential` runs one after another, then run
// `total` with `inFlight` at once and give the rate. Imports nothing, so a floor stays lean.
export async function sample(once, { sequential, total, inFlight, warmup }) {
  for (let i = 0; i < warmup; i++) await once();
  const times = [];
  for (let i = 0; i < sequential; i++) {
    const start = performance.now();
    await once();
    times.push(performance.now() - start);
  }
  let next = 0;
  const lane = async () => {
    while (next < total) {
      next++;
      await once();
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: inFlight }, lane));
  return { times, rate: total / ((performance.now() - start) / 1000) };
}
