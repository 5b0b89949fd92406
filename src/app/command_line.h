// dptrain's own command line, rewritten: the one that resumes a run (a launcher's restart, the
// hint of an interrupted run), and as text a shell reads back as the same words.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace dptrain::app {

// The same command line, resuming from the run's newest checkpoint: any --resume replaced by
// --resume auto (a restart's checkpoints supersede the file it named).
std::vector<std::string> resuming(const std::vector<std::string>& argv);

// resuming() for a person to type: without --overwrite (which would start over), and naming the
// run's folder with --output when the command line chose none.
std::vector<std::string> resume_argv(const std::vector<std::string>& argv,
                                     const std::filesystem::path& output_dir);

// The words joined with spaces, each quoted for a POSIX shell where it needs it.
std::string shell_text(const std::vector<std::string>& words);

}  // namespace dptrain::app
