#!/bin/sh
# Makes empty stand-ins for the OpenCV and FFmpeg libraries that LibTorch names as dependencies
# without using them, when that is safe; cmake/unused_torch_libraries.cmake says why.
#
#   unused_torch_libraries.sh OUT_DIR CXX NM OBJDUMP TORCH_LIBRARY...
#
# Prints the sonames it made stand-ins for in OUT_DIR, one a line. When LibTorch names none it
# prints nothing; when it names some but keeping them out is not safe, it prints nothing, removes
# OUT_DIR and writes one line on standard error: "used: WHY" where LibTorch's libraries need them,
# "unchecked: WHY" where the check itself could not run. Safe means, for a program linked against
# LibTorch as dptrain is, with the stand-ins first in its DT_RPATH:
# 1. it starts with LD_BIND_NOW=1 (the loader binds every symbol of every library before main(),
#    so one that only a library it no longer loads defined would stop it), and the loader takes
#    each stand-in;
# 2. no library it still loads refers, even weakly, to a symbol that only the libraries it no
#    longer loads define (nm -D): a weak reference LD_BIND_NOW would leave null.
# OUT_DIR is kept when it holds the same stand-ins, and otherwise replaced by renames: a dptrain
# starting meanwhile finds all the stand-ins or none (then the real libraries), never some of
# them, which the real ones left could not bind.
set -eu
export LC_ALL=C  # one order for ls and sort
out=$1 cxx=$2 nm=$3 objdump=$4
shift 4
work=$(mktemp -d)
next=$out.next.$$
trap 'rm -rf "$work" "$next"' EXIT

# Moves OUT_DIR aside, then removes it.
discard_out() {
  if [ -e "$out" ]; then
    mv -T "$out" "$out.old.$$"
    rm -rf "$out.old.$$"
  fi
}
# refuse used|unchecked WHY
refuse() {
  echo "$1: $2" >&2
  discard_out
  exit 0
}

for lib in "$@"; do
  "$objdump" -p "$lib" >>"$work/dynamic" || refuse unchecked "$objdump could not read $lib"
done
awk '$1 == "NEEDED" { print $2 }' "$work/dynamic" |
  grep -E '^lib(opencv_[a-z0-9_]+|av(codec|device|filter|format|util)|sw(resample|scale))\.so\.[0-9]+$' |
  sort -u >"$work/sonames" || true
if [ ! -s "$work/sonames" ]; then
  discard_out
  exit 0
fi

mkdir "$next"
while read -r soname; do
  "$cxx" -shared -nostdlib -x c++ /dev/null -Wl,-soname,"$soname" -o "$next/$soname" ||
    refuse unchecked "$cxx could not make a stand-in for $soname"
done <"$work/sonames"

# The same program twice: with the stand-ins (as dptrain) and without.
printf 'int main() { return 0; }\n' >"$work/probe.cpp"
{ "$cxx" "$work/probe.cpp" -o "$work/with" -Wl,--no-as-needed "$@" \
  -Wl,--disable-new-dtags,-rpath,"$next" &&
  "$cxx" "$work/probe.cpp" -o "$work/without" -Wl,--no-as-needed "$@"; } 2>"$work/link.err" ||
  refuse used "a program linked against LibTorch does not link with the stand-ins: $(
    head -c 300 "$work/link.err" | tr '\n' ' ')"
LD_BIND_NOW=1 "$work/with" >/dev/null 2>"$work/with.err" ||
  refuse used "with the stand-ins a LibTorch program does not start: $(head -c 300 "$work/with.err" | tr '\n' ' ')"
# The loader's list: "soname => path (address)"; the paths, one a line.
loaded() {
  LD_TRACE_LOADED_OBJECTS=1 "$1" | sed -n 's/^[[:space:]]*[^ ]* => \(\/.*\) (0x[0-9a-f]*)$/\1/p' |
    sort -u
}
loaded "$work/with" >"$work/kept" && loaded "$work/without" >"$work/all" ||
  refuse unchecked "the loader could not list a LibTorch program's libraries"
while read -r soname; do
  grep -qxF "$next/$soname" "$work/kept" || refuse used "the loader does not take the stand-in $soname"
done <"$work/sonames"
grep -vF "$next/" "$work/kept" >"$work/still" || true
comm -23 "$work/all" "$work/kept" >"$work/dropped"

symbols() { awk '$NF != "" { print $NF }' | sed 's/@.*//' | sort -u; }
{ tr '\n' '\0' <"$work/still" | xargs -0 "$nm" -D --undefined-only | symbols >"$work/imports" &&
  tr '\n' '\0' <"$work/still" | xargs -0 "$nm" -D --defined-only | symbols >"$work/kept_exports" &&
  tr '\n' '\0' <"$work/dropped" | xargs -0 "$nm" -D --defined-only | symbols \
    >"$work/dropped_exports"; } 2>"$work/nm.err" ||
  refuse unchecked "$nm could not read the libraries: $(head -c 300 "$work/nm.err" | tr '\n' ' ')"
comm -23 "$work/dropped_exports" "$work/kept_exports" >"$work/only_dropped"
used=$(comm -12 "$work/imports" "$work/only_dropped" | head -3 | tr '\n' ' ')
[ -z "$used" ] || refuse used "libraries that stay loaded refer to symbols only they define ($used...)"

if [ -d "$out" ] && [ "$(ls "$out")" = "$(cat "$work/sonames")" ]; then
  cat "$work/sonames"  # the same stand-ins: a dptrain starting now keeps finding them
  exit 0
fi
discard_out
mv -T "$next" "$out" || refuse unchecked "another configure made $out meanwhile: configure again"
cat "$work/sonames"
