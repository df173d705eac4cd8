/**
 * The Unicode space, line and paragraph separators above ASCII (general
 * categories Zs, Zl, Zp): U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029,
 * U+202F, U+205F, U+3000. JavaScript's `\s` and Python's `str.isspace()` both
 * count every one of them and differ only below U+00A0 and at U+FEFF, so the
 * audit redactor and the policy probe each add their own differences to this.
 */
export function isNonAsciiSeparator(code: number): boolean {
  if (code < 0xa0) return false;
  return (
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000
  );
}
