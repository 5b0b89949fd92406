# Host-side helpers of scripts/check_torch2.sh: find the Debian archive, make the trixie chroot,
# mount and unmount what it needs, copy the working tree in, and run a command inside. Sourced;
# expects root, base and chroot_dir to be set (and mirror, before make_chroot).

mounted=()  # mount points in the order they were made; unmount_all undoes them in reverse
child=""    # the process group running inside the chroot, stopped on exit

# The Debian archive this machine installs from: the first apt source (one-line *.list, or deb822
# *.sources) that serves the release it runs (VERSION_CODENAME of /etc/os-release), which carries
# trixie as well. No host is written into the project.
apt_mirror() {
  local codename uri files=() f
  codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [[ -f $f ]] && files+=("$f")
  done
  [[ ${#files[@]} -gt 0 ]] && uri=$(awk -v want="$codename" '
    FNR == 1 { uris = ""; suites = "" }
    /^deb[ \t]/ {  # deb [options] URI suite components
      n = split($0, f, /[ \t]+/); i = 2
      if (f[i] ~ /^\[/) { while (i <= n && f[i] !~ /\]$/) i++; i++ }
      if (f[i + 1] == want) { print f[i]; exit }
    }
    /^URIs:/ { uris = $2 }
    /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == want && uris != "") { print uris; exit } }
    /^$/ { uris = "" }
  ' "${files[@]}")
  if [[ -z $uri ]]; then
    echo "check_torch2: no apt source serves $codename here; set DEBIAN_MIRROR to a Debian archive" >&2
    return 1
  fi
  echo "$uri"
}

# Makes DIR (mode 700) if it is missing, and refuses one that is a link, is another user's, or is
# writable by anyone else.
private_dir() {
  local dir=$1
  (umask 077 && mkdir -p "$dir")
  if [[ -L $dir || ! -O $dir ]] || [[ $(stat -c %a "$dir") =~ [2367].$|[2367]$ ]]; then
    echo "check_torch2: $dir must be a folder of your own that nobody else can write to" >&2
    exit 1
  fi
}

ensure_debootstrap() {  # sets debootstrap_cmd: the host's debootstrap, or one unpacked under $base
  if command -v debootstrap >/dev/null; then
    debootstrap_cmd=(debootstrap)
    return
  fi
  local tools=$base/debootstrap
  if [[ ! -x $tools/usr/sbin/debootstrap ]]; then
    # Private package lists, so the host's own apt state stays as it is.
    local apt=(-o Dir::State::Lists="$tools/lists" -o Dir::Cache="$tools/cache")
    mkdir -p "$tools/lists/partial" "$tools/cache/archives/partial"
    apt-get "${apt[@]}" update -qq >&2
    (cd "$tools" && apt-get "${apt[@]}" download debootstrap >&2)
    dpkg-deb -x "$tools"/debootstrap_*.deb "$tools"
  fi
  debootstrap_cmd=(env DEBOOTSTRAP_DIR="$tools/usr/share/debootstrap" "$tools/usr/sbin/debootstrap")
}

mount_one() {  # mount_one TARGET MOUNT-ARGS...
  local target=$1
  shift
  mount "$@" "$target"
  mounted+=("$target")
}

mount_all() {  # mount_all DIR: what builds and tests need inside DIR
  local dir=$1
  mount_one "$dir/proc" -t proc proc
  mount_one "$dir/sys" -t sysfs sysfs
  mount_one "$dir/dev" --bind /dev
  mount_one "$dir/dev/pts" --bind /dev/pts
  mount_one "$dir/dev/shm" -t tmpfs tmpfs
}

unmount_all() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    # A process that outlived its kill may still hold a mount: detach it lazily then.
    umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" || true
  done
  mounted=()
}

stop_child() {
  [[ -n $child ]] && kill -0 "$child" 2>/dev/null || return 0
  kill -TERM -- "-$child" 2>/dev/null || true
  local i
  for ((i = 0; i < 50; i++)); do
    kill -0 "$child" 2>/dev/null || return 0
    sleep 0.2
  done
  kill -KILL -- "-$child" 2>/dev/null || true
}

in_chroot() {  # in_chroot SCRIPT ARGS...: runs the tree's copy of SCRIPT (a host path) inside
  local script=/work/dptrain/${1#"$root/"}
  shift
  # A process group of its own, so that an interrupted run can stop everything it started.
  setsid chroot "$chroot_dir" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash "$script" "$@" &
  child=$!
  local status=0
  wait "$child" || status=$?
  child=""
  return "$status"
}

# The working tree into /work/dptrain. A file whose content changed gets a new modification time
# and an unchanged one keeps the copy it has, so that ninja rebuilds exactly what changed: copying
# with the tree's own times would hide an edit made before the last build there finished.
copy_tree() {
  local dest=$chroot_dir/work/dptrain staging=$chroot_dir/work/incoming
  safe_remove "$staging"
  mkdir -p "$staging" "$dest"
  (cd "$root" && git ls-files -z -co --exclude-standard | while IFS= read -r -d '' f; do
    [[ -e $f ]] && printf '%s\0' "$f"  # a tracked file deleted in the tree is not copied
  done | tar --null -T - -cf -) | tar -xf - -C "$staging"
  (cd "$staging" && find . -type f -print0) | while IFS= read -r -d '' f; do
    if ! cmp -s "$staging/$f" "$dest/$f"; then
      mkdir -p "$(dirname "$dest/$f")"
      cp "$staging/$f" "$dest/$f"
    fi
  done
  (cd "$dest" && find . -type f -print0) | while IFS= read -r -d '' f; do
    [[ -e $staging/$f ]] || rm -f "$dest/$f"
  done
  rm -rf "$staging"
}

safe_remove() {  # rm -rf DIR, refused while anything is mounted beneath it (a bound /dev, say)
  if findmnt -rn -o TARGET | grep -q "^$1\(/\|$\)"; then
    echo "check_torch2: something is still mounted under $1; unmount it first (findmnt | grep $1)" >&2
    return 1
  fi
  rm -rf "$1"
}

make_chroot() {  # make_chroot MODE: debootstrap, then the packages; ready only when all of it worked
  if [[ ! -f $chroot_dir/.debootstrap-done ]]; then
    local components=main partial=$chroot_dir.partial
    [[ $1 == cuda ]] && components=main,contrib,non-free
    ensure_debootstrap
    safe_remove "$partial"
    safe_remove "$chroot_dir"
    "${debootstrap_cmd[@]}" --variant=minbase --components="$components" trixie "$partial" \
      "$mirror" >&2
    touch "$partial/.debootstrap-done"
    mv "$partial" "$chroot_dir"
  fi
  mount_all "$chroot_dir"
  copy_tree
  in_chroot "$root/scripts/torch2/inside.sh" setup "$1"
  touch "$chroot_dir/.dptrain-ready"
}
