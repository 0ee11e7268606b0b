/* A shared library for a test plugin to depend on (test_plugin_needs_dep): copied away from it, the
 * plugin cannot be loaded ("cannot open shared object file"), as a CUDA module whose CUDA runtime is
 * not installed. */
__attribute__((visibility("default"))) int w4a8_test_stub_dep(int x) { return x; }
