#include "core/random.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace dptrain::core {

std::string random_bytes(size_t count) {
  std::string bytes(count, '\0');
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::getrandom(bytes.data() + done, bytes.size() - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw Error(ErrorCode::kDistributed, std::string("no random bytes: ") + std::strerror(errno),
                  "this Linux lacks getrandom(2)");
    }
    done += static_cast<size_t>(n);
  }
  return bytes;
}

}  // namespace dptrain::core
