#include "optim/optimizer_state.h"

#include <sstream>
#include <string>

namespace dptrain::optim {
namespace {

using serialize::PickleError;
using serialize::Value;
using serialize::ValuePtr;

// The names PyTorch gives a kind's state tensors, in ParamState's order, and whether it counts
// steps.
struct StateNames {
  std::vector<std::string> tensors;
  bool has_step = false;
  const char* kind = "";
};

StateNames names_of(config::OptimizerName kind) {
  switch (kind) {
    case config::OptimizerName::kSgd:
      return {{"momentum_buffer"}, false, "SGD"};
    case config::OptimizerName::kAdam:
      return {{"exp_avg", "exp_avg_sq"}, true, "Adam"};
    case config::OptimizerName::kAdamw:
      return {{"exp_avg", "exp_avg_sq"}, true, "AdamW"};
  }
  throw PickleError("an optimizer whose state dptrain does not save");
}

std::pair<ValuePtr, ValuePtr> entry(const std::string& key, ValuePtr value) {
  return {serialize::text(key), std::move(value)};
}

ValuePtr state_entry(const StateNames& names, const ParamState& s) {
  std::vector<std::pair<ValuePtr, ValuePtr>> fields;
  if (names.has_step) fields.push_back(entry("step", serialize::integer(s.step)));
  for (size_t k = 0; k < names.tensors.size() && k < s.tensors.size(); ++k) {
    fields.push_back(entry(names.tensors[k], serialize::tensor(s.tensors[k])));
  }
  return serialize::dict(std::move(fields));
}

ParamState parse_entry(const StateNames& names, const Value& fields, const torch::Tensor& param,
                       const std::string& where) {
  serialize::as(Value::Kind::kDict, fields, where);
  if (fields.entries.size() != names.tensors.size() + (names.has_step ? 1 : 0)) {
    throw PickleError(where + " is not the state of " + names.kind + " (it holds " +
                      std::to_string(fields.entries.size()) + " entries)");
  }
  ParamState s;
  if (names.has_step) {
    s.step = serialize::as_int(serialize::at(fields, "step", where), where + "'s step");
    if (s.step < 0) throw PickleError(where + "'s step is negative");
  }
  for (const std::string& name : names.tensors) {
    const std::string what = where + "'s " + name;
    const torch::Tensor& t = serialize::as_tensor(serialize::at(fields, name, where), what);
    if (t.sizes() != param.sizes()) {
      std::ostringstream shapes;
      shapes << what << " has shape " << t.sizes() << ", its parameter " << param.sizes();
      throw PickleError(shapes.str());
    }
    if (!t.is_floating_point()) throw PickleError(what + " is not floating-point");
    s.tensors.push_back(t.to(param.options(), /*non_blocking=*/false, /*copy=*/true));
  }
  return s;
}

}  // namespace

ValuePtr state_value(config::OptimizerName kind, const StateList& states) {
  const StateNames names = names_of(kind);
  std::vector<std::pair<ValuePtr, ValuePtr>> state;
  std::vector<ValuePtr> indices;
  for (size_t i = 0; i < states.size(); ++i) {
    const auto number = static_cast<int64_t>(i);
    if (states[i]) state.emplace_back(serialize::integer(number), state_entry(names, *states[i]));
    indices.push_back(serialize::integer(number));
  }
  std::vector<ValuePtr> groups;
  groups.push_back(serialize::dict({entry("params", serialize::list(std::move(indices)))}));
  return serialize::dict({entry("state", serialize::dict(std::move(state))),
                          entry("param_groups", serialize::list(std::move(groups)))});
}

StateList parse_state(const Value& value, config::OptimizerName kind,
                      const std::vector<torch::Tensor>& params) {
  const StateNames names = names_of(kind);
  const Value& state =
      serialize::as(Value::Kind::kDict, serialize::at(value, "state", "the optimizer's state"),
                    "the optimizer's \"state\"");
  StateList states(params.size());
  for (const auto& [key, fields] : state.entries) {
    const int64_t i = serialize::as_int(*key, "a parameter number in the optimizer's state");
    if (i < 0 || static_cast<size_t>(i) >= params.size()) {
      throw PickleError("the optimizer's state names parameter " + std::to_string(i) + " of " +
                        std::to_string(params.size()));
    }
    if (states[static_cast<size_t>(i)]) {
      throw PickleError("the optimizer's state names parameter " + std::to_string(i) + " twice");
    }
    states[static_cast<size_t>(i)] =
        parse_entry(names, *fields, params[static_cast<size_t>(i)],
                    "the optimizer's state of parameter " + std::to_string(i));
  }
  return states;
}

}  // namespace dptrain::optim
