// The grammar of `dptrain sweep --grid` axes, in Hydra's multirun spelling: a key and its values
// (a list, choice() or range()), and the grid's points as --set overrides. Apart from sweep.cpp,
// which runs the points, so that the grammar reads, and is tested, on its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dptrain::runs {

struct GridAxis {
  std::string key;
  std::vector<std::string> values;  // as --set reads them
};

// The most values an axis (range() above all) and points a grid may have: far past any sweep
// that is meant, and each point is resolved before any trains.
constexpr size_t kMaxGridValues = 10000;

// "key=v1,v2,...": commas inside brackets, braces or double quotes belong to a value
// (parallel.devices=["cpu","cpu"],cpu is two values). Or Hydra's functions, as the whole of the
// values: choice(v1,v2,...), and range(start,stop[,step]) (start included, stop not; a float range
// printed at its arguments' decimals: range(0.1,0.5,0.1) is 0.1,0.2,0.3,0.4). A usage error names
// a malformed one.
GridAxis parse_grid_axis(const std::string& spec);

// Every point of the grid as its --set overrides ("key=value"), the first axis slowest, as
// Hydra numbers them.
std::vector<std::vector<std::string>> grid_points(const std::vector<GridAxis>& axes);

}  // namespace dptrain::runs
