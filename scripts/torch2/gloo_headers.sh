# Sourced: Gloo's headers for a build against pip's torch, which carries Gloo's library but not
# its headers, where Debian 12's libgloo-dev is older than the wheel's Gloo (another Store vtable).
# Debian unstable's libgloo-dev, checked against the archive's signed index (gpgv and Debian's
# keyring: InRelease -> Packages.xz -> the .deb's SHA256) and unpacked, not installed.
# Used by scripts/check_torch_pip.sh here and scripts/pack_device.sh for the GPU machine.

# fetch FILE URL SHA256: downloads URL to FILE and checks its hash; a wrong one is removed.
fetch() {
  curl -fsS --max-time 300 -o "$1" "$2" || { echo "gloo_headers: could not fetch $2" >&2; return 1; }
  [[ $(sha256sum <"$1" | cut -d' ' -f1) == "$3" ]] && return
  rm -f "$1"
  echo "gloo_headers: $2 does not match the archive's signed index" >&2
  return 1
}

# gloo_headers CACHE MIRROR: prints the include folder of unstable's libgloo-dev, fetched once
# into CACHE (a private folder: private_dir) from MIRROR.
gloo_headers() {
  local cache=$1 mirror=$2
  local dir=$cache/index stanza name hash
  mkdir -p "$dir"
  curl -fsS --max-time 60 -o "$dir/InRelease" "$mirror/dists/unstable/InRelease" &&
    gpgv --quiet --keyring /usr/share/keyrings/debian-archive-keyring.gpg \
      --output "$dir/Release" "$dir/InRelease" 2>/dev/null ||
    { echo "gloo_headers: unstable's index from $mirror is missing or not signed by Debian" >&2; return 1; }
  hash=$(awk '$3 == "main/binary-amd64/Packages.xz" && length($1) == 64 { print $1 }' "$dir/Release")
  # Under $(...), where set -e does not reach: every failure returns by itself.
  fetch "$dir/Packages.xz" "$mirror/dists/unstable/main/binary-amd64/Packages.xz" "$hash" || return
  stanza=$(xz -dc "$dir/Packages.xz" | awk '/^Package: libgloo-dev$/ { p = 1 } p && /^$/ { exit } p')
  name=$(awk '/^Filename:/ { print $2 }' <<<"$stanza")
  hash=$(awk '/^SHA256:/ { print $2 }' <<<"$stanza")
  [[ -n $name && -n $hash ]] || { echo "gloo_headers: unstable has no libgloo-dev" >&2; return 1; }
  local unpacked=$cache/gloo-$(basename "$name" .deb)
  if [[ ! -f $unpacked/usr/include/gloo/rendezvous/store.h ]]; then
    fetch "$cache/libgloo-dev.deb" "$mirror/$name" "$hash" || return
    rm -rf "$unpacked"
    dpkg-deb -x "$cache/libgloo-dev.deb" "$unpacked" || return
    rm -f "$cache/libgloo-dev.deb"
  fi
  echo "$unpacked/usr/include"
}
