// The wall clock and the machine's name, as a run's records state them.
#pragma once

#include <chrono>
#include <string>

namespace dptrain::core {

// "2026-11-24T09:05:03Z": UTC, ISO 8601, to the second.
std::string utc_iso8601(std::chrono::system_clock::time_point when);

// "20261124-100503": local time, to the second, as run and folder names carry it.
std::string local_timestamp();

// This machine's host name (gethostname), or "unknown" when it cannot be had.
std::string host_name();

}  // namespace dptrain::core
