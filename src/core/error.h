// The one error type of dptrain: a code that picks the exit status, a message that says what was
// wrong and where (file, key, rank), and a hint that says what to do about it.
#pragma once

#include <stdexcept>
#include <string>

namespace dptrain::core {

enum class ErrorCode {
  kUsage,         // bad command line
  kConfig,        // bad experiment file or --set override
  kData,          // missing, truncated or corrupt data
  kIo,            // a file could not be read or written
  kDevice,        // a device that does not exist or cannot be used
  kNotSupported,  // a feature that a later version will add
  kRuntime,       // anything that went wrong while training
  kDistributed,   // rendezvous, a collective or another rank failed
  kInterrupted,   // Ctrl-C: exit status 130, as a shell reports a SIGINT
  kPreempted,     // SIGTERM/SIGUSR1: checkpoint written, exit status 75 (EX_TEMPFAIL: requeue)
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message, std::string hint = {});

  ErrorCode code() const { return code_; }
  const std::string& hint() const { return hint_; }

 private:
  ErrorCode code_;
  std::string hint_;
};

// An exception's message without LibTorch's backtrace (c10::Error's what() carries one).
std::string message_of(const std::exception& e);

// Distinct exit statuses so that a batch script can tell a bad config from a failed run.
int exit_status(ErrorCode code);
const char* code_name(ErrorCode code);

}  // namespace dptrain::core
