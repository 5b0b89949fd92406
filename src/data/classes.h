// The classes of a data set by label, for reports a person reads (evaluate's per-class accuracy
// and confusion matrix, predict's answers).
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace dptrain::data {

// Fashion-MNIST's ten names as torchvision and d2l spell them; MNIST's digits "0" to "9".
const std::vector<std::string>& class_names(const std::string& dataset);

// A run's classes: those its config records (data.classes), else the IDX data set's. A config
// error for a folder whose config does not name them (an experiment file, not a run's).
std::vector<std::string> class_names_of(const config::DataConfig& data);

}  // namespace dptrain::data
