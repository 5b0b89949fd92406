#include "support/predictions.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>

#include "support/catch.h"
#include "support/fixtures.h"

namespace dptrain::testing {
namespace {

int64_t likeliest(const std::vector<double>& p) {
  return std::max_element(p.begin(), p.end()) - p.begin();
}

}  // namespace

std::vector<std::vector<double>> predicted_probabilities(const std::filesystem::path& model,
                                                         const std::filesystem::path& config,
                                                         const std::filesystem::path& images) {
  const auto r =
      run_dptrain(shell_words({"predict", "--model", model.string(), "--config", config.string(),
                               "--json", "--top", "10", "--quiet", images.string()}));
  INFO(r.err);
  REQUIRE(r.status == 0);
  std::vector<std::vector<double>> all;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::vector<double> p(10, -1.0);  // a class missing from the answer stays impossible
    const auto answer = nlohmann::json::parse(line);  // held: a range-for would not keep it alive
    for (const auto& top : answer.at("top")) {
      p.at(top.at("label").get<size_t>()) = top.at("probability").get<double>();
    }
    all.push_back(p);
  }
  return all;
}

PredictionAgreement agreement(const std::vector<std::vector<double>>& ours,
                              const std::vector<std::vector<double>>& theirs, double tie) {
  if (ours.size() != theirs.size()) throw std::invalid_argument("not the same images");
  PredictionAgreement a;
  std::set<int64_t> picked;
  for (size_t image = 0; image < ours.size(); ++image) {
    const auto& p = ours[image];
    const auto& q = theirs[image];
    if (p.size() != 10 || q.size() != 10) throw std::invalid_argument("not ten classes");
    for (size_t c = 0; c < 10; ++c) {
      a.largest_difference = std::max(a.largest_difference, std::abs(p[c] - q[c]));
    }
    picked.insert(likeliest(p));
    std::vector<double> sorted = q;
    std::sort(sorted.rbegin(), sorted.rend());
    if (sorted[0] - sorted[1] < tie) {
      ++a.near_ties;
    } else if (likeliest(p) != likeliest(q)) {
      ++a.disagreeing;
    }
  }
  a.classes_picked = static_cast<int64_t>(picked.size());
  return a;
}

PredictionAgreement check_same_predictions(const std::vector<std::vector<double>>& ours,
                                           const std::vector<std::vector<double>>& theirs,
                                           int64_t most_near_ties) {
  const PredictionAgreement same = agreement(ours, theirs, /*tie=*/1e-4);
  INFO("largest difference of a probability " << same.largest_difference << ", near ties "
                                              << same.near_ties);
  CHECK(same.largest_difference < 1e-5);
  CHECK(same.disagreeing == 0);
  CHECK(same.near_ties < most_near_ties);
  return same;
}

}  // namespace dptrain::testing
