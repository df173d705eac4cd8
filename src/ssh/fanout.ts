/**
 * Run `work` over `items` with at most `limit` in flight, keeping results in
 * input order. `work` must not reject (fan-out turns failures into per-host
 * results); `onDone` sees each result as it lands, for progress reports.
 */
export async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T, index: number) => Promise<R>,
  onDone?: (result: R, index: number, done: number) => void,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let done = 0;
  const lane = async () => {
    while (next < items.length) {
      const index = next++;
      const result = await work(items[index] as T, index);
      results[index] = result;
      done++;
      onDone?.(result, index, done);
    }
  };
  const lanes = Math.max(1, Math.min(limit, items.length));
  await Promise.all(Array.from({ length: lanes }, lane));
  return results;
}
