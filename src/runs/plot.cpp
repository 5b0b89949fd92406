#include "runs/plot.h"

#include <unistd.h>

#include <cstdlib>

#include "core/error.h"
#include "core/fs.h"
#include "launch/supervisor.h"

namespace dptrain::runs {
namespace {

// A folder of our own for gnuplot's script and data, removed on every way out.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "dptrain-plot.XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw core::Error(core::ErrorCode::kIo, "cannot make a temporary folder for gnuplot",
                        "check that TMPDIR is writable");
    }
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// gnuplot's string syntax: single quotes, doubled inside. A control character (a newline in a
// folder's name) would end the command and start another, so it becomes '?'.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "''";
    } else {
      out += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
    }
  }
  return out + "'";
}

std::string plot_command(const std::vector<std::filesystem::path>& data,
                         const std::vector<std::string>& names, int column) {
  std::string cmd = "plot ";
  for (size_t i = 0; i < data.size(); ++i) {
    cmd += (i ? ", " : "") + quoted(data[i].string()) + " using 1:" + std::to_string(column) +
           " with linespoints title " + quoted(names[i]);
  }
  return cmd + "\n";
}

}  // namespace

void plot_runs(const std::vector<run::RunView>& runs, const std::vector<std::string>& names,
               const std::filesystem::path& svg) {
  ScratchDir scratch;
  std::vector<std::filesystem::path> data;
  for (size_t i = 0; i < runs.size(); ++i) {
    std::string rows = "# epoch train_loss test_acc\n";
    for (const auto& e : runs[i].epochs) {
      rows += std::to_string(e.value("epoch", 0)) + " " +
              e.value("train_loss", nlohmann::json()).dump() + " " +
              e.value("test_acc", nlohmann::json()).dump() + "\n";
    }
    data.push_back(scratch.path() / (std::to_string(i) + ".dat"));
    core::write_file_atomic(data.back(), rows);
  }
  // gnuplot opens its output as it is, through any link: it writes into the scratch folder, and
  // dptrain puts the picture in place (atomically, never through a link).
  const std::filesystem::path tmp = scratch.path() / "plot.svg";
  std::string script = "set terminal svg size 960,400 dynamic font 'sans,11'\n";
  script += "set output " + quoted(tmp.string()) + "\n";
  script += "set datafile missing 'null'\nset grid\nset xlabel 'epoch'\nset key noenhanced\n";
  script += "set multiplot layout 1,2\n";
  script += "set title 'train loss'\n" + plot_command(data, names, 2);
  script += "set title 'test acc'\n" + plot_command(data, names, 3);
  script += "unset multiplot\n";
  core::write_file_atomic(scratch.path() / "plot.gp", script);
  const auto log = scratch.path() / "gnuplot.log";
  launch::ChildSpec spec = launch::program_spec("gnuplot", {(scratch.path() / "plot.gp").string()});
  spec.log = log;
  const int status = launch::wait_for(launch::start_child(spec));
  if (status == 127) {
    throw core::Error(core::ErrorCode::kUsage, "--plot needs gnuplot, which is not installed",
                      "install it: apt-get install gnuplot-nox (or scripts/setup.sh gnuplot-nox)");
  }
  if (status != 0) {
    throw core::Error(
        core::ErrorCode::kRuntime,
        "gnuplot failed (status " + std::to_string(status) + "): " + core::read_text_file(log),
        "gnuplot's own message says why");
  }
  core::write_file_atomic(svg, core::read_regular_file(tmp));
}

}  // namespace dptrain::runs
