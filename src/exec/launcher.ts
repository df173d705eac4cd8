/**
 * Entry point of the process launcher, forked by createLauncherRunner. It must
 * stay small: every byte of its resident memory is copied into page tables on
 * each fork, which is the cost this process exists to keep low. So it loads
 * only node builtins and the in-process runner, never the server's modules.
 */
import { serveLauncher } from "./launcher-host.js";

serveLauncher(process);
