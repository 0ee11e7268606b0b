// w4a8check: command-line entry point. Subcommands live in their own files (commands.hpp).
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "w4a8check: validate Comfy asym_w4a8_int8 safetensors checkpoints exactly as sglang does\n"
      "(plus --strict kernel checks), and run the W4A8 GEMM reference on their layers.",
      "w4a8check"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "w4a8check 0.1.0");
  w4a8::cli::CommandContext ctx{std::cout, std::cerr};
  w4a8::cli::add_validate_command(app, ctx);
#ifdef W4A8_CLI_HAVE_GEMM
  w4a8::cli::add_gemm_command(app, ctx);
  w4a8::cli::add_quantize_command(app, ctx);
#endif
#ifdef W4A8_CLI_HAVE_AUDIT
  w4a8::cli::add_audit_command(app, ctx);
  w4a8::cli::add_compare_command(app, ctx);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help / the usage error
    return rc == 0 ? 0 : 2;      // usage errors exit 2, as documented
  }
  return ctx.exit_code;
}
