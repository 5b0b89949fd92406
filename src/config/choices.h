// The experiment's validated choices as enums, each with the names a config file uses for it. The
// names live here alone: loading, printing, errors and docs/experiments.md's key table read them
// from here.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dptrain::config {

enum class Dataset { kFashionMnist, kMnist, kFolder };
enum class DataPlacement { kAuto, kHost, kDevice };
enum class BadFiles { kError, kSkip };
enum class OptimizerName { kSgd, kAdam, kAdamw };
enum class SchedulerName { kNone, kStep, kCosine, kOnecycle };
enum class Backend { kSingle, kDp, kDdp };
enum class DistBackend { kAuto, kNccl, kGloo };
enum class Monitor { kValLoss, kValAcc, kTestLoss, kTestAcc, kTrainLoss };
enum class MonitorMode { kAuto, kMin, kMax };
enum class Precision { kFp32, kFp16, kBf16 };
enum class GradCompression { kNone, kFp16, kBf16, kPowerSgd };
enum class LogLevel { kTrace, kDebug, kInfo, kWarn, kError, kOff };
enum class ProgressMode { kAuto, kOn, kOff };

// ChoiceNames<E>::kNames: every value of E with its name, in the order the docs list them.
template <typename E>
struct ChoiceNames;

template <typename E, size_t N>
using NameTable = std::array<std::pair<E, std::string_view>, N>;

template <>
struct ChoiceNames<Dataset> {
  static constexpr NameTable<Dataset, 3> kNames{{{Dataset::kFashionMnist, "fashion-mnist"},
                                                 {Dataset::kMnist, "mnist"},
                                                 {Dataset::kFolder, "folder"}}};
};
template <>
struct ChoiceNames<DataPlacement> {
  static constexpr NameTable<DataPlacement, 3> kNames{{{DataPlacement::kAuto, "auto"},
                                                       {DataPlacement::kHost, "host"},
                                                       {DataPlacement::kDevice, "device"}}};
};
template <>
struct ChoiceNames<BadFiles> {
  static constexpr NameTable<BadFiles, 2> kNames{
      {{BadFiles::kError, "error"}, {BadFiles::kSkip, "skip"}}};
};
template <>
struct ChoiceNames<OptimizerName> {
  static constexpr NameTable<OptimizerName, 3> kNames{{{OptimizerName::kSgd, "sgd"},
                                                       {OptimizerName::kAdam, "adam"},
                                                       {OptimizerName::kAdamw, "adamw"}}};
};
template <>
struct ChoiceNames<SchedulerName> {
  static constexpr NameTable<SchedulerName, 4> kNames{{{SchedulerName::kNone, "none"},
                                                       {SchedulerName::kStep, "step"},
                                                       {SchedulerName::kCosine, "cosine"},
                                                       {SchedulerName::kOnecycle, "onecycle"}}};
};
template <>
struct ChoiceNames<Backend> {
  static constexpr NameTable<Backend, 3> kNames{
      {{Backend::kSingle, "single"}, {Backend::kDp, "dp"}, {Backend::kDdp, "ddp"}}};
};
template <>
struct ChoiceNames<DistBackend> {
  static constexpr NameTable<DistBackend, 3> kNames{
      {{DistBackend::kAuto, "auto"}, {DistBackend::kNccl, "nccl"}, {DistBackend::kGloo, "gloo"}}};
};
template <>
struct ChoiceNames<Monitor> {
  static constexpr NameTable<Monitor, 5> kNames{{{Monitor::kValLoss, "val_loss"},
                                                 {Monitor::kValAcc, "val_acc"},
                                                 {Monitor::kTestLoss, "test_loss"},
                                                 {Monitor::kTestAcc, "test_acc"},
                                                 {Monitor::kTrainLoss, "train_loss"}}};
};
template <>
struct ChoiceNames<MonitorMode> {
  static constexpr NameTable<MonitorMode, 3> kNames{
      {{MonitorMode::kAuto, "auto"}, {MonitorMode::kMin, "min"}, {MonitorMode::kMax, "max"}}};
};
template <>
struct ChoiceNames<Precision> {
  static constexpr NameTable<Precision, 3> kNames{
      {{Precision::kFp32, "fp32"}, {Precision::kFp16, "fp16"}, {Precision::kBf16, "bf16"}}};
};
template <>
struct ChoiceNames<GradCompression> {
  static constexpr NameTable<GradCompression, 4> kNames{{{GradCompression::kNone, "none"},
                                                         {GradCompression::kFp16, "fp16"},
                                                         {GradCompression::kBf16, "bf16"},
                                                         {GradCompression::kPowerSgd, "powersgd"}}};
};
template <>
struct ChoiceNames<LogLevel> {
  static constexpr NameTable<LogLevel, 6> kNames{{{LogLevel::kTrace, "trace"},
                                                  {LogLevel::kDebug, "debug"},
                                                  {LogLevel::kInfo, "info"},
                                                  {LogLevel::kWarn, "warn"},
                                                  {LogLevel::kError, "error"},
                                                  {LogLevel::kOff, "off"}}};
};
template <>
struct ChoiceNames<ProgressMode> {
  static constexpr NameTable<ProgressMode, 3> kNames{
      {{ProgressMode::kAuto, "auto"}, {ProgressMode::kOn, "on"}, {ProgressMode::kOff, "off"}}};
};

template <typename E>
std::string name_of(E value) {
  for (const auto& [v, name] : ChoiceNames<E>::kNames) {
    if (v == value) return std::string(name);
  }
  return "?";  // unreachable while every value has a name
}

template <typename E>
std::optional<E> choice_named(std::string_view name) {
  for (const auto& [v, n] : ChoiceNames<E>::kNames) {
    if (n == name) return v;
  }
  return std::nullopt;
}

template <typename E>
std::vector<std::string> choice_names() {
  std::vector<std::string> names;
  for (const auto& entry : ChoiceNames<E>::kNames) names.emplace_back(entry.second);
  return names;
}

// Whether the monitored figure is an accuracy (higher is better) rather than a loss.
inline bool is_accuracy(Monitor m) {
  return m == Monitor::kValAcc || m == Monitor::kTestAcc;
}
// Whether it is measured on the held-out validation set (data.val_split).
inline bool needs_validation_set(Monitor m) {
  return m == Monitor::kValLoss || m == Monitor::kValAcc;
}

}  // namespace dptrain::config
