// Building pickle values, and reading them with errors that say what was expected.
#include "serialize/pickle.h"

namespace dptrain::serialize {
namespace {

ValuePtr make(Value::Kind kind) {
  auto v = std::make_shared<Value>();
  v->kind = kind;
  return v;
}

const char* kind_name(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kBool:
      return "a boolean";
    case Value::Kind::kInt:
      return "an integer";
    case Value::Kind::kFloat:
      return "a float";
    case Value::Kind::kString:
      return "a string";
    case Value::Kind::kTuple:
      return "a tuple";
    case Value::Kind::kList:
      return "a list";
    case Value::Kind::kDict:
      return "a dict";
    case Value::Kind::kGlobal:
      return "a global";
    case Value::Kind::kTensor:
      return "a tensor";
  }
  return "an object";
}

}  // namespace

ValuePtr none() {
  return make(Value::Kind::kNone);
}

ValuePtr boolean(bool b) {
  ValuePtr v = make(Value::Kind::kBool);
  v->integer = b ? 1 : 0;
  return v;
}

ValuePtr integer(int64_t i) {
  ValuePtr v = make(Value::Kind::kInt);
  v->integer = i;
  return v;
}

ValuePtr real(double d) {
  ValuePtr v = make(Value::Kind::kFloat);
  v->real = d;
  return v;
}

ValuePtr text(std::string s) {
  ValuePtr v = make(Value::Kind::kString);
  v->text = std::move(s);
  return v;
}

ValuePtr tensor(torch::Tensor t) {
  ValuePtr v = make(Value::Kind::kTensor);
  v->tensor = std::move(t);
  return v;
}

ValuePtr list(std::vector<ValuePtr> items) {
  ValuePtr v = make(Value::Kind::kList);
  v->items = std::move(items);
  return v;
}

ValuePtr tuple(std::vector<ValuePtr> items) {
  ValuePtr v = make(Value::Kind::kTuple);
  v->items = std::move(items);
  return v;
}

ValuePtr dict(std::vector<std::pair<ValuePtr, ValuePtr>> entries, bool ordered) {
  ValuePtr v = make(Value::Kind::kDict);
  v->entries = std::move(entries);
  v->ordered = ordered;
  return v;
}

const Value& as(Value::Kind kind, const Value& v, std::string_view what) {
  if (v.kind != kind) {
    throw PickleError(std::string(what) + " is " + kind_name(v.kind) + ", not " + kind_name(kind));
  }
  return v;
}

int64_t as_int(const Value& v, std::string_view what) {
  return as(Value::Kind::kInt, v, what).integer;
}

double as_real(const Value& v, std::string_view what) {
  if (v.kind == Value::Kind::kInt) return static_cast<double>(v.integer);
  return as(Value::Kind::kFloat, v, what).real;
}

const std::string& as_text(const Value& v, std::string_view what) {
  return as(Value::Kind::kString, v, what).text;
}

const torch::Tensor& as_tensor(const Value& v, std::string_view what) {
  return as(Value::Kind::kTensor, v, what).tensor;
}

const Value* find(const Value& dict, std::string_view key) {
  if (dict.kind != Value::Kind::kDict) return nullptr;
  for (const auto& [k, v] : dict.entries) {
    if (k->kind == Value::Kind::kString && k->text == key) return v.get();
  }
  return nullptr;
}

const Value& at(const Value& dict, std::string_view key, std::string_view what) {
  as(Value::Kind::kDict, dict, what);
  const Value* found = find(dict, key);
  if (found == nullptr)
    throw PickleError(std::string(what) + " has no entry \"" + std::string(key) + "\"");
  return *found;
}

}  // namespace dptrain::serialize
