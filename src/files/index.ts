export { FILE_TOO_LARGE, openIfExists, readBoundedFile } from "./read-bounded.js";
export { trustAnchorProblems } from "./trust-anchor.js";
