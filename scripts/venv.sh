#!/usr/bin/env bash
# The project's Python venv for the peers the tests and benches compare dptrain with (PyPI
# packages that Debian 12 lacks or has too old): made with Debian's python3 (python3-venv) in
# .venv/ (or DPTRAIN_VENV), never in the system Python, and never used by dptrain itself.
#
#   scripts/venv.sh [GROUP...]     tensorboard (the suite's TensorBoard reader; the default)
#
# Prints the venv's python on stdout. A package already importable is not fetched again. When
# PyPI does not answer, says so and exits 0 (the tests that need the package then skip, saying
# why), unless DPTRAIN_REQUIRE_VENV=1 (CI), where it exits 1.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${DPTRAIN_VENV:-$root/.venv}
groups=("${@:-tensorboard}")

declare -A packages=(
  [tensorboard]="tensorboard"
)
declare -A imports=(
  [tensorboard]="tensorboard.backend.event_processing.data_provider"
)

give_up() {
  echo "venv: $1" >&2
  [[ ${DPTRAIN_REQUIRE_VENV:-0} == 1 ]] && exit 1
  echo "venv: going on without it; the tests that need it skip, saying why" >&2
  exit 0
}

"$root/scripts/setup.sh" python3-venv
if [[ -e $venv && ! -O $venv ]]; then
  give_up "$venv is not this user's: refusing to run what is in it"
fi
if [[ ! -x $venv/bin/python ]]; then
  /usr/bin/python3 -m venv "$venv" >&2 || give_up "python3 -m venv $venv failed"
fi
for group in "${groups[@]}"; do
  [[ -n ${packages[$group]:-} ]] || { echo "venv: no group '$group'" >&2; exit 2; }
  "$venv/bin/python" -c "import ${imports[$group]}" 2>/dev/null && continue
  echo "venv: installing ${packages[$group]} into $venv" >&2
  # shellcheck disable=SC2086  # a group is several package names
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --timeout 30 --retries 2 \
    ${packages[$group]} >&2 ||
    give_up "pip could not install ${packages[$group]} (does this machine reach PyPI?)"
done
echo "$venv/bin/python"
