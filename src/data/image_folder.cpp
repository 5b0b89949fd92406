#include "data/image_folder.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <set>
#include <system_error>
#include <utility>

#include "core/error.h"
#include "core/terminal.h"

namespace dptrain::data {
namespace {

// torchvision's IMG_EXTENSIONS, and whether dptrain decodes the format (data/picture.h).
struct PictureExtension {
  const char* suffix;
  const char* format;
  bool decoded;
};
constexpr std::array<PictureExtension, 9> kExtensions = {{{".jpg", "JPEG", true},
                                                          {".jpeg", "JPEG", true},
                                                          {".png", "PNG", true},
                                                          {".ppm", "PPM", true},
                                                          {".bmp", "BMP", false},
                                                          {".pgm", "PGM", true},
                                                          {".tif", "TIFF", false},
                                                          {".tiff", "TIFF", false},
                                                          {".webp", "WebP", false}}};

// The extension `name` ends with, in any case (ImageFolder lowers the name first), or none.
// Lowered by hand in ASCII: std::tolower follows the locale (Turkish has a dotless i).
const PictureExtension* picture_extension(std::string_view name) {
  const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c | 0x20) : c; };
  for (const auto& e : kExtensions) {
    const size_t n = std::strlen(e.suffix);
    if (name.size() >= n &&
        std::equal(e.suffix, e.suffix + n, name.end() - static_cast<std::ptrdiff_t>(n),
                   [&](char a, char b) { return a == lower(b); })) {
      return &e;
    }
  }
  return nullptr;
}

constexpr char kLookHint[] =
    "check the data folder's permissions; a path must be shorter than PATH_MAX (4,096 bytes)";

[[noreturn]] void refuse_entry(const std::filesystem::path& entry, const std::string& why,
                               const std::string& hint) {
  throw core::Error(core::ErrorCode::kData, core::printable(entry.string()) + ": " + why, hint);
}

using FolderId = std::pair<dev_t, ino_t>;

FolderId folder_id_of(const std::filesystem::path& folder) {
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0) {
    refuse_entry(folder, std::string("cannot look at it: ") + std::strerror(errno),
                 "check the data folder's permissions");
  }
  return {st.st_dev, st.st_ino};
}

// One folder's entries as ImageFolder sees them: its folders (links to folders among them) and
// its pictures' names.
struct FolderEntries {
  std::vector<std::string> folders;
  std::vector<std::string> pictures;
};

class ImageFolderLister {
 public:
  ImageFolderLister(const std::filesystem::path& root, SkippedFiles* skipped)
      : root_(root), skipped_(skipped) {
    std::error_code ec;
    canonical_root_ = std::filesystem::canonical(root, ec);
    if (ec || !std::filesystem::is_directory(canonical_root_)) {
      refuse_entry(root, "no such folder",
                   "give data.dir a folder of class folders (ImageFolder's)");
    }
  }

  // The folder `relative` (to the root); its pictures too when `pictures` (the root's own files
  // are no samples, and are never looked at). Entries that are neither folders nor pictures by
  // name (a README, a notes.txt link to anywhere) are passed by unlooked at, as ImageFolder does.
  FolderEntries read(const std::string& relative, bool pictures) const {
    const std::filesystem::path dir = relative.empty() ? root_ : root_ / relative;
    FolderEntries entries;
    std::error_code ec;
    std::filesystem::directory_iterator it(dir, ec), end;
    if (ec) refuse_entry(dir, "cannot list it: " + ec.message(), "check the folder's permissions");
    for (; it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      const bool picture_name = pictures && picture_extension(name) != nullptr;
      const auto type = type_of(*it, picture_name);
      const bool folder = type == std::filesystem::file_type::directory;
      const bool wanted = folder || (picture_name && is_picture(it->path(), name, type));
      if (!wanted) continue;
      if (!core::is_utf8(name) &&
          !refuse_file(folder, it->path(), "a name that is not UTF-8",
                       "rename it in UTF-8, as ImageFolder's users' file systems name files")) {
        continue;
      }
      (type == std::filesystem::file_type::directory ? entries.folders : entries.pictures)
          .push_back(name);
    }
    if (ec) refuse_entry(dir, "cannot list it: " + ec.message(), "check the folder's permissions");
    // What "skip" left out, in the order of the names (the directory's own order is the file
    // system's).
    std::sort(left_out_.begin(), left_out_.end());
    for (const std::string& file_and_why : left_out_) skipped_->add(file_and_why);
    left_out_.clear();
    std::sort(entries.folders.begin(), entries.folders.end());
    std::sort(entries.pictures.begin(), entries.pictures.end());
    return entries;
  }

