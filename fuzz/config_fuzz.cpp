// The experiment loader: the input's first line is a --set override ("key.path=value"), the rest
// an experiment file's text.
#include <string>

#include "config/load.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  std::vector<std::string> overrides;
  if (newline != std::string::npos && newline > 0) overrides.push_back(input.substr(0, newline));
  const std::string text = newline == std::string::npos ? input : input.substr(newline + 1);
  try {
    dptrain::config::resolve_config(text, "fuzz.json", overrides, {"lenet"});
  } catch (const dptrain::core::Error&) {
  }
  return 0;
}
