// Where texts made of lines first part from a reference: for the ddp ranks' checks that they
// hold one model and one experiment (each rank's text against rank 0's), so that an error can
// name the first line that differs.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace dptrain::core {

struct LineDifference {
  size_t text = 0;     // which of the texts (from 1: the 0th is the reference)
  size_t line = 0;     // the first line that differs, from 0
  std::string theirs;  // that line of the text, or "nothing" past its end
  std::string ours;    // and of the reference
  size_t their_lines = 0, our_lines = 0;
};

// The first text of `texts` other than texts[0], and where; nothing when all are alike. Lines
// end with '\n'.
std::optional<LineDifference> first_line_difference(const std::vector<std::string>& texts);

}  // namespace dptrain::core
