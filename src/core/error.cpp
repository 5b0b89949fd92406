#include "core/error.h"

#include <c10/util/Exception.h>

#include <utility>

namespace dptrain::core {

Error::Error(ErrorCode code, const std::string& message, std::string hint)
    : std::runtime_error(message), code_(code), hint_(std::move(hint)) {}

std::string message_of(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) {
    return c10_error->what_without_backtrace();
  }
  return e.what();
}

int exit_status(ErrorCode code) {
  switch (code) {
    case ErrorCode::kUsage:
      return 2;
    case ErrorCode::kConfig:
      return 3;
    case ErrorCode::kData:
      return 4;
    case ErrorCode::kIo:
      return 5;
    case ErrorCode::kDevice:
      return 6;
    case ErrorCode::kNotSupported:
      return 7;
    case ErrorCode::kRuntime:
      return 1;
    case ErrorCode::kDistributed:
      return 8;
    case ErrorCode::kInterrupted:
      return 130;
    case ErrorCode::kPreempted:
      return 75;
  }
  return 1;
}

const char* code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kUsage:
      return "usage error";
    case ErrorCode::kConfig:
      return "config error";
    case ErrorCode::kData:
      return "data error";
    case ErrorCode::kIo:
      return "I/O error";
    case ErrorCode::kDevice:
      return "device error";
    case ErrorCode::kNotSupported:
      return "not supported yet";
    case ErrorCode::kRuntime:
      return "runtime error";
    case ErrorCode::kDistributed:
      return "distributed error";
    case ErrorCode::kInterrupted:
      return "interrupted";
    case ErrorCode::kPreempted:
      return "preempted";
  }
  return "error";
}

}  // namespace dptrain::core
