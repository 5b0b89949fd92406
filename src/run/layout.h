// A run folder's layout: the names of the files dptrain writes there, where its checkpoints go,
// and what marks a folder as a run's. Every reader and writer of the folder takes names from here.
#pragma once

#include <filesystem>
#include <string>

#include "config/config.h"

namespace dptrain::run {

inline constexpr char kConfigFile[] = "config.json";     // the resolved experiment
inline constexpr char kRunFile[] = "run.json";           // the run's id and origin (folder.h)
inline constexpr char kStateFile[] = "state.json";       // where the run stands (state.h)
inline constexpr char kMetricsFile[] = "metrics.jsonl";  // one JSON object per epoch
inline constexpr char kMetricsCsvFile[] = "metrics.csv";
inline constexpr char kSummaryFile[] = "summary.json";  // a finished run's figures
inline constexpr char kModelFile[] = "model.pt";        // the final weights, a state_dict
inline constexpr char kCheckpointFolder[] = "checkpoints";
inline constexpr char kBestCheckpoint[] = "best.pt";
inline constexpr char kRewindFile[] = "rewind.json";  // a rewind under way (rewind_record.h)

// checkpoint.dir/<run id>, or <output>/checkpoints when checkpoint.dir is empty.
std::filesystem::path checkpoint_dir(const config::Config& config,
                                     const std::filesystem::path& output_dir,
                                     const std::string& run_id);

// Whether `dir` holds a run (config.json or run.json).
bool is_run_folder(const std::filesystem::path& dir);

// Whether `dir` holds a run's results, which a new run must not mix with.
bool holds_results(const std::filesystem::path& dir);

// Whether a file of that name in a run folder or its checkpoint folder is of a run's making: its
// results, its checkpoints, and the temporaries of their atomic writes.
bool written_by_a_run(const std::string& name);

}  // namespace dptrain::run
