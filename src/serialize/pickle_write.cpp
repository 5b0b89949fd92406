// Python's pickler at protocol 2, for the values of serialize/pickle.h: what torch.save writes.
#include <cstring>
#include <map>

#include "serialize/little_endian.h"
#include "serialize/pickle.h"
#include "serialize/pickle_ops.h"

namespace dptrain::serialize {
namespace {

using namespace pickle_ops;

std::string storage_name(at::ScalarType dtype) {
  for (const char* name :
       {"Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Char", "Byte", "Bool"}) {
    const std::string global = std::string("torch.") + name + "Storage";
    if (storage_dtype(global) == dtype) return std::string(name) + "Storage";
  }
  throw PickleError(std::string("no storage type for ") + c10::toString(dtype));
}

class Writer {
 public:
  explicit Writer(const StorageSaver& add_storage) : add_storage_(add_storage) {
    op(kProto);
    out_.push_back(2);
  }

  std::string finish() {
    op(kStop);
    return std::move(out_);
  }

  void value(const Value& v) {
    switch (v.kind) {
      case Value::Kind::kNone:
        return op(kNone);
      case Value::Kind::kBool:
        return op(v.integer != 0 ? kNewTrue : kNewFalse);
      case Value::Kind::kInt:
        return integer(v.integer);
      case Value::Kind::kFloat:
        return real(v.real);
      case Value::Kind::kString:
        return text(v.text);
      case Value::Kind::kTuple:
        op(kMark);
        for (const auto& item : v.items) value(*item);
        return op(kTuple);
      case Value::Kind::kList:
        op(kEmptyList);
        if (v.items.empty()) return;
        op(kMark);
        for (const auto& item : v.items) value(*item);
        return op(kAppends);
      case Value::Kind::kDict:
        return dict(v);
      case Value::Kind::kTensor:
        return tensor(v.tensor);
      case Value::Kind::kGlobal:
        break;
    }
    throw PickleError("a global cannot be written as a value");
  }

 private:
  void op(uint8_t code) { out_.push_back(static_cast<char>(code)); }

  void little_endian(uint64_t value, int width) { append_le(out_, value, width); }

  void global(const std::string& module, const std::string& name) {
    op(kGlobal);
    out_ += module + "\n" + name + "\n";
  }

  void text(const std::string& s) {
    op(kBinUnicode);
    little_endian(s.size(), 4);
    out_ += s;
  }

  void integer(int64_t i) {
    if (i >= 0 && i < 256) {
      op(kBinInt1);
      little_endian(static_cast<uint64_t>(i), 1);
    } else if (i >= INT32_MIN && i <= INT32_MAX) {
      op(kBinInt);
      little_endian(static_cast<uint32_t>(static_cast<int32_t>(i)), 4);
    } else {
      op(kLong1);
      little_endian(8, 1);
      little_endian(static_cast<uint64_t>(i), 8);
    }
  }

  void real(double d) {  // big-endian IEEE double
    op(kBinFloat);
    uint64_t bits = 0;
    std::memcpy(&bits, &d, sizeof bits);
    for (int i = 7; i >= 0; --i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  }

  void int_tuple(c10::IntArrayRef values) {
    op(kMark);
    for (int64_t v : values) integer(v);
    op(kTuple);
  }

  void empty_ordered_dict() {
    global("collections", "OrderedDict");
    op(kEmptyTuple);
    op(kReduce);
  }

  void dict(const Value& v) {
    if (v.ordered) {
      empty_ordered_dict();
    } else {
      op(kEmptyDict);
    }
    if (v.entries.empty()) return;
    op(kMark);
    for (const auto& [key, item] : v.entries) {
      value(*key);
      value(*item);
    }
    op(kSetItems);
  }

  // _rebuild_tensor_v2(('storage', torch.XStorage, key, 'cpu', numel), 0, size, stride, False,
  // OrderedDict())
  void tensor(const torch::Tensor& t) {
    const torch::Tensor host = t.detach().to(torch::kCPU).contiguous();
    const std::string key = add_storage_(host);
    global("torch._utils", "_rebuild_tensor_v2");
    op(kMark);
    op(kMark);
    text("storage");
    global("torch", storage_name(host.scalar_type()));
    text(key);
    text("cpu");
    integer(host.numel());
    op(kTuple);
    op(kBinPersId);
    integer(0);
    int_tuple(host.sizes());
    int_tuple(host.strides());
    op(kNewFalse);
    empty_ordered_dict();
    op(kTuple);
    op(kReduce);
  }

  const StorageSaver& add_storage_;
  std::string out_;
};

}  // namespace

std::string write_pickle(const Value& root, const StorageSaver& add_storage) {
  Writer w(add_storage);
  w.value(root);
  return w.finish();
}

}  // namespace dptrain::serialize
