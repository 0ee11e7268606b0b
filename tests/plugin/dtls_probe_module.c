/* A dlopen'd module with 40 bytes of thread-local data: its dynamic TLS block falls in the sanitizer
 * allocator's 48-byte size class, where the probe can steer where it lands (lsan_dtls_test.sh).
 * The block's address is returned so that no optimizer can drop the variable, and with it the
 * __tls_get_addr call. */
static _Thread_local char t_text[40];
__attribute__((visibility("default"))) char* dtls_probe_touch(char c);
char* dtls_probe_touch(char c) {
  t_text[0] = c;
  return t_text;
}
