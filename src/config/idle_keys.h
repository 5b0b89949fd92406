// Keys set where they do nothing: each is named in one warning that says why, rather than
// ignored in silence (a key of a shared experiment file may be meant for another backend, so
// none of them is an error). Which launcher started the process decides the restart key.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace dptrain::config {

// `launcher`: what started this process ("none", "dptrain", "torchrun", "slurm", "mpirun"; see
// launch::RankInfo). The warnings, one per idle key, for the keys that differ from their
// defaults.
std::vector<std::string> idle_key_warnings(const Config& config, const std::string& launcher);

}  // namespace dptrain::config
