// The classes of a data set by label, for reports a person reads (evaluate's per-class accuracy
// and confusion matrix, predict's answers).
#pragma once

#include <string>
#include <vector>

namespace dptrain::data {

// Fashion-MNIST's ten names as torchvision and d2l spell them; MNIST's digits "0" to "9".
const std::vector<std::string>& class_names(const std::string& dataset);

}  // namespace dptrain::data
