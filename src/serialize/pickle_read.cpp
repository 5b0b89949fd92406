// Python's unpickler, cut down to the objects PyTorch's files hold.
#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "core/terminal.h"
#include "serialize/little_endian.h"
#include "serialize/pickle.h"
#include "serialize/pickle_ops.h"

namespace dptrain::serialize {
namespace {

using namespace pickle_ops;

// What follows an opcode in the stream.
enum class Operand {
  kNothing,
  kFixed1,
  kFixed2,
  kFixed4,
  kFixed8,
  kSized1,
  kSized4,
  kSized8,
  kLine,
  kTwoLines
};

std::string hex(uint8_t op) {
  static const char* digits = "0123456789abcdef";
  return std::string("0x") + digits[op >> 4] + digits[op & 15];
}

// Every opcode's operand kind, or nothing for an unknown opcode.
class OperandTable {
 public:
  OperandTable() {
    set(Operand::kFixed1, {kBinInt1, kBinGet, kBinPut, kProto, kExt1});
    set(Operand::kFixed2, {kBinInt2, kExt2});
    set(Operand::kFixed4, {kBinInt, kLongBinGet, kLongBinPut, kExt4});
    set(Operand::kFixed8, {kBinFloat, kFrame});
    set(Operand::kSized1, {kShortBinString, kShortBinUnicode, kShortBinBytes, kLong1});
    set(Operand::kSized4, {kBinString, kBinUnicode, kBinBytes, kLong4});
    set(Operand::kSized8, {kBinUnicode8, kBinBytes8, kByteArray8});
    set(Operand::kLine, {kInt, kLong, kFloat, kString, kUnicode, kPersId, kGet, kPut});
    set(Operand::kTwoLines, {kGlobal, kInst});
    set(Operand::kNothing,
        {kMark,      kStop,     kPop,         kPopMark,   kDup,        kNone,          kReduce,
         kBuild,     kAppend,   kAppends,     kDict,      kEmptyDict,  kEmptyList,     kEmptyTuple,
         kSetItem,   kSetItems, kTuple,       kBinPersId, kList,       kObj,           kNewObj,
         kTuple1,    kTuple2,   kTuple3,      kNewTrue,   kNewFalse,   kEmptySet,      kAddItems,
         kFrozenSet, kNewObjEx, kStackGlobal, kMemoize,   kNextBuffer, kReadOnlyBuffer});
  }

  Operand of(uint8_t op, size_t at) const {
    if (!known_[op]) {
      throw PickleError("unknown pickle opcode " + hex(op) + " at byte " + std::to_string(at));
    }
    return *known_[op];
  }

 private:
  void set(Operand kind, std::initializer_list<uint8_t> ops) {
    for (uint8_t op : ops) known_[op] = kind;
  }

  std::array<std::optional<Operand>, 256> known_;
};

Operand operand_of(uint8_t op, size_t at) {
  static const OperandTable table;
  return table.of(op, at);
}

// Reads the stream front to back; every read is checked against the end before it is made.
class Cursor {
 public:
  explicit Cursor(std::string_view bytes) : bytes_(bytes) {}

  size_t position() const { return pos_; }
  bool done() const { return pos_ >= bytes_.size(); }

  uint8_t opcode() { return static_cast<uint8_t>(take(1)[0]); }

  uint64_t little_endian(size_t width) { return read_le(take(width), 0, static_cast<int>(width)); }

  std::string_view take(uint64_t count) {
    if (count > bytes_.size() - pos_) {
      throw PickleError("the pickle stream ends inside an operand of " + std::to_string(count) +
                        " bytes at byte " + std::to_string(pos_));
    }
    const std::string_view out = bytes_.substr(pos_, count);
    pos_ += count;
    return out;
  }

  std::string_view line() {
    const size_t end = bytes_.find('\n', pos_);
    if (end == std::string_view::npos) {
      throw PickleError("the pickle stream ends inside a line at byte " + std::to_string(pos_));
    }
    const std::string_view out = bytes_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return out;
  }

