#include "store/table.h"

namespace dptrain::store {
namespace {

Frame ok(std::vector<std::string> fields = {}) {
  return {kOk, std::move(fields)};
}
Frame error(const std::string& message) {
  return {kError, {message}};
}
std::string flag(bool b) {
  return std::string(1, b ? '\1' : '\0');
}

// How many fields each request takes (the keys of check and wait: at least one).
bool arity_ok(Op op, size_t n) {
  switch (op) {
    case Op::kSet:
    case Op::kAdd:
      return n == 2;
    case Op::kGet:
    case Op::kDelete:
      return n == 1;
    case Op::kCompareSet:
      return n == 3;
    case Op::kCheck:
    case Op::kWait:
      return n >= 1;
    case Op::kNumKeys:
      return n == 0;
  }
  return false;
}

// The fields that are keys: all of check's and wait's, else the first.
bool keys_ok(Op op, const std::vector<std::string>& fields) {
  const size_t keys =
      (op == Op::kCheck || op == Op::kWait) ? fields.size() : (fields.empty() ? 0 : 1);
  for (size_t i = 0; i < keys; ++i) {
    if (fields[i].size() > kMaxKey) return false;
  }
  return true;
}

}  // namespace

std::string* StoreTable::find(const std::string& key) {
  const auto it = data_.find(key);
  return it == data_.end() ? nullptr : &it->second;
}

Frame StoreTable::set(const std::string& key, std::string value) {
  std::string* held = find(key);
  const uint64_t before = held ? key.size() + held->size() : 0;
  const uint64_t after = key.size() + value.size();
  if (bytes_ - before + after > kMaxStoreBytes) {
    return error("the store would hold more than " + std::to_string(kMaxStoreBytes >> 20) + " MB");
  }
  bytes_ = bytes_ - before + after;
  data_[key] = std::move(value);
  return ok();
}

std::optional<Frame> StoreTable::apply(const Frame& request) {
  const auto op = static_cast<Op>(request.code);
  const std::vector<std::string>& f = request.fields;
  if (!arity_ok(op, f.size())) return error("a malformed request");
  if (!keys_ok(op, f)) return error("a key longer than " + std::to_string(kMaxKey) + " bytes");
  switch (op) {
    case Op::kSet:
      return set(f[0], f[1]);
    case Op::kGet: {
      const std::string* held = find(f[0]);
      if (!held) return std::nullopt;
      return ok({*held});
    }
    case Op::kAdd: {
      int64_t sum = integer_of(f[1]);
      if (const std::string* held = find(f[0])) {
        int64_t before = 0;
        try {
          before = std::stoll(*held);
        } catch (const std::exception&) {
          return error("add to key " + f[0] + ", which holds no number");
        }
        if (__builtin_add_overflow(sum, before, &sum)) return error("add past 2^63 to " + f[0]);
      }
      Frame reply = set(f[0], std::to_string(sum));
      if (reply.code != kOk) return reply;
      return ok({integer_field(sum)});
    }
    case Op::kCompareSet: {
      const std::string* held = find(f[0]);
      if ((!held && f[1].empty()) || (held && *held == f[1])) {
        Frame reply = set(f[0], f[2]);
        if (reply.code != kOk) return reply;
        return ok({f[2]});
      }
      return ok({held ? *held : f[1]});
    }
    case Op::kDelete: {
      const auto it = data_.find(f[0]);
      if (it == data_.end()) return ok({flag(false)});
      bytes_ -= it->first.size() + it->second.size();
      data_.erase(it);
      return ok({flag(true)});
    }
    case Op::kCheck:
    case Op::kWait: {
      bool all = true;
      for (const std::string& key : f) all = all && find(key) != nullptr;
      if (op == Op::kCheck) return ok({flag(all)});
      if (!all) return std::nullopt;
      return ok();
    }
    case Op::kNumKeys:
      return ok({integer_field(static_cast<int64_t>(data_.size()))});
  }
  return error("an unknown request " + std::to_string(request.code));
}

}  // namespace dptrain::store
