// Files made to exhaust memory or to reach a decoder's weak spots: each is refused within 100 MB
// of address space (support/memory.h), with an error that says why, instead of allocating what it
// claims.
#include <zlib.h>

#include <optional>

#include <caffe2/serialize/inline_container.h>

#include "config/json_text.h"
#include "config/load.h"
#include "core/error.h"
#include "core/fs.h"
#include "data/idx.h"
#include "data/image_file.h"
#include "model/lenet.h"
#include "model/state_dict.h"
#include "serialize/pickle.h"
#include "serialize/torch_file.h"
#include "support/catch.h"
#include "support/fixtures.h"
#include "support/memory.h"
#include "support/skip.h"
#include "support/torch_archives.h"
#include "train/model_file.h"

using namespace dptrain;
using testing::binunicode;
using testing::pickle_stream;
using testing::run_within_memory;
using testing::TempDir;

namespace {

constexpr long kHostileFileCeilingMb = 100;

const std::filesystem::path kFixtures =
    std::filesystem::path(DPTRAIN_SOURCE_DIR) / "tests/model/data";

std::string big_endian(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

// A PNG chunk: length, type, data, CRC-32 of type and data.
std::string chunk(const std::string& type, const std::string& data) {
  const std::string body = type + data;
  const uLong crc =
      crc32(0L, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()));
  return big_endian(static_cast<uint32_t>(data.size())) + body +
         big_endian(static_cast<uint32_t>(crc));
}

// A PNG of an 8-bit grey image of this size whose image data are `idat` (zlib), as a decoder sees
// it before it decodes: enough for a header's claims.
std::string png(uint32_t width, uint32_t height, const std::string& idat) {
  // 8-bit grey, deflate, no filter, no interlace.
  const std::string header =
      big_endian(width) + big_endian(height) + std::string("\x08\0\0\0\0", 5);
  return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", header) + chunk("IDAT", idat) +
         chunk("IEND", "");
}

// A PNG of this size, bit depth and colour type whose chunks are `chunks` after its IHDR.
std::string png_of(uint32_t width, uint32_t height, uint8_t depth, uint8_t color,
                   const std::string& chunks) {
  const std::string header = big_endian(width) + big_endian(height) +
                             std::string{static_cast<char>(depth), static_cast<char>(color)} +
                             std::string("\0\0\0", 3);
  return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", header) + chunks + chunk("IEND", "");
}

// `size` zero bytes, deflated a mebibyte at a time (so that a gigabyte costs no gigabyte here).
std::string zlib_of_zeros_streamed(uint64_t size) {
  z_stream z{};
  deflateInit(&z, 9);
  const std::string zeros(size_t{1} << 20, '\0');
  std::string out;
  char buffer[1 << 16];
  for (uint64_t left = size;;) {
    const size_t now = static_cast<size_t>(std::min<uint64_t>(left, zeros.size()));
    left -= now;
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(zeros.data()));
    z.avail_in = static_cast<uInt>(now);
    const int flush = left == 0 ? Z_FINISH : Z_NO_FLUSH;
    int status = Z_OK;
    do {
      z.next_out = reinterpret_cast<Bytef*>(buffer);
      z.avail_out = sizeof buffer;
      status = deflate(&z, flush);
      out.append(buffer, sizeof buffer - z.avail_out);
    } while (z.avail_out == 0);
    if (left == 0 && status == Z_STREAM_END) break;
  }
  deflateEnd(&z);
  return out;
}

// `size` zero bytes, deflated: 1 KB of it holds about a megabyte.
std::string zlib_of_zeros(size_t size) {
  const std::string zeros(size, '\0');
  uLongf length = compressBound(static_cast<uLong>(size));
  std::string out(length, '\0');
  compress2(reinterpret_cast<Bytef*>(out.data()), &length,
            reinterpret_cast<const Bytef*>(zeros.data()), static_cast<uLong>(size), 9);
  out.resize(length);
  return out;
}

serialize::ValuePtr read_with_storage(const std::string& pickle, int64_t numel) {
  return serialize::read_pickle(pickle, [numel](const std::string&, at::ScalarType dtype, int64_t) {
    return torch::zeros({numel}, torch::TensorOptions().dtype(dtype));
  });
}

