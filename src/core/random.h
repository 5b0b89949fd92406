// Random bytes from the system's source (getrandom(2)), for secrets and nonces.
#pragma once

#include <cstddef>
#include <string>

namespace dptrain::core {

// A distributed error when the system has none to give.
std::string random_bytes(size_t count);

}  // namespace dptrain::core
