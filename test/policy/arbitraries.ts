import fc from "fast-check";

/** Characters that matter to a shell, so random strings hit quoting, operators and expansions. */
const SHELL_CHARS = [..."abcdefrmsuhoiklnptwxyz -_/.'\"`\\$(){}[]<>|&;!#*?=~:\n\t\0é😀"];

/** Random text made of the characters a shell gives meaning to. */
export const shellish = fc.string({ unit: fc.constantFrom(...SHELL_CHARS), maxLength: 60 });
