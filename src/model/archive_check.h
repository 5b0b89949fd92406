// Checks a PyTorch zip archive (torch.save's, or torch::save's checkpoints) before LibTorch reads
// it: LibTorch's reader checks no CRCs (its miniz is built without them) and trusts what it
// unpickles and compiles, so a damaged byte could reach its TorchScript importer (a crash) or make
// its unpickler reserve gigabytes. Found by fuzzing.
#pragma once

#include <string>

namespace dptrain::model {

// Every record's bytes match the CRC-32 the zip's central directory gives them, and every pickle
// in it (*.pkl) has operands that fit. Throws std::runtime_error (or c10::Error from LibTorch's
// zip reader) saying what is wrong.
void check_archive(const std::string& bytes);

}  // namespace dptrain::model
