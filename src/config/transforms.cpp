#include "config/transforms.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

namespace dptrain::config {
namespace {

using nlohmann::json;

struct Named {
  TransformName name;
  const char* text;
  std::set<std::string> params;  // torchvision's names, besides "name"
};

const std::vector<Named>& table() {
  static const std::vector<Named> kTable = {
      {TransformName::kResize, "resize", {"size", "interpolation", "antialias"}},
      {TransformName::kCenterCrop, "center_crop", {"size"}},
      {TransformName::kRandomCrop,
       "random_crop",
       {"size", "padding", "pad_if_needed", "fill", "padding_mode"}},
      {TransformName::kRandomResizedCrop,
       "random_resized_crop",
       {"size", "scale", "ratio", "interpolation", "antialias"}},
      {TransformName::kRandomHorizontalFlip, "random_horizontal_flip", {"p"}},
      {TransformName::kNormalize, "normalize", {"mean", "std"}},
  };
  return kTable;
}

const Named& named(TransformName name) {
  for (const auto& n : table()) {
    if (n.name == name) return n;
  }
  return table().front();
}

// One transform's object, read with the errors naming `key` ("data.train_transforms[1]").
class Reader {
 public:
  Reader(const json& object, std::string key, const Checker& check)
      : object_(object), key_(std::move(key)), check_(check) {}

  [[noreturn]] void fail(const std::string& param, const std::string& what,
                         const std::string& hint) const {
    check_.fail(key_ + (param.empty() ? "" : "." + param), what, hint);
  }
  const json* find(const std::string& param) const {
    const auto it = object_.find(param);
    return it == object_.end() ? nullptr : &*it;
  }
  double number(const std::string& param, double fallback) const {
    const json* v = find(param);
    if (v == nullptr) return fallback;
    if (!v->is_number()) fail(param, "must be a number, got " + v->dump(), "as in torchvision");
    const double x = v->get<double>();
    if (!std::isfinite(x)) fail(param, "must be finite", "as in torchvision");
    return x;
  }
  bool boolean(const std::string& param, bool fallback) const {
    const json* v = find(param);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) fail(param, "must be true or false, got " + v->dump(), "");
    return v->get<bool>();
  }
  // A number, or a list of `min_n` to `max_n` numbers.
  std::vector<double> numbers(const std::string& param, size_t min_n, size_t max_n,
                              const std::string& hint) const {
    const json* v = find(param);
    if (v == nullptr) return {};
    std::vector<double> out;
    const auto take = [&](const json& x) {
      if (!x.is_number() || !std::isfinite(x.get<double>())) {
        fail(param, "must hold numbers, got " + v->dump(), hint);
      }
      out.push_back(x.get<double>());
    };
    if (v->is_array()) {
      for (const auto& x : *v) take(x);
    } else {
      take(*v);
    }
    if (out.size() < min_n || out.size() > max_n) {
      fail(param, "holds " + std::to_string(out.size()) + " numbers", hint);
    }
    return out;
  }
  // Whole numbers >= `least`: one, or a list of the allowed lengths.
  std::vector<int64_t> integers(const std::string& param, const std::set<size_t>& lengths,
                                int64_t least, const std::string& hint) const {
    const json* v = find(param);
    if (v == nullptr) return {};
    std::vector<int64_t> out;
    const auto take = [&](const json& x) {
      if (!x.is_number_integer()) fail(param, "must hold whole numbers, got " + v->dump(), hint);
      const auto n = x.get<int64_t>();
      if (n < least) {
        fail(param,
             "must hold numbers of " + std::to_string(least) + " or more, got " + std::to_string(n),
             hint);
      }
      out.push_back(n);
    };
    if (v->is_array()) {
      for (const auto& x : *v) take(x);
    } else {
      take(*v);
    }
    if (lengths.count(out.size()) == 0) {
      fail(param, "holds " + std::to_string(out.size()) + " numbers", hint);
    }
    return out;
  }

