export { FILE_TOO_LARGE, type FileBound, openIfExists, readBoundedFile } from "./read-bounded.js";
