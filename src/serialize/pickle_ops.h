// Python's pickle opcodes (protocols 0 to 5), shared by the reader and the writer.
#pragma once

#include <cstdint>

namespace dptrain::serialize::pickle_ops {

// Opcodes by name, as Python's pickletools lists them; the bracket characters are spelled in
// hex so that tools matching brackets in the source are not misled.
enum Op : uint8_t {
  kMark = 0x28,  // '('

  kStop = '.',
  kPop = '0',
  kPopMark = '1',
  kDup = '2',
  kNone = 'N',
  kReduce = 'R',
  kBuild = 'b',
  kAppend = 'a',
  kAppends = 'e',
  kDict = 'd',
  kEmptyDict = 0x7d,   // '}'
  kEmptyList = 0x5d,   // ']'
  kEmptyTuple = 0x29,  // ')'
  kSetItem = 's',
  kSetItems = 'u',
  kTuple = 't',
  kBinPersId = 'Q',
  kList = 'l',
  kObj = 'o',
  kBinInt = 'J',
  kBinInt1 = 'K',
  kBinInt2 = 'M',
  kBinGet = 'h',
  kLongBinGet = 'j',
  kBinPut = 'q',
  kLongBinPut = 'r',
  kBinFloat = 'G',
  kShortBinString = 'U',
  kBinString = 'T',
  kBinUnicode = 'X',
  kShortBinBytes = 'C',
  kBinBytes = 'B',
  kGlobal = 'c',
  kInt = 'I',
  kLong = 'L',
  kFloat = 'F',
  kString = 'S',
  kUnicode = 'V',
  kPersId = 'P',
  kGet = 'g',
  kPut = 'p',
  kInst = 'i',
  kProto = 0x80,
  kNewObj = 0x81,
  kExt1 = 0x82,
  kExt2 = 0x83,
  kExt4 = 0x84,
  kTuple1 = 0x85,
  kTuple2 = 0x86,
  kTuple3 = 0x87,
  kNewTrue = 0x88,
  kNewFalse = 0x89,
  kLong1 = 0x8a,
  kLong4 = 0x8b,
  kShortBinUnicode = 0x8c,
  kBinUnicode8 = 0x8d,
  kBinBytes8 = 0x8e,
  kEmptySet = 0x8f,
  kAddItems = 0x90,
  kFrozenSet = 0x91,
  kNewObjEx = 0x92,
  kStackGlobal = 0x93,
  kMemoize = 0x94,
  kFrame = 0x95,
  kByteArray8 = 0x96,
  kNextBuffer = 0x97,
  kReadOnlyBuffer = 0x98,
};

}  // namespace dptrain::serialize::pickle_ops
