#!/bin/sh
# Makes empty stand-ins for the OpenCV and FFmpeg libraries that LibTorch names as dependencies
# without using them, when that is safe; cmake/unused_torch_libraries.cmake says why.
#
#   unused_torch_libraries.sh OUT_DIR CXX NM OBJDUMP TORCH_LIBRARY...
#
# Prints the sonames it made stand-ins for in OUT_DIR, one a line. When LibTorch names none it
# prints nothing; when it names some but keeping them out is not safe, it prints nothing, says
# why on standard error and removes OUT_DIR. Safe means, for a program linked against LibTorch as
# dptrain is, with the stand-ins first in its DT_RPATH:
# 1. it starts with LD_BIND_NOW=1 (the loader binds every symbol of every library before main(),
#    so one that only a library it no longer loads defined would stop it), and the loader takes
#    each stand-in;
# 2. no library it still loads refers, even weakly, to a symbol that only the libraries it no
#    longer loads define (nm -D): a weak reference LD_BIND_NOW would leave null.
# OUT_DIR is replaced whole, by a rename: a dptrain starting meanwhile finds all the stand-ins
# or none (then the real libraries), never some of them, which the real ones left could not bind.
set -eu
out=$1 cxx=$2 nm=$3 objdump=$4
shift 4
work=$(mktemp -d)
next=$out.next.$$
trap 'rm -rf "$work" "$next"' EXIT

refuse() {
  echo "LibTorch's OpenCV and FFmpeg libraries stay loaded: $1" >&2
  rm -rf "$out"
  exit 0
}

for lib in "$@"; do
  "$objdump" -p "$lib" >>"$work/dynamic" || refuse "$objdump could not read $lib"
done
awk '$1 == "NEEDED" { print $2 }' "$work/dynamic" |
  grep -E '^lib(opencv_[a-z0-9_]+|av(codec|device|filter|format|util)|sw(resample|scale))\.so\.[0-9]+$' |
  sort -u >"$work/sonames" || true
if [ ! -s "$work/sonames" ]; then
  rm -rf "$out"
  exit 0
fi

mkdir "$next"
while read -r soname; do
  "$cxx" -shared -nostdlib -x c++ /dev/null -Wl,-soname,"$soname" -o "$next/$soname" ||
    refuse "$cxx could not make a stand-in for $soname"
done <"$work/sonames"

# The same program twice: with the stand-ins (as dptrain) and without.
printf 'int main() { return 0; }\n' >"$work/probe.cpp"
"$cxx" "$work/probe.cpp" -o "$work/with" -Wl,--no-as-needed "$@" \
  -Wl,--disable-new-dtags,-rpath,"$next" &&
  "$cxx" "$work/probe.cpp" -o "$work/without" -Wl,--no-as-needed "$@" ||
  refuse "a program linked against LibTorch could not be built to try the stand-ins"
LD_BIND_NOW=1 "$work/with" >/dev/null 2>"$work/with.err" ||
  refuse "with the stand-ins a LibTorch program does not start: $(head -c 300 "$work/with.err")"
# The loader's list: "soname => path (address)"; the paths, one a line.
loaded() { LD_TRACE_LOADED_OBJECTS=1 "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u; }
loaded "$work/with" >"$work/kept" && loaded "$work/without" >"$work/all" ||
  refuse "the loader could not list a LibTorch program's libraries"
while read -r soname; do
  grep -qxF "$next/$soname" "$work/kept" || refuse "the loader does not take the stand-in $soname"
done <"$work/sonames"
grep -vF "$next/" "$work/kept" >"$work/still" || true
comm -23 "$work/all" "$work/kept" >"$work/dropped"

symbols() { awk '$NF != "" { print $NF }' | sed 's/@.*//' | sort -u; }
# shellcheck disable=SC2046  # one path a line, none with spaces (the loader's own list)
{ "$nm" -D --undefined-only $(cat "$work/still") | symbols >"$work/imports" &&
  "$nm" -D --defined-only $(cat "$work/still") | symbols >"$work/kept_exports" &&
  "$nm" -D --defined-only $(cat "$work/dropped") | symbols >"$work/dropped_exports"; } \
  2>"$work/nm.err" || refuse "$nm could not read the libraries: $(head -c 300 "$work/nm.err")"
comm -23 "$work/dropped_exports" "$work/kept_exports" >"$work/only_dropped"
used=$(comm -12 "$work/imports" "$work/only_dropped" | head -3 | tr '\n' ' ')
[ -z "$used" ] || refuse "libraries that stay loaded refer to symbols only they define ($used...)"

rm -rf "$out"
mv "$next" "$out"
cat "$work/sonames"
