/* A dlopen'd module with 40 bytes of thread-local data: its dynamic TLS block takes a chunk of the
 * same size class as the probe's 48-byte mallocs (64 bytes with the sanitizer's header), so the
 * probe steers where it lands (lsan_dtls_test.sh).
 * The block's address is returned so that no optimizer can drop the variable, and with it the
 * __tls_get_addr call. */
static _Thread_local char t_text[40];
__attribute__((visibility("default"))) char* dtls_probe_touch(char c);
char* dtls_probe_touch(char c) {
  t_text[0] = c;
  return t_text;
}