  // Every folder of class `name` with its pictures, in the order of `sorted(os.walk(...))`. A
  // folder reached twice within the class (through links) is refused: ImageFolder would list its
  // pictures twice, and links fanning out level after level would make the walk exponential.
  std::vector<std::pair<std::string, std::vector<std::string>>> walk(
      const std::string& name) const {
    struct Pending {
      std::string relative;
      std::vector<FolderId> above;  // the folders it is in, the root first: a link back is a loop
    };
    std::vector<std::pair<std::string, std::vector<std::string>>> folders;
    std::vector<Pending> pending = {{name, {folder_id_of(root_)}}};
    std::set<FolderId> seen;
    while (!pending.empty()) {
      Pending next = std::move(pending.back());
      pending.pop_back();
      const FolderId id = folder_id_of(root_ / next.relative);
      if (std::find(next.above.begin(), next.above.end(), id) != next.above.end()) {
        refuse_entry(root_ / next.relative, "a link loop: this folder is inside itself",
                     "remove the link, which ImageFolder would follow until Python stops it");
      }
      if (!seen.insert(id).second) {
        refuse_entry(root_ / next.relative,
                     "a folder reached a second time within class " + core::printable(name) +
                         ", through a link",
                     "remove the link: ImageFolder would list the folder's pictures twice");
      }
      FolderEntries entries = read(next.relative, /*pictures=*/true);
      next.above.push_back(id);
      for (const auto& sub : entries.folders)
        pending.push_back({next.relative + "/" + sub, next.above});
      folders.emplace_back(std::move(next.relative), std::move(entries.pictures));
    }
    std::sort(folders.begin(), folders.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    return folders;
  }

 private:
  // What the entry is, following a link that stays inside the root (the directory's own record
  // for anything else: no stat per file). A link that leads out or nowhere is refused where it
  // can matter: a folder, or a file named as a picture.
  std::filesystem::file_type type_of(const std::filesystem::directory_entry& entry,
                                     bool pictures) const {
    std::error_code ec;
    const auto own = entry.symlink_status(ec);
    // What cannot even be looked at (a path longer than PATH_MAX, an entry gone meanwhile) is
    // refused rather than passed by: a picture would otherwise go missing without a word.
    if (ec) refuse_entry(entry.path(), "cannot look at it: " + ec.message(), kLookHint);
    if (!std::filesystem::is_symlink(own)) return own.type();
    const auto target = std::filesystem::canonical(entry.path(), ec);
    if (ec) {
      if (!pictures) return std::filesystem::file_type::not_found;
      const bool loop = ec == std::errc::too_many_symbolic_link_levels;
      refuse_file(false, entry.path(),
                  loop ? "a link in a loop (links that lead to each other, never to a file)"
                       : "a link that leads nowhere",
                  "remove it or point it at a picture");
      return std::filesystem::file_type::not_found;
    }
    const auto type = std::filesystem::status(target, ec).type();
    const std::string inside = canonical_root_.string() + "/";
    const bool folder = type == std::filesystem::file_type::directory;
    if ((folder || pictures) && target.string().rfind(inside, 0) != 0) {
      refuse_file(folder, entry.path(),
                  "a link that leads out of the data folder " +
                      core::printable(canonical_root_.string()) + ", to " +
                      core::printable(target.string()),
                  "copy what it leads to into the data folder: nothing outside it is read");
      return std::filesystem::file_type::not_found;
    }
    return type;
  }

  // Whether the file `name` is a picture of ImageFolder's; refused when it is one that dptrain
  // does not decode, or no regular file (a FIFO named x.png would stall the reader).
  bool is_picture(const std::filesystem::path& path, const std::string& name,
                  std::filesystem::file_type type) const {
    const PictureExtension* extension = picture_extension(name);
    if (extension == nullptr) return false;  // ImageFolder passes it by too
    if (type == std::filesystem::file_type::not_found) return false;  // a link left out
    if (!extension->decoded) {
      return refuse_file(
          false, path,
          std::string("a ") + extension->format + " picture, which dptrain does not decode",
          "convert it to PNG or JPEG, or move it out of the data folder");
    }
    if (type != std::filesystem::file_type::regular) {
      return refuse_file(false, path, "no regular file",
                         "remove it, or put the picture it stands for there");
    }
    return true;
  }

  // A refusal: thrown for a folder, or for a file unless data.on_bad_file skips it (then counted,
  // and false: the entry is left out).
  bool refuse_file(bool folder, const std::filesystem::path& path, const std::string& why,
                   const std::string& hint) const {
    if (folder || skipped_ == nullptr) refuse_entry(path, why, hint);
    left_out_.push_back(core::printable(path.string()) + ": " + why);
    return false;
  }

  std::filesystem::path root_;
  SkippedFiles* skipped_;
  mutable std::vector<std::string> left_out_;  // by read(), until its folder is listed
  std::filesystem::path canonical_root_;
};

}  // namespace