// _rebuild_tensor_v2 of a 4-float storage with this size and stride (LONG1 operands, 8 bytes).
std::string rebuild(const std::vector<int64_t>& size, const std::vector<int64_t>& stride) {
  const auto long1 = [](int64_t v) {
    std::string out = "\x8a\x08";
    for (int i = 0; i < 8; ++i)
      out.push_back(static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff));
    return out;
  };
  std::string s = "ctorch._utils\n_rebuild_tensor_v2\n(";
  s += "(X" + std::string("\x07\0\0\0", 4) + "storagectorch\nFloatStorage\nX" +
       std::string("\x01\0\0\0", 4) + "0X" + std::string("\x03\0\0\0", 4) + "cpuK\x04tQ";
  s += std::string("K\0(", 3);
  for (int64_t v : size) s += long1(v);
  s += "t(";
  for (int64_t v : stride) s += long1(v);
  s += "ttR";
  return pickle_stream(s);
}

}  // namespace

TEST_CASE("the memory ceilings of these tests stop an allocation past them", "[serialize]") {
  CHECK(testing::run_within_resident_memory([] { std::vector<char> block(size_t{300} << 20, 'x'); },
                                            kHostileFileCeilingMb)
            .rfind("used 3", 0) == 0);
  CHECK(testing::run_within_resident_memory([] { std::vector<char> block(size_t{10} << 20, 'x'); },
                                            kHostileFileCeilingMb) == "returned");
  if (!testing::memory_ceiling_enforced()) {
    DPTRAIN_SKIP("AddressSanitizer's reserved address space leaves no room for a ceiling");
  }
  CHECK(run_within_memory([] { std::vector<char> block(size_t{1} << 30, 'x'); },
                          kHostileFileCeilingMb) == "out of memory");
  CHECK(run_within_memory([] { std::vector<char> block(size_t{10} << 20, 'x'); },
                          kHostileFileCeilingMb) == "returned");
}

TEST_CASE(
    "a state_dict whose tensor repeats one float 2^31 times stays a view and is refused by its "
    "shape, within 100 MB",
    "[serialize][security]") {
  // The file: evaluate --model asked for 8 GB when each tensor was copied out on reading.
  const std::string bytes = core::read_text_file(kFixtures / "expanded_view.pt");
  const auto specs = model::state_specs(*model::LeNet());
  const std::string outcome = run_within_memory(
      [&] {
        const model::StateDict dict = model::decode_state_dict(bytes);
        if (dict.at(0).second.numel() != (int64_t{1} << 31)) throw std::logic_error("not a view");
        model::match_state(dict, specs, "expanded_view.pt");
      },
      kHostileFileCeilingMb);
  CHECK_THAT(outcome, ContainsSubstring("threw: expanded_view.pt: its parameters do not fit the "
                                        "model: missing 0.weight"));
  CHECK_THAT(outcome, ContainsSubstring("mis-shaped 7.weight: [2147483648] in the file, [128, 800] "
                                        "in the model"));
}

TEST_CASE("tensor views whose (size - 1) * stride overflows are refused, not computed",
          "[serialize][security]") {
  CHECK(read_with_storage(rebuild({2, 2}, {2, 1}), 4)->tensor.sizes() ==
        torch::IntArrayRef({2, 2}));
  const int64_t huge = int64_t{1} << 62;
  CHECK_THROWS_WITH(read_with_storage(rebuild({4}, {huge}), 4),
                    ContainsSubstring("a tensor with a negative or overflowing size or stride"));
  CHECK_THROWS_WITH(read_with_storage(rebuild({int64_t{1} << 40, int64_t{1} << 40}, {0, 0}), 4),
                    ContainsSubstring("negative or overflowing"));  // 2^80 elements
  CHECK_THROWS_WITH(read_with_storage(rebuild({2, 3}, {3, 1}), 4),
                    ContainsSubstring("a tensor that reaches past its storage of 4 elements"));
}

