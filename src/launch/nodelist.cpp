#include "launch/nodelist.h"

#include <cctype>

#include "core/error.h"

namespace dptrain::launch {
namespace {

[[noreturn]] void malformed(const std::string& variable, const std::string& list,
                            const std::string& why) {
  throw core::Error(core::ErrorCode::kDistributed,
                    variable + "=\"" + list + "\" is not a list SLURM writes: " + why,
                    "run under srun, or set MASTER_ADDR to rank 0's host yourself");
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// Far more hosts, or tasks on one, than any cluster has: a number beyond it is a broken list, not
// a reason to allocate gigabytes.
constexpr long kMaxCount = 100000;

// A decimal count of at most kMaxCount (checked before converting, so no overflow).
long count_of(const std::string& digits, const std::string& variable, const std::string& list) {
  const size_t first = digits.find_first_not_of('0');
  const size_t significant = first == std::string::npos ? 0 : digits.size() - first;
  const long value = significant > 6 ? kMaxCount + 1 : std::stol(digits);
  if (value > kMaxCount) {
    malformed(variable, list, "\"" + digits + "\" is more than " + std::to_string(kMaxCount));
  }
  return value;
}

// Splits at commas that are not inside brackets.
std::vector<std::string> split_top_level(const std::string& list) {
  std::vector<std::string> parts;
  std::string current;
  int depth = 0;
  for (char c : list) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  parts.push_back(current);
  return parts;
}

// "03-05" -> 03 04 05, keeping the width of the first bound.
void expand_range(const std::string& prefix, const std::string& range, const std::string& list,
                  std::vector<std::string>& hosts) {
  const size_t dash = range.find('-');
  const std::string first = range.substr(0, dash);
  const std::string last = dash == std::string::npos ? first : range.substr(dash + 1);
  if (!all_digits(first) || !all_digits(last)) {
    malformed("SLURM_JOB_NODELIST", list, "\"" + range + "\" is not a number or a range");
  }
  const long lo = count_of(first, "SLURM_JOB_NODELIST", list);
  const long hi = count_of(last, "SLURM_JOB_NODELIST", list);
  if (hi < lo) malformed("SLURM_JOB_NODELIST", list, "the range \"" + range + "\" runs backwards");
  for (long n = lo; n <= hi; ++n) {
    std::string digits = std::to_string(n);
    if (digits.size() < first.size()) digits.insert(0, first.size() - digits.size(), '0');
    hosts.push_back(prefix + digits);
  }
}

}  // namespace

std::vector<std::string> expand_nodelist(const std::string& list) {
  std::vector<std::string> hosts;
  for (const std::string& part : split_top_level(list)) {
    if (part.empty()) malformed("SLURM_JOB_NODELIST", list, "an empty host name");
    const size_t open = part.find('[');
    if (open == std::string::npos) {
      if (part.find(']') != std::string::npos) malformed("SLURM_JOB_NODELIST", list, "a stray ']'");
      hosts.push_back(part);
      continue;
    }
    const size_t close = part.find(']', open);
    if (close == std::string::npos || close != part.size() - 1) {
      malformed("SLURM_JOB_NODELIST", list, "brackets in \"" + part + "\" do not close at its end");
    }
    const std::string prefix = part.substr(0, open);
    const std::string inside = part.substr(open + 1, close - open - 1);
    for (const std::string& range : split_top_level(inside)) {
      expand_range(prefix, range, list, hosts);
    }
  }
  return hosts;
}

std::vector<int> expand_tasks_per_node(const std::string& list) {
  std::vector<int> counts;
  for (const std::string& part : split_top_level(list)) {
    const size_t open = part.find("(x");
    const std::string count = part.substr(0, open);
    std::string repeat = "1";
    if (open != std::string::npos) {
      if (part.back() != ')') malformed("SLURM_TASKS_PER_NODE", list, "\"" + part + "\"");
      repeat = part.substr(open + 2, part.size() - open - 3);
    }
    if (!all_digits(count) || !all_digits(repeat)) {
      malformed("SLURM_TASKS_PER_NODE", list, "\"" + part + "\" is not N or N(xM)");
    }
    const long times = count_of(repeat, "SLURM_TASKS_PER_NODE", list);
    const long tasks = count_of(count, "SLURM_TASKS_PER_NODE", list);
    counts.insert(counts.end(), static_cast<size_t>(times), static_cast<int>(tasks));
  }
  return counts;
}

}  // namespace dptrain::launch
