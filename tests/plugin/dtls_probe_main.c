/* dtls_probe MODULE K: K mallocs of 48 bytes, then the first touch of MODULE's thread-local data,
 * whose block malloc places after them; exit runs LeakSanitizer's check (lsan_dtls_test.sh). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static void* g_kept[4096]; /* still referenced at exit: not leaks */

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: dtls_probe MODULE K\n");
    return 2;
  }
  const int k = atoi(argv[2]);
  for (int i = 0; i < k && i < 4096; ++i) g_kept[i] = malloc(48);
  void* h = dlopen(argv[1], RTLD_NOW);
  if (!h) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 2;
  }
  char* (*touch)(char) = (char* (*)(char))dlsym(h, "dtls_probe_touch");
  if (!touch) return 2;
  return touch(1)[0] == 1 ? 0 : 3;
}
