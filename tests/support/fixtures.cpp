#include "support/fixtures.h"

#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "data/locate.h"

namespace dptrain::testing {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "dptrain-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<uint8_t> idx_bytes(const std::vector<uint32_t>& dims,
                               const std::vector<uint8_t>& values) {
  std::vector<uint8_t> bytes = {0, 0, 0x08, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<uint8_t>(d >> shift));
  }
  bytes.insert(bytes.end(), values.begin(), values.end());
  return bytes;
}

void write_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

void write_gzip(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  if (f == nullptr) throw std::runtime_error("gzopen failed");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

void write_tiny_dataset(const std::filesystem::path& dir, int64_t train, int64_t test) {
  std::filesystem::create_directories(dir);
  auto write_split = [&](const std::string& prefix, int64_t n) {
    std::vector<uint8_t> pixels(static_cast<size_t>(n * 28 * 28));
    std::vector<uint8_t> labels(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t p = 0; p < 28 * 28; ++p)
        pixels[i * 784 + p] = static_cast<uint8_t>((i + p) % 256);
      labels[i] = static_cast<uint8_t>(i % 10);
    }
    const auto count = static_cast<uint32_t>(n);
    write_gzip(dir / (prefix + "-images-idx3-ubyte.gz"), idx_bytes({count, 28, 28}, pixels));
    write_gzip(dir / (prefix + "-labels-idx1-ubyte.gz"), idx_bytes({count}, labels));
  };
  write_split("train", train);
  write_split("t10k", test);
}

std::filesystem::path real_data_dir() {
  return data::locate_data_dir("", "fashion-mnist");
}

ProcessResult run_dptrain(const std::string& args, const std::filesystem::path& cwd) {
  TempDir capture;
  std::string command;
  if (!cwd.empty()) command += "cd '" + cwd.string() + "' && ";
  command += std::string("'") + DPTRAIN_BINARY + "' " + args + " >'" + (capture / "out").string() +
             "' 2>'" + (capture / "err").string() + "'";
  const int raw = std::system(command.c_str());
  ProcessResult result;
  result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  auto slurp = [](const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  result.out = slurp(capture / "out");
  result.err = slurp(capture / "err");
  return result;
}

}  // namespace dptrain::testing
