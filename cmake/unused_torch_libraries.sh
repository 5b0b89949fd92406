#!/bin/sh
# Makes empty stand-ins for the OpenCV and FFmpeg libraries that LibTorch names as dependencies
# without using them, when that is safe; cmake/unused_torch_libraries.cmake says why.
#
#   unused_torch_libraries.sh OUT_DIR CXX NM OBJDUMP TORCH_LIBRARY...
#
# Prints the sonames it made stand-ins for in OUT_DIR, one a line (none: OUT_DIR stays empty),
# and on standard error why it made none when LibTorch names some. Safe means:
# 1. no LibTorch library refers to a symbol that one of the real libraries defines (nm -D);
# 2. a program linked against LibTorch as dptrain is, the stand-ins first in its DT_RPATH, starts
#    with LD_BIND_NOW=1 (the loader binds every symbol of every library before main(), so one that
#    only a real library defined would stop it) and maps none of the real libraries.
set -eu
out=$1 cxx=$2 nm=$3 objdump=$4
shift 4
rm -rf "$out"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for lib in "$@"; do "$objdump" -p "$lib"; done | awk '$1 == "NEEDED" { print $2 }' |
  grep -E '^lib(opencv_[a-z0-9_]+|av(codec|device|filter|format|util)|sw(resample|scale))\.so\.[0-9]+$' |
  sort -u >"$work/sonames" || true
[ -s "$work/sonames" ] || exit 0

refuse() {
  echo "dptrain: LibTorch's OpenCV and FFmpeg libraries stay loaded: $1" >&2
  rm -rf "$out"
  mkdir -p "$out"
  exit 0
}

symbols() { awk '{ print $NF }' | sed 's/@.*//' | sort -u; }
"$nm" -D --undefined-only "$@" | symbols >"$work/imports"
while read -r soname; do
  real=$("$cxx" -print-file-name="$soname")
  [ -f "$real" ] || refuse "$soname is not where the compiler looks"
  "$nm" -D --defined-only "$real" >>"$work/exports.raw"
done <"$work/sonames"
symbols <"$work/exports.raw" >"$work/exports"
used=$(comm -12 "$work/imports" "$work/exports" | head -3 | tr '\n' ' ')
[ -z "$used" ] || refuse "LibTorch refers to symbols they define ($used...)"

while read -r soname; do
  "$cxx" -shared -nostdlib -x c++ /dev/null -Wl,-soname,"$soname" -o "$out/$soname"
done <"$work/sonames"

printf 'int main() { return 0; }\n' >"$work/probe.cpp"
"$cxx" "$work/probe.cpp" -o "$work/probe" -Wl,--no-as-needed "$@" \
  -Wl,--disable-new-dtags,-rpath,"$out" ||
  refuse "a program linked against LibTorch could not be built to try the stand-ins"
LD_BIND_NOW=1 "$work/probe" 2>"$work/probe.err" ||
  refuse "with the stand-ins a LibTorch program does not start: $(head -c 300 "$work/probe.err")"
LD_TRACE_LOADED_OBJECTS=1 "$work/probe" >"$work/loaded"
while read -r soname; do
  grep -qF "$soname => $out/$soname " "$work/loaded" || refuse "the loader does not take $out/$soname"
done <"$work/sonames"
cat "$work/sonames"
