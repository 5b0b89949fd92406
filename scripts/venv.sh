#!/usr/bin/env bash
# The project's Python venv for the peers the tests and benches compare dptrain with (PyPI
# packages that Debian 12 lacks or has too old): made with Debian's python3 (python3-venv) in
# .venv/ (or DPTRAIN_VENV), never in the system Python, and never used by dptrain itself.
#
#   scripts/venv.sh [GROUP...]     tensorboard  the suite's TensorBoard readers (the default)
#                                  torch        PyPI's torch 2.x (its CUDA build, about 5 GB) and
#                                               numpy: the suite's PyTorch tests then load
#                                               dptrain's files with it too
#                                  peers        torch 2.x, torchvision, Lightning and the d2l
#                                               package: scripts/bench_peers.sh's peers
#
# Prints the venv's python on stdout. A package already importable is not fetched again. When
# PyPI (or apt, for python3-venv) does not answer, says so and exits 0 (the tests that need the
# package then skip, saying why), unless DPTRAIN_REQUIRE_VENV=1 (CI), where it exits 1.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$(realpath -m -s -- "${DPTRAIN_VENV:-$root/.venv}")  # absolute: tests run elsewhere
groups=("${@:-tensorboard}")

# TensorBoard is pinned to the minor version the suite was written against (its readers' APIs
# are not a stable interface); torch follows PyPI, as its users do, from the first 2.x whose
# torch.load defaults to weights_only.
declare -A packages=(
  [tensorboard]="tensorboard==2.21.*"
  [torch]="torch>=2.6 numpy"
  [peers]="torch>=2.6 numpy torchvision lightning matplotlib matplotlib-inline pandas requests ipython scipy"
)
# Installed after its group, without dependencies: d2l 1.0.3 pins numpy 1.23.5 (and jupyter,
# pandas, scipy ...), which torch 2.x's numpy bridge cannot use. Its own code runs on the newer
# versions the group above installs; the book's code needs nothing else.
declare -A unpinned=(
  [peers]="d2l==1.0.3"
)
declare -A imports=(
  [tensorboard]="tensorboard.backend.event_processing.data_provider, tensorboard_data_server"
  [torch]="torch, numpy"
  [peers]="torch, torchvision, lightning, d2l.torch"
)

give_up() {
  echo "venv: $1" >&2
  [[ ${DPTRAIN_REQUIRE_VENV:-0} == 1 ]] && exit 1
  echo "venv: going on without it; the tests that need it skip, saying why" >&2
  exit 0
}

# The venv's python, isolated (-I): neither the caller's folder nor PYTHON* variables reach its
# module path, so a planted tensorboard/ or pip/ where the command was typed never runs.
python() { "$venv/bin/python" -I "$@"; }

# Ours alone: the folder, bin/ and pyvenv.cfg this user's and writable by nobody else, no link
# among them, and bin/python Debian's python3. The suite checks the same before running it
# (tests/support/fixtures.cpp, venv_python).
trusted() {
  local path
  for path in "$venv" "$venv/bin" "$venv/pyvenv.cfg"; do
    [[ -e $path && ! -L $path && -O $path ]] || return 1
    [[ -z $(find "$path" -maxdepth 0 -perm /022) ]] || return 1
  done
  [[ $(realpath -- "$venv/bin/python") == /usr/bin/python3* ]]
}

# A venv of Debian's python3 with a working pip; a half-made one (an interrupted first run) is
# made again.
usable() {
  trusted && grep -qx 'home = /usr/bin' "$venv/pyvenv.cfg" && python -m pip --version >/dev/null 2>&1
}

imports_all() { python -c "import ${imports[$1]}" >/dev/null 2>&1; }
# --no-input: an index that asks for a password fails instead of waiting for one.
pip_install() {
  python -m pip install --quiet --disable-pip-version-check --no-input --timeout 15 --retries 1 \
    "$@" >&2
}

for group in "${groups[@]}"; do
  [[ -n $group && -v packages[$group] ]] || { echo "venv: no group '$group'" >&2; exit 2; }
done
"$root/scripts/setup.sh" python3-venv || give_up "could not install Debian's python3-venv"
if [[ -L $venv || (-e $venv && ! -O $venv) ]]; then
  give_up "$venv is a link or not this user's: refusing to use it (remove it: rm -rf '$venv')"
fi
if ! usable; then
  [[ ! -e $venv || -f $venv/pyvenv.cfg ]] ||
    give_up "$venv exists and is no venv: refusing to write into it"
  (umask 022 && /usr/bin/python3 -m venv --clear "$venv" >&2) ||
    give_up "python3 -m venv $venv failed"
  usable || give_up "$venv is not a venv of this user's Debian python3 with pip"
fi
for group in "${groups[@]}"; do
  imports_all "$group" && continue
  echo "venv: installing ${packages[$group]} into $venv" >&2
  # shellcheck disable=SC2086  # a group is several package names
  pip_install ${packages[$group]} ||
    give_up "pip could not install ${packages[$group]} (does this machine reach PyPI?)"
  if [[ -v unpinned[$group] ]]; then
    pip_install --no-deps "${unpinned[$group]}" ||
      give_up "pip could not install ${unpinned[$group]} (does this machine reach PyPI?)"
  fi
  # pip's settings (PIP_TARGET, a pip.conf's prefix) can put packages elsewhere: look again.
  imports_all "$group" || give_up "pip installed ${packages[$group]}, but not into $venv"
done
echo "$venv/bin/python"