 private:
  const json& object_;
  std::string key_;
  const Checker& check_;
};

std::vector<int64_t> size_of(const Reader& r, bool shorter_edge) {
  const std::string hint =
      shorter_edge ? "a side (the shorter edge) or [height, width]" : "a side or [height, width]";
  if (r.find("size") == nullptr) r.fail("size", "is missing", "give " + hint);
  std::vector<int64_t> size = r.integers("size", {1, 2}, 1, hint);
  for (const int64_t side : size) {
    if (side > kLargestSide) {
      r.fail("size",
             "holds " + std::to_string(side) + ", more than the " + std::to_string(kLargestSide) +
                 " pixels a side dptrain decodes",
             hint);
    }
  }
  if (!shorter_edge && size.size() == 1) size.push_back(size[0]);
  return size;
}

void read_interpolation(const Reader& r) {
  const json* v = r.find("interpolation");
  if (v != nullptr && *v != "bilinear") {
    r.fail("interpolation", "is " + v->dump() + "; dptrain resizes bilinearly",
           "leave it out, or write \"bilinear\"");
  }
}

std::array<double, 2> pair_of(const Reader& r, const std::string& param,
                              std::array<double, 2> fallback, const std::string& hint) {
  const std::vector<double> v = r.numbers(param, 2, 2, hint);
  if (v.empty()) return fallback;
  if (!(v[0] > 0 && v[0] <= v[1])) r.fail(param, "must be [low, high] with 0 < low <= high", hint);
  return {v[0], v[1]};
}

void read_padding(const Reader& r, TransformSpec& t) {
  const json* pad = r.find("padding");
  if (pad != nullptr && !pad->is_null()) {
    const std::vector<int64_t> v =
        r.integers("padding", {1, 2, 4}, 0, "a number, [left/right, top/bottom] or four");
    if (v.size() == 1) t.padding = {v[0], v[0], v[0], v[0]};
    if (v.size() == 2) t.padding = {v[0], v[1], v[0], v[1]};
    if (v.size() == 4) t.padding = {v[0], v[1], v[2], v[3]};
    for (const int64_t side : t.padding) {
      if (side > kLargestSide) r.fail("padding", "is larger than a picture's side", "");
    }
  }
  t.pad_if_needed = r.boolean("pad_if_needed", false);
  t.fill = r.number("fill", 0);
  if (!(t.fill >= 0 && t.fill <= 255)) {
    r.fail("fill", "must be a grey level from 0 to 255, got " + json(t.fill).dump(),
           "random_crop pads the decoded picture's bytes (0 is black)");
  }
  if (const json* mode = r.find("padding_mode")) {
    static const std::set<std::string> kModes = {"constant", "edge", "reflect", "symmetric"};
    if (!mode->is_string() || kModes.count(mode->get<std::string>()) == 0) {
      r.fail("padding_mode", "is " + mode->dump(),
             "one of \"constant\", \"edge\", \"reflect\", \"symmetric\"");
    }
    t.padding_mode = mode->get<std::string>();
  }
}

// The transform `object` names; its parameters must all be that transform's.
const Named& named_in(const Reader& r, const json& object) {
  if (!object.is_object()) {
    r.fail("",
           "must be an object such as {\"name\": \"resize\", \"size\": 96}, got " + object.dump(),
           "each transform is an object with a name and torchvision's parameters");
  }
  const json* name = r.find("name");
  std::string names;
  for (const auto& n : transform_names()) names += (names.empty() ? "" : ", ") + n;
  if (name == nullptr || !name->is_string()) r.fail("name", "is missing or not a string", names);
  const Named* found = nullptr;
  for (const auto& n : table()) {
    if (*name == n.text) found = &n;
  }
  if (found == nullptr) r.fail("name", "unknown transform " + name->dump(), "known: " + names);
  for (const auto& item : object.items()) {
    if (item.key() != "name" && found->params.count(item.key()) == 0) {
      std::string known;
      for (const auto& p : found->params) known += (known.empty() ? "" : ", ") + p;
      r.fail(item.key(), "is no parameter of " + std::string(found->text),
             "its parameters: " + known);
    }
  }
  return *found;
}

TransformSpec read_one(const json& object, const std::string& key, const Checker& check) {
  const Reader r(object, key, check);
  const Named* found = &named_in(r, object);
  TransformSpec t;
  t.name = found->name;
  switch (t.name) {
    case TransformName::kResize:
      t.size = size_of(r, /*shorter_edge=*/true);
      read_interpolation(r);
      t.antialias = r.boolean("antialias", true);
      break;
    case TransformName::kCenterCrop:
      t.size = size_of(r, false);
      break;
    case TransformName::kRandomCrop:
      t.size = size_of(r, false);
      read_padding(r, t);
      break;
    case TransformName::kRandomResizedCrop:
      t.size = size_of(r, false);
      t.scale = pair_of(r, "scale", t.scale, "torchvision's default is [0.08, 1.0]");
      if (t.scale[1] > 1) r.fail("scale", "must be at most 1 (the whole picture)", "");
      t.ratio = pair_of(r, "ratio", t.ratio, "torchvision's default is [0.75, 1.3333]");
      read_interpolation(r);
      t.antialias = r.boolean("antialias", true);
      break;
    case TransformName::kRandomHorizontalFlip:
      t.p = r.number("p", 0.5);
      if (!(t.p >= 0 && t.p <= 1)) r.fail("p", "must be in [0, 1]", "a probability");
      break;
    case TransformName::kNormalize:
      t.mean = r.numbers("mean", 1, 3, "one number per channel, such as [0.2860]");
      t.std = r.numbers("std", 1, 3, "one number per channel, such as [0.3530]");
      if (t.mean.empty() || t.std.empty() || t.mean.size() != t.std.size()) {
        r.fail("", "needs mean and std of one number per channel each", "as in torchvision");
      }
      // Bounded so that every sample stays a finite float32: a std of 1e-50 is 0 in float32,
      // and torchvision's samples would then be inf and NaN.
      for (const double s : t.std) {
        if (!(s >= 1e-6)) r.fail("std", "must hold numbers of at least 1e-6", "such as [0.3530]");
      }
      for (const double m : t.mean) {
        if (!(std::abs(m) <= 1e6))
          r.fail("mean", "must hold numbers within +-1e6", "such as [0.2860]");
      }
      break;
  }
  return t;
}

}  // namespace