  // The operand of `op`, whatever it is, as raw bytes (lines without their newline).
  std::string operand(uint8_t op) {
    switch (operand_of(op, pos_ - 1)) {
      case Operand::kNothing:
        return {};
      case Operand::kFixed1:
        return std::string(take(1));
      case Operand::kFixed2:
        return std::string(take(2));
      case Operand::kFixed4:
        return std::string(take(4));
      case Operand::kFixed8:
        return std::string(take(8));
      case Operand::kSized1:
        return std::string(take(little_endian(1)));
      case Operand::kSized4:
        return std::string(take(little_endian(4)));
      case Operand::kSized8:
        return std::string(take(little_endian(8)));
      case Operand::kLine:
        return std::string(line());
      case Operand::kTwoLines: {
        std::string first(line());
        return first + "." + std::string(line());
      }
    }
    return {};
  }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

uint64_t unsigned_of(const std::string& raw) {
  return read_le(raw, 0, static_cast<int>(std::min<size_t>(raw.size(), 8)));
}

// LONG1's little-endian two's complement, up to 8 bytes.
int64_t signed_of(const std::string& raw) {
  if (raw.size() > 8) throw PickleError("an integer of " + std::to_string(raw.size()) + " bytes");
  if (raw.empty()) return 0;
  uint64_t value = unsigned_of(raw);
  if (raw.size() < 8 && (static_cast<uint8_t>(raw.back()) & 0x80)) {
    value |= ~uint64_t{0} << (8 * raw.size());
  }
  return static_cast<int64_t>(value);
}

std::vector<int64_t> ints_of(const Value& v, const char* what) {
  if (v.kind != Value::Kind::kTuple) throw PickleError(std::string(what) + " is not a tuple");
  // Checked before anything is built: one memoised tuple of a million numbers, named by each of
  // many views, would otherwise cost a million numbers each time.
  if (static_cast<int64_t>(v.items.size()) > kMaxTensorDims) {
    throw PickleError(std::string(what) + " of " + std::to_string(v.items.size()) +
                      " dimensions, more than the " + std::to_string(kMaxTensorDims) +
                      " a tensor may have");
  }
  std::vector<int64_t> out;
  for (const auto& item : v.items) out.push_back(as_int(*item, what));
  return out;
}

// The furthest element a view of `size` and `stride` reaches past its offset, with overflow
// checked (nullopt); 0 for an empty view, which reaches nothing.
std::optional<int64_t> view_extent(const std::vector<int64_t>& size,
                                   const std::vector<int64_t>& stride, bool& empty) {
  int64_t last = 0;
  int64_t numel = 1;
  for (size_t d = 0; d < size.size(); ++d) {
    if (size[d] < 0 || stride[d] < 0) return std::nullopt;
    if (size[d] == 0) empty = true;
    int64_t reach = 0;
    if (__builtin_mul_overflow(size[d] > 0 ? size[d] - 1 : 0, stride[d], &reach) ||
        __builtin_add_overflow(last, reach, &last) ||
        __builtin_mul_overflow(numel, size[d], &numel)) {
      return std::nullopt;
    }
  }
  return empty ? 0 : last;
}

// _rebuild_tensor_v2(storage, offset, size, stride, ...): the view, checked to lie inside the
// storage. It stays a view: its elements are copied only by whoever has checked its shape.
torch::Tensor rebuild_tensor(const Value& args) {
  if (args.kind != Value::Kind::kTuple || args.items.size() < 4 ||
      args.items[0]->kind != Value::Kind::kTensor) {
    throw PickleError("_rebuild_tensor_v2 without (storage, offset, size, stride)");
  }
  const torch::Tensor& storage = args.items[0]->tensor;
  const int64_t offset = as_int(*args.items[1], "a tensor's offset");
  const std::vector<int64_t> size = ints_of(*args.items[2], "a tensor's size");
  const std::vector<int64_t> stride = ints_of(*args.items[3], "a tensor's stride");
  if (size.size() != stride.size()) throw PickleError("a tensor's size and stride differ in rank");
  bool empty = false;
  const std::optional<int64_t> extent = view_extent(size, stride, empty);
  if (!extent) throw PickleError("a tensor with a negative or overflowing size or stride");
  int64_t last = 0;
  if (offset < 0 || __builtin_add_overflow(offset, *extent, &last) ||
      (!empty && last >= storage.numel())) {
    throw PickleError("a tensor that reaches past its storage of " +
                      std::to_string(storage.numel()) + " elements");
  }
  return storage.as_strided(size, stride, offset);
}

// The globals a file of weights may name, as Python's weights_only unpickler allows them; any other
// is refused where it is named (not only where it is called), so that a stream cannot make
// names of its own: a name joined from two memoised strings again and again would grow without
// bound.
const std::string& allowed_global(const std::string& name) {
  static const std::set<std::string> kAllowed = {"collections.OrderedDict",
                                                 "torch._utils._rebuild_tensor_v2",
                                                 "torch._utils._rebuild_parameter",
                                                 "torch.FloatStorage",
                                                 "torch.DoubleStorage",
                                                 "torch.HalfStorage",
                                                 "torch.BFloat16Storage",
                                                 "torch.LongStorage",
                                                 "torch.IntStorage",
                                                 "torch.ShortStorage",
                                                 "torch.CharStorage",
                                                 "torch.ByteStorage",
                                                 "torch.BoolStorage"};
  if (kAllowed.count(name) == 0) {
    throw PickleError("the global " + name.substr(0, 200) +
                      ", which a PyTorch file of weights does not name");
  }
  return name;
}

std::string allowed_global(const std::string& module, const std::string& name) {
  // Checked apart first: the names allowed are short, and a long one is refused unjoined.
  if (module.size() > 64 || name.size() > 64) {
    throw PickleError("a global whose name is " + std::to_string(module.size() + name.size()) +
                      " bytes long");
  }
  return allowed_global(module + "." + name);
}

// Python's unpickler, cut down to what PyTorch's files hold.
class Machine {
 public:
  Machine(const StorageLoader& load_storage, const DecodeLimits& limits)
      : load_storage_(load_storage), limits_(limits) {}

