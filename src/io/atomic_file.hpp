// Outputs that never destroy the previous file: bytes go to a temporary file in the target's
// directory, which is fsynced and then renamed over the target (and the directory fsynced). On any
// failure before the rename (ENOSPC, EFBIG under `ulimit -f`, a signal) the old file is untouched
// and the temporary is removed. Every command that writes uses this. A temporary that has a name is
// `.NAME.w4a8tmp-SUFFIX` beside the target, NAME shortened so the whole fits the directory's NAME_MAX.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/result.hpp"

namespace w4a8::io {

// Process-wide set-up, once, before any output is created: SIGXFSZ is ignored (a write past
// `ulimit -f` then fails with EFBIG instead of killing the process), and SIGINT, SIGTERM, SIGHUP
// and SIGQUIT remove every live temporary file before the process dies of the signal. A SIGBUS from
// reading a mapped input that another process truncated ends the run as an I/O error naming the file
// (stderr, exit status 2), after the same cleanup.
void install_output_cleanup();
// With json, that read-fault report also goes to stdout as the JSON error object `--json` promises.
void set_read_fault_json(bool json);
// Whether fatal reports (the read fault, a kernel plugin's crash, exit() or overrun) also go to
// stdout as the JSON error object: set_read_fault_json's value. Async-signal-safe.
bool fatal_reports_json() noexcept;
// What a fatal signal does before the process dies: removes every live temporary, then the output
// directories this run made if they are empty. Async-signal-safe (for other fatal-error handlers).
void remove_live_outputs();

// Makes directory `path` for a run's outputs unless it exists (made = false then). Until
// forget_output_dir(), a cleanup signal that ends the process removes the directory it made after
// the temporaries inside it, if nothing else is left there (rmdir). Up to 4 nested ones (a directory
// and then one inside it), removed innermost first; further ones are not removed by a signal.
// @return 0, or mkdir's errno.
int make_output_dir(const std::string& path, bool& made);
void forget_output_dir();

// Whether `path` may be an output target (what AtomicFile::create checks first): nothing there yet,
// a regular file, or a character device; not a FIFO, socket or block device, and not the file this
// process's standard output or error is writing (judged where every link leads, /dev/stdout too).
// @return Ok, or IoWriteFailed naming path and why.
Status check_output_target(const std::string& path);

class AtomicFile {
 public:
  // Creates the temporary beside `path`. A symlink at `path` is followed: the file it points to is
  // replaced and the link kept; a link to a name that does not exist yet creates that name (in its
  // directory, which must exist), as `cp` does. An existing non-regular target is refused, except a character device
  // (/dev/null), which is written in place.
  // @return AtomicFile, or IoWriteFailed (naming path).
  static Result<AtomicFile> create(const std::string& path);

  AtomicFile(AtomicFile&&) noexcept;
  AtomicFile& operator=(AtomicFile&&) noexcept;
  ~AtomicFile();  // removes the temporary unless publish() succeeded

  // Appends bytes (partial writes and EINTR retried). @return Ok or IoWriteFailed (naming path()).
  Status write(std::span<const std::uint8_t> bytes);
  // fsync + close: the data is durable under the temporary name. @return Ok or IoWriteFailed.
  Status finish();
  // Renames the finished temporary over the target, then fsyncs the directory. @return Ok or IoWriteFailed.
  Status publish();
  // finish() then publish().
  Status commit();

  const std::string& path() const;  // the target, as given
  std::uint64_t bytes_written() const;

 private:
  struct State;
  explicit AtomicFile(std::unique_ptr<State> s);
  std::unique_ptr<State> s_;
};

// Writes a whole file atomically. @return Ok or IoWriteFailed.
Status write_file_atomic(const std::string& path, std::span<const std::uint8_t> bytes);

}  // namespace w4a8::io
