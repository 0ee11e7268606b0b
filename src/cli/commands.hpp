// Subcommands of the w4a8check CLI. Each registers itself on the CLI11 app (options as data: the
// same declarations print --help) and reports every outcome through the one Reporter (report.hpp),
// which also holds the exit status.
#pragma once

namespace CLI { class App; }

namespace w4a8::cli {

class Reporter;

void add_validate_command(CLI::App& app, Reporter& report);
void add_versions_command(CLI::App& app, Reporter& report);
void add_gemm_command(CLI::App& app, Reporter& report);
void add_quantize_command(CLI::App& app, Reporter& report);
void add_audit_command(CLI::App& app, Reporter& report);    // audit_command.cpp
void add_compare_command(CLI::App& app, Reporter& report);  // compare_command.cpp

}  // namespace w4a8::cli