  ValuePtr run(std::string_view bytes) {
    Cursor cursor(bytes);
    while (!cursor.done()) {
      const size_t at = cursor.position();
      const uint8_t op = cursor.opcode();
      std::string arg = cursor.operand(op);
      if (op == kStop) {
        if (stack_.size() != 1)
          throw PickleError("STOP with " + std::to_string(stack_.size()) + " objects on the stack");
        return stack_.back();
      }
      try {
        step(op, arg);
      } catch (const PickleError& e) {
        // Its texts are the file's: printable, so that none reaches a terminal as a code.
        throw PickleError(core::printable(e.what()) + " (opcode " + hex(op) + " at byte " +
                          std::to_string(at) + ")");
      }
    }
    throw PickleError("the pickle stream has no STOP");
  }

 private:
  // `arg` is the operand's bytes; a string's are moved into the object it makes, not copied.
  void step(uint8_t op, std::string& arg) {
    if (push_constant(op, arg) || build_container(op) || use_memo(op, arg)) return;
    switch (op) {
      case kProto:
      case kFrame:
        return;
      case kMark:
        if (marks_.size() >= static_cast<size_t>(limits_.objects))
          throw PickleError("too many marks");
        marks_.push_back(stack_.size());
        return;
      case kGlobal:
        push(made(text(allowed_global(arg)), Value::Kind::kGlobal));
        return;
      case kStackGlobal: {
        const ValuePtr name = pop(), module = pop();
        if (module->kind != Value::Kind::kString || name->kind != Value::Kind::kString) {
          throw PickleError("STACK_GLOBAL of a non-string");
        }
        push(made(text(allowed_global(module->text, name->text)), Value::Kind::kGlobal));
        return;
      }
      case kReduce: {
        const ValuePtr args = pop(), callable = pop();
        push(reduce(*callable, args));
        return;
      }
      case kBuild:
        build();
        return;
      case kBinPersId:
        push(persistent_load(*pop()));
        return;
      default:
        throw PickleError("opcode not allowed in a PyTorch file read with weights only");
    }
  }