TEST_CASE("a pickle of millions of objects is refused once it passes 2^18, within 100 MB",
          "[serialize][security]") {
  // 3 MB of NONE opcodes: each one object on the stack.
  const std::string nones = pickle_stream(std::string(3 << 20, 'N'));
  const std::string outcome =
      run_within_memory([&] { read_with_storage(nones, 0); }, kHostileFileCeilingMb);
  CHECK_THAT(outcome, ContainsSubstring("threw: more than 262144 objects"));
  // Memo lookups (BINGET 0) make no new object but grow the stack: each counts as one made.
  std::string gets = "N" + std::string("q\0", 2);
  for (int i = 0; i < 300000; ++i) gets += std::string("h\0", 2);
  CHECK_THAT(
      run_within_memory([&] { read_with_storage(pickle_stream(gets), 0); }, kHostileFileCeilingMb),
      ContainsSubstring("threw: more than 262144 objects"));
}

TEST_CASE("a compressed record is refused, never inflated", "[serialize][security]") {
  // The same record stored, then marked deflated in both its headers: whatever it would inflate
  // to, it is not read.
  std::string bytes = model::encode_state_dict({{"w", torch::ones({4})}});
  for (const char* signature : {"PK\x01\x02", "PK\x03\x04"}) {
    for (size_t at = bytes.find(signature); at != std::string::npos;
         at = bytes.find(signature, at + 4)) {
      const size_t method = at + (signature[2] == '\x01' ? 10 : 8);
      bytes[method] = 8;  // deflate
    }
  }
  CHECK_THROWS_WITH(model::decode_state_dict(bytes),
                    ContainsSubstring("record data.pkl is compressed or encrypted"));
}

TEST_CASE("an IDX header that promises 2 GB over no data costs no 2 GB", "[serialize][security]") {
  TempDir dir;
  // 8 x 16384 x 16384 bytes promised, none there; gzip's and the plain file's alike.
  const std::vector<uint8_t> header = testing::idx_bytes({8, 16384, 16384}, {});
  testing::write_bytes(dir / "plain", header);
  testing::write_gzip(dir / "packed.gz", header);
  for (const char* name : {"plain", "packed.gz"}) {
    INFO(name);
    const std::string outcome =
        run_within_memory([&] { data::read_idx(dir / name); }, kHostileFileCeilingMb);
    CHECK_THAT(outcome, ContainsSubstring("truncated: holds 0 values, its header promises "
                                          "2147483648"));
  }
}

TEST_CASE(
    "predict's images: only PNG and PGM/PPM reach the decoder, and no more than 16 megapixels",
    "[serialize][security]") {
  TempDir dir;
  // 64 megapixels claimed by a 33-byte file: refused from its header.
  testing::write_text(dir / "vast.png", png(8192, 8192, zlib_of_zeros(16)));
  const std::string vast =
      run_within_memory([&] { data::read_input_images(dir / "vast.png"); }, kHostileFileCeilingMb);
  CHECK_THAT(vast, ContainsSubstring("vast.png: an image of 8192x8192 pixels, more than the "
                                     "16 megapixels or 16384 pixels a side dptrain decodes"));
  // 65535 x 65535, past stb_image's int arithmetic (which says only "unknown image type").
  testing::write_text(dir / "widest.png", png(65535, 65535, zlib_of_zeros(16)));
  CHECK_THROWS_WITH(data::read_input_images(dir / "widest.png"),
                    ContainsSubstring("widest.png: an image of 65535x65535 pixels, more than the "
                                      "16 megapixels or 16384 pixels a side dptrain decodes"));
  // The largest sides a header can hold (beyond PNG's own 2^31 - 1), whose product overflows.
  testing::write_text(dir / "vastest.png", png(0xffffffffu, 0xffffffffu, zlib_of_zeros(16)));
  CHECK_THROWS_WITH(data::read_input_images(dir / "vastest.png"),
                    ContainsSubstring("vastest.png: an image of 4294967295x4294967295 pixels"));
  // A 64x64 image whose data inflate to 64 MB (a 64 KB zlib bomb): stb_image would inflate it
  // all, doubling its buffer as it went.
  testing::write_text(dir / "bomb.png", png(64, 64, zlib_of_zeros(size_t{64} << 20)));
  const std::string bomb =
      run_within_memory([&] { data::read_input_images(dir / "bomb.png"); }, kHostileFileCeilingMb);
  CHECK_THAT(bomb, ContainsSubstring("bomb.png: a PNG whose image data inflate to more than the "
                                     "9344 bytes its size of 64x64 can hold"));
  // stb_image would decode a GIF (and BMP, PSD, TGA, HDR, PIC...): never given one.
  testing::write_text(dir / "image.gif", std::string("GIF89a\x01\x00\x01\x00\x80\x00\x00", 13) +
                                             std::string(20, '\0'));
  CHECK_THROWS_WITH(data::read_input_images(dir / "image.gif"),
                    ContainsSubstring("image.gif: neither a PNG, a JPEG nor a PGM/PPM image"));
  CHECK_THROWS_WITH(data::read_input_images("/dev/zero"), ContainsSubstring("/dev/zero: is no "
                                                                            "regular file"));
}