const char* transform_name(TransformName name) {
  return named(name).text;
}

bool is_random(TransformName name) {
  return name == TransformName::kRandomCrop || name == TransformName::kRandomResizedCrop ||
         name == TransformName::kRandomHorizontalFlip;
}

std::vector<std::string> transform_names() {
  std::vector<std::string> names;
  for (const auto& n : table()) names.emplace_back(n.text);
  return names;
}

std::vector<TransformSpec> parse_transforms(const json& list, const std::string& key,
                                            const Checker& check) {
  if (!list.is_array()) {
    check.fail(key, "must be a list of transforms",
               "such as [{\"name\": \"resize\", \"size\": 96}]");
  }
  std::vector<TransformSpec> out;
  for (size_t i = 0; i < list.size(); ++i) {
    out.push_back(read_one(list[i], key + "[" + std::to_string(i) + "]", check));
  }
  return out;
}

json transforms_json(const std::vector<TransformSpec>& transforms) {
  json list = json::array();
  for (const auto& t : transforms) {
    json o = {{"name", named(t.name).text}};
    switch (t.name) {
      case TransformName::kResize:
        o.update({{"size", t.size}, {"interpolation", "bilinear"}, {"antialias", t.antialias}});
        break;
      case TransformName::kCenterCrop:
        o["size"] = t.size;
        break;
      case TransformName::kRandomCrop:
        o.update({{"size", t.size},
                  {"padding", t.padding},
                  {"pad_if_needed", t.pad_if_needed},
                  {"fill", t.fill},
                  {"padding_mode", t.padding_mode}});
        break;
      case TransformName::kRandomResizedCrop:
        o.update({{"size", t.size},
                  {"scale", t.scale},
                  {"ratio", t.ratio},
                  {"interpolation", "bilinear"},
                  {"antialias", t.antialias}});
        break;
      case TransformName::kRandomHorizontalFlip:
        o["p"] = t.p;
        break;
      case TransformName::kNormalize:
        o.update({{"mean", t.mean}, {"std", t.std}});
        break;
    }
    list.push_back(std::move(o));
  }
  return list;
}

}  // namespace dptrain::config
