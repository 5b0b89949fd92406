// The manual page (dptrain.1) and bash completion, made from the command line's own definition
// and the config schema, so that neither can drift from what dptrain accepts. The build writes
// both (`dptrain --man-page`, `dptrain --bash-completion`) and `cmake --install` installs them.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace dptrain::cli {

std::string man_page(const CLI::App& app);
std::string bash_completion(const CLI::App& app);

}  // namespace dptrain::cli
