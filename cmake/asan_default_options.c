/* Linked into every executable of a W4A8_SANITIZE build: options the sanitizer runtime starts with
 * (ASAN_OPTIONS from the environment still overrides each of them).
 *
 * intercept_tls_get_addr=0: the __tls_get_addr interceptor of clang up to 16 (seen with clang 14;
 * LLVM fixed it for 17, and GCC's copy of the runtime follows LLVM's) takes a dynamic TLS block
 * that starts 16 bytes into a page for a glibc < 2.25 header and reads the two words before it.
 * The kernel plugins' thread_local error text is such a block (they are dlopen'd), so whenever
 * malloc happened to put it there LeakSanitizer's tracer died at exit with "Tracer caught signal
 * 11" although nothing leaked (tests/plugin/lsan_dtls_test.sh reproduces it).
 * Without the interceptor LeakSanitizer has fewer roots, so it can only report more, never less. */
const char* __asan_default_options(void);
const char* __asan_default_options(void) { return "intercept_tls_get_addr=0"; }