std::string_view FolderListing::file(int64_t i) const {
  const auto at = static_cast<size_t>(i);
  const uint64_t begin = at == 0 ? 0 : ends_[at - 1];
  return std::string_view(names_).substr(begin, ends_[at] - begin);
}

void FolderListing::add_file(std::string_view relative, int32_t label) {
  names_.append(relative);
  ends_.push_back(names_.size());
  labels_.push_back(label);
}

void SkippedFiles::add(const std::string& file_and_why) {
  ++count;
  if (examples.size() < kExamples) examples.push_back(file_and_why);
}

void SkippedFiles::add_empty_class(const std::filesystem::path& root, const std::string& name) {
  const std::string folder = core::printable(root.filename().string() + "/" + name);
  if (std::find(empty_classes.begin(), empty_classes.end(), folder) == empty_classes.end()) {
    empty_classes.push_back(folder);
  }
}

FolderListing list_image_folder(const std::filesystem::path& root, SkippedFiles* skipped) {
  const ImageFolderLister lister(root, skipped);
  FolderListing listing;
  const FolderEntries top = lister.read("", /*pictures=*/false);
  if (top.folders.empty()) {
    refuse_entry(root, "no class folder in it",
                 "make one folder per class, each holding that class's pictures, as ImageFolder "
                 "reads them");
  }
  for (size_t label = 0; label < top.folders.size(); ++label) {
    const std::string& name = top.folders[label];
    listing.add_class(name);
    const int64_t before = listing.size();
    for (const auto& [folder, pictures] : lister.walk(name)) {
      for (const auto& picture : pictures) {
        listing.add_file(folder + "/" + picture, static_cast<int32_t>(label));
      }
    }
    if (listing.size() == before && skipped != nullptr) {
      skipped->add_empty_class(root, name);
    } else if (listing.size() == before) {
      refuse_entry(root / name, "a class folder with no picture in it (PNG, JPEG, PGM or PPM)",
                   "put its pictures there, or remove the folder: ImageFolder refuses it too");
    }
  }
  return listing;
}

}  // namespace dptrain::data
