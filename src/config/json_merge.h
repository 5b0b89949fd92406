// Layered, type-checked merging of JSON onto the defaults tree: the defaults are the schema, so a
// key they lack is unknown and a value of another JSON type is wrong. Each key remembers which
// layer (file or --set) gave its value, so that later range checks can name it.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace dptrain::config {

// Dotted key path -> where its value came from ("configs/x.json", "--set a.b=c").
using KeySources = std::map<std::string, std::string>;

// Merges `overlay` (an object) into `base`, key by key. Throws a config error naming `source` and
// the key path for an unknown key (its hint the keys nearest to it: near_keys), a key of a later
// feature, or a value of the wrong type.
void merge_checked(nlohmann::json& base, const nlohmann::json& overlay, const std::string& source,
                   KeySources& sources);

// Sets one dotted key path, with the same checks as merge_checked.
void set_checked(nlohmann::json& base, const std::string& key_path, const nlohmann::json& value,
                 const std::string& source, KeySources& sources);

}  // namespace dptrain::config