TEST_CASE(
    "a pickle that joins two memoised strings into global names again and again is refused "
    "at the first, within 100 MB",
    "[serialize][security]") {
  // A 1 MB string, memoised, then BINGET 0, BINGET 0, STACK_GLOBAL a thousand times: each name
  // joined from the two would be 2 MB, 2 GB in all, from a 1 MB file.
  std::string body =
      "X" + std::string("\0\0\x10\0", 4) + std::string(1 << 20, 'm') + std::string("q\0", 2);
  for (int i = 0; i < 1000; ++i) body += std::string("h\0h\0\x93", 5);
  const std::string outcome =
      run_within_memory([&] { read_with_storage(pickle_stream(body), 0); }, kHostileFileCeilingMb);
  CHECK_THAT(outcome, ContainsSubstring("threw: a global whose name is 2097152 bytes long"));
  // A global of a short name that a file of weights does not name is refused where it is named.
  CHECK_THROWS_WITH(read_with_storage(pickle_stream("cbuiltins\neval\n"), 0),
                    ContainsSubstring("the global builtins.eval, which a PyTorch file of weights "
                                      "does not name"));
}

TEST_CASE("a dict that names a key twice is refused: Python would keep the last, not the first",
          "[serialize][security]") {
  const std::string twice = std::string("}(X\x01\0\0\0aNX\x01\0\0\0aK\x01u", 19);
  CHECK_THROWS_WITH(read_with_storage(pickle_stream(twice), 0),
                    ContainsSubstring("a dict that names a "
                                      "twice"));
}

TEST_CASE("a zip directory that points two records at one record's bytes is refused",
          "[serialize][security]") {
  // Two tensors of one size; then data/1's directory entry is pointed at data/0's header and
  // CRC: a thousand such entries would make one record's bytes count a thousand times.
  std::string bytes =
      model::encode_state_dict({{"a", torch::ones({1000})}, {"b", torch::zeros({1000})}});
  std::map<std::string, size_t> entries;  // record name -> its directory entry
  for (size_t at = bytes.find("PK\x01\x02"); at != std::string::npos;
       at = bytes.find("PK\x01\x02", at + 4)) {
    const size_t name_length = static_cast<uint8_t>(bytes[at + 28]) |
                               static_cast<size_t>(static_cast<uint8_t>(bytes[at + 29])) << 8;
    entries[bytes.substr(at + 46, name_length)] = at;
  }
  size_t zero = 0, one = 0;
  for (const auto& [name, at] : entries) {
    if (name.size() > 7 && name.compare(name.size() - 7, 7, "/data/0") == 0) zero = at;
    if (name.size() > 7 && name.compare(name.size() - 7, 7, "/data/1") == 0) one = at;
  }
  REQUIRE(zero != 0);
  REQUIRE(one != 0);
  bytes.replace(one + 16, 4, bytes.substr(zero + 16, 4));  // its CRC
  bytes.replace(one + 42, 4, bytes.substr(zero + 42, 4));  // its local header
  CHECK_THROWS_WITH(model::decode_state_dict(bytes),
                    ContainsSubstring("has another name in its own header"));
}

TEST_CASE("a checkpoint record nested 100,000 deep is a damaged record, not a crash",
          "[serialize][security]") {
  // nlohmann's parser keeps its own stack, but flattening or freeing such a value would recurse
  // past the thread's stack.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK_THROWS_WITH(config::parse_json(deep), ContainsSubstring("nested deeper than 64 levels"));
  CHECK(config::parse_json(std::string(64, '[') + std::string(64, ']')).is_array());
  TempDir dir;
  testing::write_text(dir / "deep.json", deep);
  CHECK_THROWS_WITH(config::load_config(dir / "deep.json", {}, {"lenet"}),
                    ContainsSubstring("deep.json: not valid JSON: nested deeper than 64 levels"));
}

