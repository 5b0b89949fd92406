// The model file reader on arbitrary bytes, as `evaluate`, `predict` and `--init-from` use it: a
// state_dict (a zip archive with a pickle this project reads itself) or else a checkpoint.
#include "core/error.h"
#include "fuzz_input.h"
#include "model/lenet.h"
#include "model/state_dict.h"
#include "train/model_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<dptrain::model::StateSpec> specs =
      dptrain::model::state_specs(*dptrain::model::LeNet());
  try {
    dptrain::train::read_model_file(dptrain::fuzz::input_file(data, size), specs);
  } catch (const dptrain::core::Error&) {
  }
  return 0;
}
