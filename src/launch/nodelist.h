// SLURM's compact host and task lists, expanded: "gpu[03-05,07],cpu01" and "2(x3),1".
#pragma once

#include <string>
#include <vector>

namespace dptrain::launch {

// "gpu[03-05,07],cpu01" -> gpu03 gpu04 gpu05 gpu07 cpu01 (zero padding kept). Throws a
// distributed error quoting the list when it is malformed.
std::vector<std::string> expand_nodelist(const std::string& list);

// SLURM_TASKS_PER_NODE's "2(x3),1" -> 2 2 2 1: the task count of each node in node order.
std::vector<int> expand_tasks_per_node(const std::string& list);

}  // namespace dptrain::launch