TEST_CASE(
    "JSON of 300,000 empty objects is refused before it is parsed, and 250,000 parse in linear "
    "time",
    "[serialize][security]") {
  const auto objects = [](size_t count) {
    std::string text = "[";
    for (size_t i = 0; i < count; ++i) text += i ? ",{}" : "{}";
    return text + "]";
  };
  // 300,000 empty objects: 900 KB of text, 30 MB and more once parsed.
  CHECK_THROWS_WITH(config::parse_json(objects(300000)),
                    ContainsSubstring("more than 524288 values"));
  // nlohmann's parser, given a callback, scans an array again each time an object in it closes:
  // 250,000 took minutes. Run under a CPU limit many times what it now takes.
  const std::string text = objects(250000);
  CHECK(testing::run_within_cpu_time(
            [&] {
              if (config::parse_json(text).size() != 250000) throw std::logic_error("wrong size");
            },
            10) == "returned");
  // Brackets inside strings are text, not levels or values.
  CHECK(config::parse_json("[\"" + std::string(100, '[') + ",\\\"{\"]").size() == 1);
}

TEST_CASE("a sparse file that claims 16 GB costs what is read of it, not 16 GB",
          "[serialize][security]") {
  TempDir dir;
  const auto sparse = dir / "sparse.pt";
  testing::write_text(sparse, std::string("PK\x03\x04", 4));  // a zip's start, then its search
  std::filesystem::resize_file(sparse, uint64_t{16} << 30);   // holes: no disk, no memory
  const auto specs = model::state_specs(*model::LeNet());
  const std::string outcome = testing::run_within_resident_memory(
      [&] { train::read_model_file(sparse, specs); }, kHostileFileCeilingMb);
  CHECK_THAT(outcome, ContainsSubstring("sparse.pt: the file is cut short (17179869184 bytes): a "
                                        "zip archive whose end, its directory, is missing"));
}

TEST_CASE(
    "a PNG whose image data zlib refuses or cannot finish, a CgBI PNG and one whose first chunk is "
    "not IHDR are refused before the decoder sees them, within 100 MB",
    "[serialize][security]") {
  TempDir dir;
  const auto refusal = [&](const std::string& name, const std::string& bytes) {
    testing::write_text(dir / name, bytes);
    return run_within_memory([&] { data::read_input_images(dir / name); }, kHostileFileCeilingMb);
  };
  // A zlib header whose window size (CINFO) is 8, which zlib refuses and stb_image ignores, over
  // 64 MB of zeros: stb would inflate them all.
  std::string wide_window = zlib_of_zeros(size_t{64} << 20);
  wide_window[0] = static_cast<char>(0x88);  // CM 8, CINFO 8
  wide_window[1] = 0;
  while ((0x88 * 256 + static_cast<uint8_t>(wide_window[1])) % 31 != 0) ++wide_window[1];
  CHECK_THAT(refusal("window.png", png(64, 64, wide_window)),
             ContainsSubstring("window.png: a PNG whose image data zlib cannot inflate (invalid "
                               "window size)"));
  // Apple's CgBI before IHDR (raw deflate, no zlib header), and after it.
  const std::string raw = zlib_of_zeros(size_t{64} << 20).substr(2);
  const std::string cgbi = chunk("CgBI", std::string("\x50\0 \x02", 4));
  const std::string cgbi_first =
      std::string("\x89PNG\r\n\x1a\n", 8) + cgbi + png(64, 64, raw).substr(8);
  CHECK_THAT(refusal("cgbi.png", cgbi_first),
             ContainsSubstring("cgbi.png: a PNG whose first chunk is not its 13-byte IHDR header"));
  CHECK_THAT(refusal("cgbi-later.png", png_of(64, 64, 8, 0, cgbi + chunk("IDAT", raw))),
             ContainsSubstring("a PNG whose chunks include CgBI"));
  // A stream cut short, and one chunk that runs past the end.
  const std::string cut = zlib_of_zeros(64 * 65);
  CHECK_THAT(refusal("cut.png", png(64, 64, cut.substr(0, cut.size() - 6))),
             ContainsSubstring("cut.png: a PNG whose image data end before their zlib stream "
                               "does"));
  std::string overlong = png(64, 64, cut);
  overlong.replace(33, 4, big_endian(1 << 20));  // IDAT's length
  CHECK_THAT(refusal("overlong.png", overlong),
             ContainsSubstring("a PNG whose chunks run past the end of the file"));
  // The same image whole decodes.
  CHECK(refusal("whole.png", png(64, 64, cut)) == "returned");
}

