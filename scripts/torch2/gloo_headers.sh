# Sourced: Gloo's headers for a build against pip's torch, which carries Gloo's library but not
# its headers, where Debian 12's libgloo-dev is older than the wheel's Gloo (another Store vtable).
# Debian unstable's libgloo-dev, checked against the archive's signed index (gpgv and Debian's
# keyring: InRelease -> Packages.xz -> the .deb's SHA256) and unpacked, not installed.
# Used by scripts/check_torch_pip.sh here and scripts/pack_device.sh for the GPU machine.
#
# The mirror is plain HTTP and may be anyone's: a file is used only as it was checked (fetched
# into a temporary name, renamed after its hash matched), an unpacked tree is named after the
# .deb's signed hash and renamed into place whole, and the index must be unstable's (another
# suite's signed index would bring Debian 12's old headers back; an expired one is said).

# fetch FILE URL SHA256: downloads URL to FILE when its SHA256 is the one given; else no FILE.
fetch() {
  local tmp
  tmp=$(mktemp "$1.XXXXXX") || return
  if ! curl -fsS --globoff --max-time 300 -o "$tmp" "$2"; then
    rm -f "$tmp"
    echo "gloo_headers: could not fetch $2" >&2
    return 1
  fi
  if [[ $(sha256sum <"$tmp" | cut -d' ' -f1) != "$3" ]]; then
    rm -f "$tmp"
    echo "gloo_headers: $2 does not match the archive's signed index" >&2
    return 1
  fi
  mv -f "$tmp" "$1"
}

# signed_release DIR MIRROR: unstable's Release, signed by Debian, in DIR/Release (an expired one
# is said, not refused).
signed_release() {
  local dir=$1 mirror=$2 tmp suite until
  tmp=$(mktemp "$dir/InRelease.XXXXXX") || return
  curl -fsS --globoff --max-time 60 -o "$tmp" "$mirror/dists/unstable/InRelease" &&
    gpgv --quiet --keyring /usr/share/keyrings/debian-archive-keyring.gpg \
      --output "$dir/Release" "$tmp" 2>/dev/null
  local status=$?
  rm -f "$tmp"
  if [[ $status -ne 0 ]]; then
    echo "gloo_headers: unstable's index from $mirror is missing or not signed by Debian" >&2
    return 1
  fi
  suite=$(awk '/^Suite:/ { print $2; exit }' "$dir/Release")
  if [[ $suite != unstable ]]; then
    echo "gloo_headers: $mirror serves another suite's signed index as unstable's" \
      "(Suite: ${suite:-none})" >&2
    return 1
  fi
  # Said, not refused: mirrors that lag (and this project's, at times) serve an expired one.
  until=$(awk -F': ' '/^Valid-Until:/ { print $2; exit }' "$dir/Release")
  if (($(date -d "$until" +%s 2>/dev/null || echo 0) < $(date +%s))); then
    echo "gloo_headers: unstable's index from $mirror expired (Valid-Until: ${until:-none});" \
      "an old index may name older Gloo headers" >&2
  fi
}

# gloo_headers CACHE MIRROR: prints the include folder of unstable's libgloo-dev, fetched once
# into CACHE (a private folder: private_dir) from MIRROR. Runs under $(...), where set -e does
# not reach: every failure returns by itself.
gloo_headers() {
  local cache=$1 mirror=$2
  local dir=$cache/index stanza name hash version
  mkdir -p "$dir" || return
  # One run at a time per cache: another checkout's run would fetch into the same names.
  exec {lock}>"$cache/.lock" && flock "$lock" || return
  signed_release "$dir" "$mirror" || return
  hash=$(awk '$3 == "main/binary-amd64/Packages.xz" && length($1) == 64 { print $1 }' "$dir/Release")
  fetch "$dir/Packages.xz" "$mirror/dists/unstable/main/binary-amd64/Packages.xz" "$hash" || return
  stanza=$(xz -dc "$dir/Packages.xz" | awk '/^Package: libgloo-dev$/ { p = 1 } p && /^$/ { exit } p')
  name=$(awk '/^Filename:/ { print $2 }' <<<"$stanza")
  hash=$(awk '/^SHA256:/ { print $2 }' <<<"$stanza")
  version=$(awk '/^Version:/ { print $2 }' <<<"$stanza")
  if [[ ! $name =~ ^pool/main/g/gloo/libgloo-dev_[A-Za-z0-9.+~:-]+_amd64\.deb$ ||
    ! $hash =~ ^[0-9a-f]{64}$ ]]; then
    echo "gloo_headers: unstable's index names no libgloo-dev .deb that this script knows" >&2
    return 1
  fi
  # Nothing says which Gloo a wheel was built with, and Debian's archive keeps no old versions
  # to pin: a newer libgloo-dev than the one checked may declare another gloo::rendezvous::Store
  # than the wheel's Gloo, which the suite's Gloo tests would show (a crash), not the build.
  local checked=0.0~git20250912.d97133a-2  # with torch 2.15.0
  [[ $version == "$checked" ]] ||
    echo "gloo_headers: unstable's libgloo-dev is $version, dptrain was checked with $checked" \
      "(torch 2.15.0): if the Gloo tests crash, these headers do not match the wheel's Gloo" >&2
  local unpacked=$cache/gloo-$hash
  if [[ ! -d $unpacked ]]; then
    local deb=$cache/libgloo-dev.deb tmp
    fetch "$deb" "$mirror/$name" "$hash" || return
    tmp=$(mktemp -d "$cache/gloo-unpacking.XXXXXX") || return
    if ! dpkg-deb -x "$deb" "$tmp"; then
      rm -rf "$tmp" "$deb"
      return 1
    fi
    rm -f "$deb"
    mv -T "$tmp" "$unpacked" || return
  fi
  [[ -f $unpacked/usr/include/gloo/rendezvous/store.h ]] ||
    { echo "gloo_headers: libgloo-dev $version has no gloo/rendezvous/store.h" >&2; return 1; }
  echo "$unpacked/usr/include"
}
