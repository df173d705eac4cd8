/*
 * Compiled only into the sanitized launcher (scripts/build-launcher.mjs --sanitize). The server
 * starts the launcher with an empty environment, so ASAN_OPTIONS and UBSAN_OPTIONS cannot reach it:
 * its defaults are built in instead. Any report aborts it (SIGABRT), which the tests see as a
 * launcher killed by a signal, never as one of its documented exit statuses.
 *
 * Leaks are not checked: the launcher exits with commands and their buffers still listed (the
 * close deadline, a signal), which is by design, and LeakSanitizer's tracer at exit would run under
 * a child subreaper with commands' processes still being reaped.
 */
const char *__asan_default_options(void);
const char *__ubsan_default_options(void);

const char *__asan_default_options(void) {
  /* verify_asan_link_order=0: the tests preload a library that fails chosen libc calls. */
  return "abort_on_error=1:detect_leaks=0:verify_asan_link_order=0:print_summary=1";
}

const char *__ubsan_default_options(void) { return "halt_on_error=1:abort_on_error=1:print_stacktrace=1"; }
