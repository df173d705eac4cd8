export { FILE_TOO_LARGE, type FileBound, readBoundedFile } from "./read-bounded.js";
