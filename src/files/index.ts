export { FILE_TOO_LARGE, openIfExists, readBoundedFile } from "./read-bounded.js";
export { type TrustAnchorOwner, trustAnchorProblems } from "./trust-anchor.js";