  // Counts every object made, so that a stream of millions of one-byte opcodes is refused long
  // before their objects fill memory.
  ValuePtr made(ValuePtr v, std::optional<Value::Kind> kind = std::nullopt) {
    if (++objects_ > limits_.objects) {
      throw PickleError("more than " + std::to_string(limits_.objects) + " objects");
    }
    if (kind) v->kind = *kind;
    return v;
  }

  bool push_constant(uint8_t op, std::string& arg) {
    switch (op) {
      case kNone:
        push(made(none()));
        return true;
      case kNewTrue:
      case kNewFalse:
        push(made(boolean(op == kNewTrue)));
        return true;
      case kBinInt1:
      case kBinInt2:
        push(made(integer(static_cast<int64_t>(unsigned_of(arg)))));
        return true;
      case kBinInt:
        push(made(integer(static_cast<int32_t>(unsigned_of(arg)))));
        return true;
      case kLong1:
        push(made(integer(signed_of(arg))));
        return true;
      case kBinFloat: {  // big-endian IEEE double
        uint64_t bits = 0;
        for (unsigned char c : arg) bits = (bits << 8) | c;
        double d = 0;
        std::memcpy(&d, &bits, sizeof bits);
        push(made(real(d)));
        return true;
      }
      case kBinUnicode:
      case kShortBinUnicode:
      case kBinUnicode8:
        push(made(text(std::move(arg))));
        return true;
      default:
        return false;
    }
  }

  bool build_container(uint8_t op) {
    switch (op) {
      case kEmptyTuple:
        push(made(tuple({})));
        return true;
      case kEmptyList:
        push(made(list({})));
        return true;
      case kEmptyDict:
        push(made(dict({})));
        return true;
      case kTuple:
        push(sequence(Value::Kind::kTuple, pop_mark()));
        return true;
      case kTuple1:
      case kTuple2:
      case kTuple3: {
        std::vector<ValuePtr> items(op - kTuple1 + 1);
        for (auto it = items.rbegin(); it != items.rend(); ++it) *it = pop();
        push(sequence(Value::Kind::kTuple, std::move(items)));
        return true;
      }
      case kAppend: {
        ValuePtr item = pop();
        append(*top(Value::Kind::kList), {item});
        return true;
      }
      case kAppends: {
        auto items = pop_mark();
        append(*top(Value::Kind::kList), items);
        return true;
      }
      case kSetItem: {
        ValuePtr value = pop(), key = pop();
        set_items(top(Value::Kind::kDict), {key, value});
        return true;
      }
      case kSetItems: {
        auto items = pop_mark();
        set_items(top(Value::Kind::kDict), items);
        return true;
      }
      default:
        return false;
    }
  }

  bool use_memo(uint8_t op, const std::string& arg) {
    switch (op) {
      case kBinPut:
      case kLongBinPut:
        remember(unsigned_of(arg));
        return true;
      case kMemoize:
        remember(memo_.size());
        return true;
      case kBinGet:
      case kLongBinGet: {
        const auto it = memo_.find(unsigned_of(arg));
        if (it == memo_.end()) throw PickleError("a memo entry that was never stored");
        // Counted as an object made: two bytes that name a memoised object again and again would
        // otherwise fill containers without bound.
        push(made(it->second));
        return true;
      }
      default:
        return false;
    }
  }

  void remember(uint64_t index) {
    if (memo_.size() >= static_cast<size_t>(limits_.objects))
      throw PickleError("too many memo entries");
    memo_[index] = top();
  }