TEST_CASE(
    "predict refuses a picture whose samples take more than 16 MiB, and a file larger than any "
    "picture, before decoding or reading it",
    "[serialize][security]") {
  TempDir dir;
  // 16 megapixels of 16-bit RGBA (128 MiB of samples) in some hundred kilobytes: stb_image would
  // hold the inflated rows, the 16-bit samples and their 8-bit copy at once.
  const uint64_t rows = uint64_t{4096} * (1 + 4096 * 8);
  testing::write_text(dir / "deep.png",
                      png_of(4096, 4096, 16, 6, chunk("IDAT", zlib_of_zeros_streamed(rows))));
  CHECK_THAT(
      run_within_memory([&] { data::read_input_images(dir / "deep.png"); }, kHostileFileCeilingMb),
      ContainsSubstring("deep.png: an image of 4096x4096 pixels whose samples take "
                        "134217728 bytes, more than the 16 MiB dptrain decodes"));
  // 1 x 16,777,216 pixels, 16 MiB of samples: within both bounds, but resizing it to 28 x 28 would
  // hold 28 x 16M values.
  testing::write_text(dir / "tall.png", png(1, 1 << 24, zlib_of_zeros_streamed(uint64_t{2} << 24)));
  CHECK_THAT(
      run_within_memory([&] { data::read_input_images(dir / "tall.png"); }, kHostileFileCeilingMb),
      ContainsSubstring("tall.png: an image of 1x16777216 pixels, more than the 16 "
                        "megapixels or 16384 pixels a side dptrain decodes"));
  // A sparse file of 2 GiB that starts as a PNG: refused by its size, unread.
  testing::write_text(dir / "vast.png", png(28, 28, zlib_of_zeros(28 * 29)));
  std::filesystem::resize_file(dir / "vast.png", uint64_t{2} << 30);
  CHECK_THAT(testing::run_within_resident_memory([&] { data::read_input_images(dir / "vast.png"); },
                                                 kHostileFileCeilingMb),
             ContainsSubstring("vast.png: a file of 2147483648 bytes, more than the 20 MiB any "
                               "picture dptrain decodes can need"));
}

TEST_CASE(
    "predict on IDX files of 300,000 and 100,000 images: the first refused, the second refused "
    "whole, and --index reads one image of it, within 100 MB",
    "[serialize][security]") {
  TempDir dir;
  // Zero images in a few hundred kilobytes of gzip, written a piece at a time.
  const auto write_images = [&](const std::filesystem::path& file, uint32_t count) {
    gzFile out = gzopen(file.c_str(), "wb9");
    const std::vector<uint8_t> header = testing::idx_bytes({count, 28, 28}, {});
    gzwrite(out, header.data(), static_cast<unsigned>(header.size()));
    const std::string zeros(size_t{28} * 28 * 1000, '\0');
    for (uint32_t i = 0; i < count / 1000; ++i) {
      gzwrite(out, zeros.data(), static_cast<unsigned>(zeros.size()));
    }
    gzclose(out);
  };
  const auto many = dir / "many.gz";
  write_images(many, 300000);
  CHECK(std::filesystem::file_size(many) < (size_t{1} << 20));
  for (const std::optional<int64_t> index : {std::optional<int64_t>(), std::optional<int64_t>(5)}) {
    CHECK_THAT(
        run_within_memory([&] { data::read_input_images(many, index); }, kHostileFileCeilingMb),
        ContainsSubstring("many.gz: an IDX file of 300000 images, more than the 100000 of "
                          "any data set predict reads images from"));
  }
  const auto file = dir / "some.gz";
  write_images(file, 100000);
  CHECK_THAT(run_within_memory([&] { data::read_input_images(file); }, kHostileFileCeilingMb),
             ContainsSubstring("some.gz: an IDX file of 100000 images, more than the 10000 "
                               "predict takes at once"));
  std::vector<data::InputImage> images;
  CHECK(run_within_memory([&] { images = data::read_input_images(file, 99999); },
                          kHostileFileCeilingMb) == "returned");
  images = data::read_input_images(file, 5);
  REQUIRE(images.size() == 1);
  CHECK(images[0].name == file.string() + "#5");
  CHECK(images[0].image.sizes() == torch::IntArrayRef({1, 28, 28}));
}

