#include "support/torch_archives.h"

#include <caffe2/serialize/inline_container.h>
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <stdexcept>

#include "core/fs.h"
#include "serialize/little_endian.h"
#include "serialize/zip_reader.h"
#include "support/fixtures.h"

namespace dptrain::testing {
namespace {

using serialize::append_le;

// The CRC-32 of `count` zero bytes, combined a mebibyte at a time rather than computed over them.
uint32_t crc_of_zeros(uint64_t count) {
  const std::string mebibyte(size_t{1} << 20, '\0');
  const uLong block =
      crc32(0L, reinterpret_cast<const Bytef*>(mebibyte.data()), static_cast<uInt>(1u << 20));
  uLong crc = crc32(0L, Z_NULL, 0);
  uint64_t done = 0;
  for (; count - done >= mebibyte.size(); done += mebibyte.size()) {
    crc = crc32_combine(crc, block, static_cast<z_off_t>(mebibyte.size()));
  }
  return static_cast<uint32_t>(
      crc32(crc, reinterpret_cast<const Bytef*>(mebibyte.data()), static_cast<uInt>(count - done)));
}

}  // namespace

std::string binunicode(const std::string& text) {
  std::string out = "X";
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((text.size() >> (8 * i)) & 0xff));
  return out + text;
}

std::string pickle_stream(const std::string& body) {
  return std::string("\x80\x02", 2) + body + ".";
}

void write_stored_zip(const std::filesystem::path& path, const std::vector<StoredRecord>& records) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot write " + path.string());
  uint64_t at = 0;
  const auto put = [&](const std::string& bytes) {
    if (::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(at)) !=
        static_cast<ssize_t>(bytes.size())) {
      throw std::runtime_error("cannot write " + path.string());
    }
    at += bytes.size();
  };
  std::string directory;
  for (const StoredRecord& r : records) {
    const std::string name = "archive/" + r.name;
    const uint64_t size = r.zeros != 0 ? r.zeros : r.bytes.size();
    const uint32_t crc =
        r.zeros != 0
            ? crc_of_zeros(r.zeros)
            : static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(r.bytes.data()),
                                          static_cast<uInt>(r.bytes.size())));
    const uint64_t offset = at;
    std::string header = "PK\x03\x04";
    append_le(header, 20, 2);  // version needed
    append_le(header, 0, 2);   // flags
    append_le(header, 0, 2);   // stored
    append_le(header, 0, 4);   // time and date
    append_le(header, crc, 4);
    append_le(header, size, 4);
    append_le(header, size, 4);
    append_le(header, name.size(), 2);
    append_le(header, 0, 2);  // no extra field
    put(header + name);
    if (r.zeros != 0) {
      at += r.zeros;  // a hole
    } else {
      put(r.bytes);
    }
    directory += "PK\x01\x02";
    append_le(directory, 20, 2);  // version made by
    directory += header.substr(4, 26);
    append_le(directory, 0, 2);  // comment
    append_le(directory, 0, 2);  // disk
    append_le(directory, 0, 2);  // internal attributes
    append_le(directory, 0, 4);  // external attributes
    append_le(directory, offset, 4);
    directory += name;
  }
  const uint64_t directory_at = at;
  put(directory);
  std::string end = "PK\x05\x06";
  append_le(end, 0, 4);  // disks
  append_le(end, records.size(), 2);
  append_le(end, records.size(), 2);
  append_le(end, directory.size(), 4);
  append_le(end, directory_at, 4);
  append_le(end, 0, 2);  // no comment
  put(end);
  ::close(fd);
}

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
  const std::string out = edit_data_pkl(read_bytes(from), [&](std::string& bytes) {
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
