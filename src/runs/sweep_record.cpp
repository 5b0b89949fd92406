#include "runs/sweep_record.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>
#include <vector>

#include "config/json_text.h"
#include "core/error.h"
#include "core/file_lock.h"
#include "core/fs.h"
#include "core/crypto.h"

namespace dptrain::runs {
namespace {

// A value of sweep.json as the command line spells it; a list of them as a grid does, cut short.
std::string shown(const nlohmann::json& value) {
  if (value.is_null()) return "none";
  return value.is_string() ? value.get<std::string>() : value.dump();
}

std::string shown_list(const nlohmann::json& values, const char* separator) {
  if (!values.is_array()) return shown(values);
  constexpr size_t kShown = 8;
  std::string text;
  for (size_t i = 0; i < values.size() && i < kShown; ++i) {
    text += (i == 0 ? "" : separator) + shown(values[i]);
  }
  if (values.size() > kShown) {
    text += separator + std::string("... (") + std::to_string(values.size()) + " in all)";
  }
  return text;
}

nlohmann::json member(const nlohmann::json& object, const char* key) {
  return object.is_object() && object.contains(key) ? object.at(key) : nlohmann::json();
}

// The items of `a` (a JSON list) that `b` lacks.
nlohmann::json missing_from(const nlohmann::json& a, const nlohmann::json& b) {
  nlohmann::json missing = nlohmann::json::array();
  if (!a.is_array()) return missing;
  for (const auto& item : a) {
    if (!b.is_array() || std::find(b.begin(), b.end(), item) == b.end()) missing.push_back(item);
  }
  return missing;
}

}  // namespace

nlohmann::json to_json(const SweepPlan& plan) {
  nlohmann::json grid = nlohmann::json::array();
  for (const auto& axis : plan.axes) grid.push_back({{"key", axis.key}, {"values", axis.values}});
  nlohmann::json sets = nlohmann::json::array();
  for (const auto& set : plan.sets) {
    if (set.rfind("runtime.threads=", 0) != 0) sets.push_back(set);
  }
  return {
      {"config", plan.config ? nlohmann::json(plan.config->string()) : nlohmann::json()},
      {"config_sha256",
       plan.config ? nlohmann::json(core::hex(core::sha256(core::read_regular_file(*plan.config))))
                   : nlohmann::json()},
      {"sets", sets},
      {"grid", grid},
      {"points", grid_points(plan.axes)}};
}

nlohmann::json read_sweep_file(const std::filesystem::path& file) {
  try {
    return config::parse_json(core::read_regular_file(file));
  } catch (const nlohmann::json::exception& e) {
    throw core::Error(core::ErrorCode::kIo, file.string() + ": " + config::plain_json_error(e),
                      "choose another --output for the sweep");
  }
}

std::string sweep_difference(const nlohmann::json& there, const nlohmann::json& here) {
  std::vector<std::string> parts;
  if (member(there, "config") != here.at("config")) {
    parts.push_back("--config " + shown(member(there, "config")) + " there, " +
                    shown(here.at("config")) + " here");
  } else if (member(there, "config_sha256") != here.at("config_sha256")) {
    parts.push_back("the experiment file was edited since (its sha256 differs)");
  }
  const nlohmann::json sets = member(there, "sets");
  if (sets != here.at("sets")) {
    const auto only_there = missing_from(sets, here.at("sets"));
    const auto only_here = missing_from(here.at("sets"), sets);
    for (const auto& [only, where] :
         {std::pair(only_there, " there only"), std::pair(only_here, " here only")}) {
      if (!only.empty()) parts.push_back("--set " + shown_list(only, " ") + where);
    }
    if (only_there.empty() && only_here.empty()) parts.push_back("--set in another order");
  }
  const nlohmann::json grid = member(there, "grid");
  nlohmann::json keys_there = nlohmann::json::array(), keys_here = nlohmann::json::array();
  for (const auto& axis : grid.is_array() ? grid : nlohmann::json::array()) {
    keys_there.push_back(member(axis, "key"));
  }
  for (const auto& axis : here.at("grid")) keys_here.push_back(axis.at("key"));
  if (keys_there != keys_here) {
    parts.push_back("--grid axes " + shown_list(keys_there, ", ") + " there, " +
                    shown_list(keys_here, ", ") + " here");
  } else {
    for (size_t a = 0; a < keys_here.size(); ++a) {
      const nlohmann::json values = member(grid[a], "values");
      if (values == here.at("grid")[a].at("values")) continue;
      parts.push_back("--grid " + shown(keys_here[a]) + ": " + shown_list(values, ",") +
                      " there, " + shown_list(here.at("grid")[a].at("values"), ",") + " here");
    }
  }
  if (parts.empty()) parts.push_back("its sweep.json states other points");
  std::string text;
  for (const auto& part : parts) text += (text.empty() ? "" : "; ") + part;
  return text;
}

int64_t point_threads(const SweepPlan& plan, int64_t index) {
  const auto at = static_cast<size_t>(index);
  if (at < plan.configured_threads.size() && plan.configured_threads[at] > 0) {
    return plan.configured_threads[at];
  }
  if (plan.threads > 0) return plan.threads;
  return std::max(1u, std::thread::hardware_concurrency());
}

std::map<std::string, int64_t> recorded_threads(const nlohmann::json& sweep) {
  std::map<std::string, int64_t> recorded;
  const nlohmann::json threads = member(sweep, kThreadsKey);
  if (!threads.is_object()) return recorded;
  for (const auto& [index, count] : threads.items()) {
    if (count.is_number_integer()) recorded[index] = count.get<int64_t>();
  }
  return recorded;
}

void record_threads(const std::filesystem::path& dir, int64_t index, int64_t threads) {
  const core::FileLock lock(dir / ".lock", core::FileLock::Mode::kWait);
  nlohmann::json sweep = read_sweep_file(dir / "sweep.json");
  if (!sweep.is_object()) return;  // prepare_sweep_folder checked it; a hand's edit since
  if (!sweep[kThreadsKey].is_object()) sweep[kThreadsKey] = nlohmann::json::object();
  sweep[kThreadsKey][std::to_string(index)] = threads;
  core::write_file_atomic(dir / "sweep.json", sweep.dump(2) + "\n");
}

}  // namespace dptrain::runs