  ValuePtr reduce(const Value& callable, const ValuePtr& args) {
    if (callable.kind != Value::Kind::kGlobal) throw PickleError("REDUCE of a non-global");
    if (args->kind != Value::Kind::kTuple) throw PickleError("REDUCE with non-tuple arguments");
    if (callable.text == "collections.OrderedDict" && args->items.empty()) {
      return made(dict({}, /*ordered=*/true));
    }
    if (callable.text == "torch._utils._rebuild_tensor_v2") {
      count_view(*args);
      return made(tensor(rebuild_tensor(*args)));
    }
    if (callable.text == "torch._utils._rebuild_parameter" && !args->items.empty() &&
        args->items[0]->kind == Value::Kind::kTensor) {
      return args->items[0];
    }
    throw PickleError("a call of " + callable.text +
                      ", which a PyTorch file of weights "
                      "does not hold");
  }

  // Each view costs its dimensions' sizes and strides: both are counted against the file's limits
  // before it is built.
  void count_view(const Value& args) {
    const size_t dims = args.kind == Value::Kind::kTuple && args.items.size() >= 3 &&
                                args.items[2]->kind == Value::Kind::kTuple
                            ? args.items[2]->items.size()
                            : 0;
    if (++tensors_ > limits_.tensors) {
      throw PickleError("more than " + std::to_string(limits_.tensors) +
                        " tensors, more than the model's state can need");
    }
    dimensions_ += static_cast<int64_t>(std::min<size_t>(dims, kMaxTensorDims + 1));
    if (dimensions_ > limits_.dimensions) {
      throw PickleError("tensors of more than " + std::to_string(limits_.dimensions) +
                        " dimensions in all, more than the model's state can need");
    }
  }

  // BUILD sets an object's attributes; on a dict (an OrderedDict's `_metadata`) nothing here
  // needs them.
  void build() {
    pop();
    if (top()->kind != Value::Kind::kDict) throw PickleError("BUILD of an object that is no dict");
  }

  // ('storage', torch.XStorage, key, location, numel)
  ValuePtr persistent_load(const Value& id) {
    if (id.kind != Value::Kind::kTuple || id.items.size() != 5 ||
        id.items[0]->kind != Value::Kind::kString || id.items[0]->text != "storage" ||
        id.items[1]->kind != Value::Kind::kGlobal || id.items[2]->kind != Value::Kind::kString) {
      throw PickleError("a persistent id that is no ('storage', type, key, location, numel)");
    }
    const int64_t numel = as_int(*id.items[4], "a storage's size");
    if (numel < 0) throw PickleError("a storage of negative size");
    return made(tensor(load_storage_(id.items[2]->text, storage_dtype(id.items[1]->text), numel)));
  }

  ValuePtr sequence(Value::Kind kind, std::vector<ValuePtr> items) {
    ValuePtr v = made(kind == Value::Kind::kTuple ? tuple({}) : list({}));
    adopt(*v, items);
    v->items = std::move(items);
    return v;
  }

  // Marks `items` as nested in `container` and deepens it, refusing what would make it hold
  // itself, change a container already inside another, or nest too deep.
  static void adopt(Value& container, const std::vector<ValuePtr>& items) {
    if (container.nested) throw PickleError("a change to a container inside another");
    for (const auto& item : items) {
      if (item.get() == &container) throw PickleError("a container that holds itself");
      item->nested = true;
      container.depth = std::max(container.depth, item->depth + 1);
    }
    if (container.depth > kMaxDepth) {
      throw PickleError("containers nested deeper than " + std::to_string(kMaxDepth));
    }
  }

  static void append(Value& list, const std::vector<ValuePtr>& items) {
    adopt(list, items);
    list.items.insert(list.items.end(), items.begin(), items.end());
  }

