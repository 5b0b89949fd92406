// The hints for a mistyped command line: distances, what counts as close, --set spellings.
#include "support/catch.h"

#include "cli/suggest.h"
#include "config/schema.h"

using dptrain::cli::closest;
using dptrain::cli::set_spellings;
using dptrain::config::edit_distance;

TEST_CASE("edit distance counts a swap of neighbours as one edit", "[cli][suggest]") {
  CHECK(edit_distance("train", "train") == 0);
  CHECK(edit_distance("trian", "train") == 1);
  CHECK(edit_distance("tain", "train") == 1);
  CHECK(edit_distance("evalute", "evaluate") == 1);
  CHECK(edit_distance("", "info") == 4);
  CHECK(edit_distance("predict", "config") == 6);
}

TEST_CASE("only a close name is suggested", "[cli][suggest]") {
  const std::vector<std::string> subcommands = {"train", "evaluate", "predict", "config", "info"};
  CHECK(closest("trian", subcommands) == "train");
  CHECK(closest("evalute", subcommands) == "evaluate");
  CHECK(closest("infp", subcommands) == "info");
  CHECK_FALSE(closest("lr", subcommands));
  CHECK_FALSE(closest("x", {"--output"}));
  CHECK(closest("--outptu", {"--output", "--overwrite", "--resume"}) == "--output");
}

TEST_CASE("an option named like a config key gets its --set spellings", "[cli][suggest]") {
  const std::vector<std::string> keys = {
      "optimizer.lr", "data.batch_size", "data.dir", "checkpoint.dir", "seed", "train.epochs"};
  CHECK(set_spellings("--lr", std::string("0.1"), keys) ==
        std::vector<std::string>{"--set optimizer.lr=0.1"});
  CHECK(set_spellings("--batch-size=512", std::nullopt, keys) ==
        std::vector<std::string>{"--set data.batch_size=512"});
  CHECK(set_spellings("--dir", std::nullopt, keys) ==
        std::vector<std::string>{"--set data.dir=VALUE", "--set checkpoint.dir=VALUE"});
  CHECK(set_spellings("--seed", std::string("3"), keys) ==
        std::vector<std::string>{"--set seed=3"});
  CHECK(set_spellings("--data.batch_size", std::string("8"), keys) ==
        std::vector<std::string>{"--set data.batch_size=8"});
  CHECK(set_spellings("--size", std::string("8"), keys).empty());  // a part of a word is not one
  CHECK(set_spellings("--ch", std::nullopt, keys).empty());
}
