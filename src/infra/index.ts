export type { Principal, Profile, ProfileSet } from "./types.js";