  // A dict that names a key twice is refused: Python keeps the last value, a reader that stops
  // at the first would load other weights than PyTorch does.
  void set_items(const ValuePtr& dict, const std::vector<ValuePtr>& items) {
    if (items.size() % 2 != 0) throw PickleError("SETITEMS with an odd number of objects");
    adopt(*dict, items);
    if (items.empty()) return;
    Keys& keys = keys_of_[dict];
    for (size_t i = 0; i < items.size(); i += 2) {
      const Value& key = *items[i];
      // A name, short: comparing long keys that differ in their last byte, in dict after dict,
      // would cost their length each time.
      if (key.kind == Value::Kind::kString && key.text.size() > kMaxKeyBytes) {
        throw PickleError("a dict key of " + std::to_string(key.text.size()) +
                          " bytes, longer than the " + std::to_string(kMaxKeyBytes) +
                          " any name in a file of weights needs");
      }
      // Views of the keys' own texts, never copies: one memoised key named by many dicts would
      // otherwise cost its length each time.
      const bool repeated =
          (key.kind == Value::Kind::kString && !keys.texts.insert(key.text).second) ||
          (key.kind == Value::Kind::kInt && !keys.integers.insert(key.integer).second);
      if (repeated) {
        throw PickleError("a dict that names " +
                          (key.kind == Value::Kind::kInt ? std::to_string(key.integer)
                                                         : key.text.substr(0, 200)) +
                          " twice");
      }
      dict->entries.emplace_back(items[i], items[i + 1]);
    }
  }

  void push(ValuePtr v) {
    if (stack_.size() >= static_cast<size_t>(limits_.objects)) {
      throw PickleError("more than " + std::to_string(limits_.objects) + " objects on the stack");
    }
    stack_.push_back(std::move(v));
  }

  ValuePtr pop() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) {
      throw PickleError("an opcode takes more objects than the stack holds");
    }
    ValuePtr v = stack_.back();
    stack_.pop_back();
    return v;
  }

  ValuePtr top(std::optional<Value::Kind> kind = std::nullopt) const {
    if (stack_.empty()) throw PickleError("an opcode needs an object on an empty stack");
    if (kind && stack_.back()->kind != *kind) throw PickleError("an object of the wrong kind");
    return stack_.back();
  }

  std::vector<ValuePtr> pop_mark() {
    if (marks_.empty()) throw PickleError("an opcode needs a MARK that is not there");
    const size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<ValuePtr> items(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    return items;
  }

  // A dict's keys so far: its string keys' texts (alive as long as the dict holds them) and its
  // integer keys.
  struct Keys {
    std::set<std::string_view> texts;
    std::set<int64_t> integers;
  };

  const StorageLoader& load_storage_;
  const DecodeLimits limits_;
  std::vector<ValuePtr> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, ValuePtr> memo_;
  // Each dict's keys so far, to refuse a repeated one; held here, no dict is freed and its address
  // taken by another while the stream is read.
  std::map<ValuePtr, Keys> keys_of_;
  int64_t objects_ = 0;
  int64_t tensors_ = 0;
  int64_t dimensions_ = 0;
};

}  // namespace

at::ScalarType storage_dtype(const std::string& global) {
  static const std::map<std::string, at::ScalarType> kTypes = {
      {"torch.FloatStorage", at::kFloat}, {"torch.DoubleStorage", at::kDouble},
      {"torch.HalfStorage", at::kHalf},   {"torch.BFloat16Storage", at::kBFloat16},
      {"torch.LongStorage", at::kLong},   {"torch.IntStorage", at::kInt},
      {"torch.ShortStorage", at::kShort}, {"torch.CharStorage", at::kChar},
      {"torch.ByteStorage", at::kByte},   {"torch.BoolStorage", at::kBool},
  };
  const auto it = kTypes.find(global);
  if (it == kTypes.end()) throw PickleError("unsupported storage type " + global);
  return it->second;
}

ValuePtr read_pickle(std::string_view bytes, const StorageLoader& load_storage,
                     const DecodeLimits& limits) {
  std::map<std::string, torch::Tensor> loaded;
  StorageLoader once = [&](const std::string& key, at::ScalarType dtype, int64_t numel) {
    auto it = loaded.find(key);
    if (it == loaded.end()) it = loaded.emplace(key, load_storage(key, dtype, numel)).first;
    if (it->second.scalar_type() != dtype || it->second.numel() != numel) {
      throw PickleError("storage " + key + " is named with two types or sizes");
    }
    return it->second;
  };
  Machine machine(once, limits);
  return machine.run(bytes);
}

}  // namespace dptrain::serialize
