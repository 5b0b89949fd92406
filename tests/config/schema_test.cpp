// The key declarations against what depends on them: the key table in docs/experiments.md, the
// defaults tree.
#include "support/catch.h"

#include <nlohmann/json.hpp>
#include <set>

#include "config/schema.h"
#include "core/fs.h"

using namespace dptrain;

namespace {

constexpr const char* kTableStart =
    "<!-- keys: the output of `dptrain config --keys`; tests/config/schema_test.cpp checks it "
    "-->\n";
constexpr const char* kTableEnd = "<!-- end of keys -->";

void collect_leaves(const nlohmann::json& tree, const std::string& prefix,
                    std::set<std::string>& out) {
  for (const auto& [key, value] : tree.items()) {
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (value.is_object()) {
      collect_leaves(value, path, out);
    } else {
      out.insert(path);
    }
  }
}

}  // namespace

TEST_CASE("the README's key table is the one the schema makes", "[config]") {
  const std::string readme =
      core::read_text_file(std::string(DPTRAIN_SOURCE_DIR) + "/docs/experiments.md");
  const size_t start = readme.find(kTableStart);
  REQUIRE(start != std::string::npos);
  const size_t from = start + std::string(kTableStart).size();
  const size_t end = readme.find(kTableEnd, from);
  REQUIRE(end != std::string::npos);
  INFO("regenerate it with: build/dptrain config --keys");
  CHECK(readme.substr(from, end - from) == config::key_table_markdown());
}

TEST_CASE("every declared key is in the defaults tree once, and nothing else is", "[config]") {
  std::set<std::string> declared;
  for (const auto& key : config::schema()) {
    CHECK(declared.insert(key.path).second);  // no key declared twice
    CHECK_FALSE(key.doc.empty());
    CHECK_FALSE(key.allowed.empty());
  }
  std::set<std::string> leaves;
  collect_leaves(config::to_json(config::Config{}), "", leaves);
  CHECK(leaves == declared);
}
