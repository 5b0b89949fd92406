#include "support/torch_archives.h"

#include <caffe2/serialize/inline_container.h>

#include "core/fs.h"
#include "serialize/zip_reader.h"

namespace dptrain::testing {
namespace {

// A pickled text as dptrain's writer puts it: BINUNICODE, 4 bytes of length, the text.
std::string binunicode(const std::string& text) {
  std::string out = "X";
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((text.size() >> (8 * i)) & 0xff));
  return out + text;
}

}  // namespace

std::string edit_data_pkl(const std::string& archive,
                          const std::function<void(std::string& pickle)>& edit) {
  const serialize::ZipReader reader(archive);
  std::string out;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t size) {
    out.append(static_cast<const char*>(data), size);
    return size;
  });
  for (const std::string& name : reader.names()) {
    if (name == "version") continue;  // the writer adds its own
    std::string bytes(reader.record(name));
    if (name == "data.pkl") edit(bytes);
    writer.writeRecord(name, bytes.data(), bytes.size());
  }
  writer.writeEndOfFile();
  return out;
}

int relocate_storages(const std::filesystem::path& from, const std::filesystem::path& to,
                      const std::string& location) {
  const std::string storage = binunicode("storage");
  const std::string cpu = binunicode("cpu");
  const std::string moved = binunicode(location);
  int changed = 0;
  // Each storage's persistent id: ('storage', torch.XStorage, key, location, numel). Only the
  // location after each 'storage' changes, not other texts that read "cpu".
  const std::string out = edit_data_pkl(core::read_text_file(from), [&](std::string& bytes) {
    for (size_t at = bytes.find(storage); at != std::string::npos; at = bytes.find(storage, at)) {
      const size_t where = bytes.find(cpu, at);
      if (where == std::string::npos) break;
      bytes.replace(where, cpu.size(), moved);
      at = where + moved.size();
      ++changed;
    }
  });
  core::write_file_atomic(to, out);
  return changed;
}

}  // namespace dptrain::testing
