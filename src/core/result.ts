/**
 * The one shape of an expected outcome (ADR 0040): a step that can fail in a way its caller
 * decides on returns the value under `value` or the failure under `error`, never a field name of
 * its own. `E` stays precise: a union of tokens when the failure is a word, an object type when it
 * has several parts (a token and a message, a status and a message). What the caller cannot
 * decide on (a broken invariant, a failing disk) is still thrown.
 */
export type Result<T, E> = Ok<T> | Failed<E>;

interface Ok<T> {
  ok: true;
  value: T;
}

interface Failed<E> {
  ok: false;
  error: E;
}

export function ok<T>(value: T): Ok<T> {
  return { ok: true, value };
}

export function fail<E>(error: E): Failed<E> {
  return { ok: false, error };
}