TEST_CASE(
    "a PGM or PPM that holds fewer pixels than its header declares, none, an overflowing number "
    "or another maxval than 255, and a PNG whose image data inflate short, are refused naming the "
    "file, before the decoder sees them",
    "[serialize][security]") {
  TempDir dir;
  const auto refused = [&](const std::string& name, const std::string& bytes) {
    testing::write_text(dir / name, bytes);
    try {
      data::read_input_images(dir / name);
    } catch (const core::Error& e) {
      CHECK(e.code() == core::ErrorCode::kData);
      return std::string(e.what());
    }
    return std::string("read");
  };
  // The first test image of the real Fashion-MNIST, as a PGM a user would save.
  data::IdxArray images = data::read_idx_items(
      testing::real_data_dir() / "t10k-images-idx3-ubyte.gz", /*first=*/0, /*count=*/1);
  const std::string pixels(images.values.begin(), images.values.end());
  REQUIRE(pixels.size() == 784);
  const std::string header = "P5 28 28 255\n";
  // Debian's stb_image decoded these from whatever the heap held.
  CHECK(refused("empty.pgm", header) ==
        (dir / "empty.pgm").string() +
            ": a PGM/PPM whose pixels end after 0 of the 784 bytes its 28x28 header declares (a "
            "truncated file)");
  CHECK_THAT(refused("empty.ppm", "P6 512 512 255\n"),
             ContainsSubstring("pixels end after 0 of the 786432 bytes its 512x512 header"));
  CHECK_THAT(refused("cut.pgm", header + pixels.substr(0, 783)),
             ContainsSubstring("cut.pgm: a PGM/PPM whose pixels end after 783 of the 784 bytes"));
  CHECK_THAT(refused("cut-header.pgm", "P5 28 28"),
             ContainsSubstring("a PGM/PPM whose header has no whitespace before its maxval"));
  CHECK_THAT(refused("no-pixels.pgm", "P5 0 0 255\n"),
             ContainsSubstring("a PGM/PPM whose header declares 0x0 pixels: none to classify"));
  CHECK_THAT(refused("long.pgm", "P5 99999999999 1 255\n" + pixels),
             ContainsSubstring("a PGM/PPM whose width has more than 9 digits"));
  CHECK_THAT(refused("maxval.pgm", "P5 28 28 15\n" + pixels),
             ContainsSubstring("a PGM/PPM whose maxval is 15: dptrain reads 8-bit PGM/PPM of "
                               "maxval 255"));
  CHECK_THAT(refused("16-bit.pgm", "P5 28 28 65535\n" + pixels + pixels),
             ContainsSubstring("maxval is 65535"));
  CHECK_THAT(refused("glued.pgm", "P5 28 28 255#\n" + pixels),
             ContainsSubstring("maxval is not followed by a whitespace byte"));
  // Whole, with a comment in its header and bytes after its raster, it reads, the same each time.
  const std::string whole = "P5 # from Fashion-MNIST\n28 28\n255\n" + pixels + "trailing";
  CHECK(refused("whole.pgm", whole) == "read");
  testing::write_text(dir / "whole.pgm", whole);
  const auto once = data::read_input_images(dir / "whole.pgm");
  const auto again = data::read_input_images(dir / "whole.pgm");
  REQUIRE(once.size() == 1);
  CHECK(torch::equal(once[0].image, again[0].image));
  CHECK(torch::equal(once[0].image, data::to_model_input(torch::from_blob(
                                        images.values.data(), {28, 28, 1}, torch::kUInt8))));
  // A PNG whose zlib stream is whole but holds 10 of its 28 rows.
  CHECK_THAT(refused("short.png", png(28, 28, zlib_of_zeros(29 * 10))),
             ContainsSubstring("short.png: a PNG whose image data inflate to 290 bytes, fewer than "
                               "the 812 its size of 28x28 needs (a truncated image)"));
  CHECK(refused("full.png", png(28, 28, zlib_of_zeros(29 * 28))) == "read");
}
