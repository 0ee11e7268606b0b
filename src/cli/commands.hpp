// Subcommands of the w4a8check CLI. Each registers itself on the CLI11 app (options as data: the
// same declarations print --help) and stores its exit status in the context:
// 0 accepted/success, 1 rejected (validation failed), 2 usage or I/O error.
#pragma once

#include <iosfwd>

namespace CLI { class App; }

namespace w4a8::cli {

struct CommandContext {
  std::ostream& out;
  std::ostream& err;
  int exit_code = 0;
};

void add_validate_command(CLI::App& app, CommandContext& ctx);
void add_gemm_command(CLI::App& app, CommandContext& ctx);
void add_quantize_command(CLI::App& app, CommandContext& ctx);
void add_audit_command(CLI::App& app, CommandContext& ctx);    // audit_command.cpp
void add_compare_command(CLI::App& app, CommandContext& ctx);  // compare_command.cpp

}  // namespace w4a8::cli
