#include "data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <string>

#include "core/error.h"

namespace dptrain::data {
namespace {

using core::Error;
using core::ErrorCode;

constexpr uint8_t kUnsignedByte = 0x08;
constexpr int kMaxDims = 4;
constexpr int64_t kMaxValues = int64_t{1} << 31;
constexpr size_t kChunk = size_t{16} << 20;

[[noreturn]] void corrupt(const std::filesystem::path& path, const std::string& what) {
  throw Error(ErrorCode::kData, path.string() + ": " + what,
              "the file is damaged or not an IDX file; fetch it again (Debian: apt-get install "
              "--reinstall dataset-fashion-mnist)");
}

// gzread reads gzip and, transparently, uncompressed files.
class GzFile {
 public:
  explicit GzFile(const std::filesystem::path& path) : path_(path) {
    file_ = gzopen(path.c_str(), "rb");
    if (file_ == nullptr) {
      throw Error(ErrorCode::kData, path.string() + ": cannot open", "check that the file exists");
    }
    gzbuffer(file_, 1 << 20);
  }
  ~GzFile() { gzclose(file_); }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;

  // Moves `count` bytes on: a seek in a plain file, inflating without keeping in a gzip one.
  void skip(int64_t count) {
    if (count > 0 && gzseek(file_, static_cast<z_off_t>(count), SEEK_CUR) < 0) {
      int code = 0;
      corrupt(path_, std::string("cannot read past its first values: ") + gzerror(file_, &code));
    }
  }

  // Reads up to `size` bytes; fewer only at the end of the data.
  size_t read(void* out, size_t size) {
    size_t done = 0;
    while (done < size) {
      const unsigned chunk = static_cast<unsigned>(std::min<size_t>(size - done, 1u << 30));
      const int n = gzread(file_, static_cast<char*>(out) + done, chunk);
      if (n < 0) {
        int code = 0;
        corrupt(path_, std::string("decompression failed: ") + gzerror(file_, &code));
      }
      if (n == 0) break;
      done += static_cast<size_t>(n);
    }
    // A gzip stream cut short reads as a short count plus an error flag.
    int code = Z_OK;
    const char* message = gzerror(file_, &code);
    if (code != Z_OK && code != Z_STREAM_END) {
      corrupt(path_, std::string("decompression failed: ") + message);
    }
    return done;
  }

 private:
  std::filesystem::path path_;
  gzFile file_ = nullptr;
};

// The header's dimensions, checked; their product is at most kMaxValues.
std::vector<int64_t> read_header(GzFile& file, const std::filesystem::path& path) {
  std::array<uint8_t, 4> magic{};
  if (file.read(magic.data(), magic.size()) != magic.size()) {
    corrupt(path, "too short to hold an IDX header");
  }
  if (magic[0] != 0 || magic[1] != 0) corrupt(path, "bad magic number (not an IDX file)");
  if (magic[2] != kUnsignedByte) {
    corrupt(path, "element type code " + std::to_string(magic[2]) +
                      " is not supported (only unsigned bytes, code 8)");
  }
  const int ndims = magic[3];
  if (ndims < 1 || ndims > kMaxDims) {
    corrupt(path, "bad number of dimensions " + std::to_string(ndims) + " (expected 1 to 4)");
  }
  std::vector<int64_t> dims;
  int64_t count = 1;
  for (int i = 0; i < ndims; ++i) {
    std::array<uint8_t, 4> be{};
    if (file.read(be.data(), be.size()) != be.size()) corrupt(path, "truncated IDX header");
    const int64_t dim = (int64_t{be[0]} << 24) | (be[1] << 16) | (be[2] << 8) | be[3];
    if (dim <= 0) corrupt(path, "dimension " + std::to_string(i) + " is zero");
    count *= dim;
    if (count > kMaxValues) corrupt(path, "dimensions describe an implausibly large array");
    dims.push_back(dim);
  }
  return dims;
}

// `count` values appended to `values` as they arrive, a chunk at a time: a header that promises
// 2 GB over a file that holds nothing costs one chunk, not 2 GB of zeros. How many came.
size_t read_values(GzFile& file, std::vector<uint8_t>& values, size_t count) {
  const size_t start = values.size();
  size_t got = 0;
  while (got < count) {
    const size_t chunk = std::min(count - got, kChunk);
    values.resize(start + got + chunk);
    const size_t n = file.read(values.data() + start + got, chunk);
    got += n;
    if (n < chunk) break;
  }
  values.resize(start + got);
  return got;
}

[[noreturn]] void truncated(const std::filesystem::path& path, int64_t got, int64_t promised) {
  corrupt(path, "truncated: holds " + std::to_string(got) + " values, its header promises " +
                    std::to_string(promised));
}

}  // namespace

IdxArray read_idx(const std::filesystem::path& path) {
  GzFile file(path);
  IdxArray array;
  array.dims = read_header(file, path);
  const auto count = static_cast<size_t>(std::accumulate(array.dims.begin(), array.dims.end(),
                                                         int64_t{1}, std::multiplies<int64_t>()));
  const size_t got = read_values(file, array.values, count);
  if (got != count) truncated(path, static_cast<int64_t>(got), static_cast<int64_t>(count));
  uint8_t extra = 0;
  if (file.read(&extra, 1) != 0) corrupt(path, "has data beyond what its header describes");
  return array;
}

IdxArray read_idx_items(const std::filesystem::path& path, int64_t first, int64_t count) {
  GzFile file(path);
  IdxArray array;
  array.dims = read_header(file, path);
  const int64_t item = std::accumulate(array.dims.begin() + 1, array.dims.end(), int64_t{1},
                                       std::multiplies<int64_t>());
  const int64_t end = std::min(first + count, array.dims[0]);
  file.skip(first * item);  // read past, not kept
  const auto wanted = static_cast<size_t>(std::max<int64_t>(end - first, 0) * item);
  const size_t got = read_values(file, array.values, wanted);
  if (got != wanted) {
    truncated(path, first * item + static_cast<int64_t>(got), array.dims[0] * item);
  }
  return array;
}

}  // namespace dptrain::data
