// SLURM's node and tasks-per-node lists, as the rendezvous reads them from the environment.
#include <string>

#include "core/error.h"
#include "launch/nodelist.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string list(reinterpret_cast<const char*>(data), size);
  try {
    dptrain::launch::expand_nodelist(list);
  } catch (const dptrain::core::Error&) {
  }
  try {
    dptrain::launch::expand_tasks_per_node(list);
  } catch (const dptrain::core::Error&) {
  }
  return 0;
}
