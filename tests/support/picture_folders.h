// Folders of real pictures in torchvision's ImageFolder layout, written by a test from the real
// Fashion-MNIST (real_data_dir()): ROOT/train/<class>/<NNNNN>.pgm and ROOT/test/<class>/..., each
// file the IDX image of that index, as a binary PGM.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace dptrain::testing {

struct PictureFolderOptions {
  // Class folders named "0_T-shirt_top" ... "9_Ankle boot", which sort in the IDX labels' order
  // (so that the folder's labels are the IDX files'); else the names alone ("T-shirt_top"), which
  // ImageFolder numbers otherwise ("Ankle boot" first).
  bool numbered_classes = true;
  int64_t rows = 28;  // each picture's first rows (fewer: a picture of another size)
};

// The first `train` and `test` images of the real data set under `root`.
void write_picture_folder(const std::filesystem::path& root, int64_t train, int64_t test,
                          const PictureFolderOptions& options = {});

// What a class folder of write_picture_folder is called for IDX label `label`.
std::string picture_class_folder(int64_t label, bool numbered);

}  // namespace dptrain::testing
