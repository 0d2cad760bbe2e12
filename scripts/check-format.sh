#!/usr/bin/env bash
# Checks that the C++ sources (*.h *.cpp *.cu *.cuh under src include tests check tools examples
# bench) are formatted as the repository's .clang-format says, with Debian 12's clang-format 14
# (other versions format some constructs differently). Changes nothing; prints the files that
# differ and exits 1 if there are any.
#
# usage: scripts/check-format.sh                 every tracked file
#        scripts/check-format.sh --changed BASE  files changed since git revision BASE (committed or
#                                                not, plus new files not yet added)
# environment: CLANG_FORMAT=path overrides the choice of binary.
# To fix a file: clang-format -i FILE (or clang-format-14 -i FILE).
set -euo pipefail
cd "$(dirname "$0")/.."

dirs=(src include tests check tools examples bench)
usage() { sed -n '7,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }

base=""
case "${1:-}" in
  "") ;;
  --changed) [ $# -eq 2 ] || usage; base=$2 ;;
  -h|--help) usage 0 ;;
  *) usage ;;
esac

major() { "$1" --version 2>/dev/null | sed -n 's/.*clang-format version \([0-9]*\).*/\1/p'; }
cf=${CLANG_FORMAT:-}
if [ -z "$cf" ]; then
  if command -v clang-format >/dev/null 2>&1 && [ "$(major clang-format)" = 14 ]; then
    cf=clang-format
  elif command -v clang-format-14 >/dev/null 2>&1; then
    cf=clang-format-14
  elif command -v clang-format >/dev/null 2>&1; then
    cf=clang-format
    echo "check-format: clang-format $(major clang-format), not 14: results may differ from CI's" >&2
  else
    echo "check-format: clang-format not found (Debian: apt-get install clang-format-14)" >&2
    exit 2
  fi
fi

if [ -z "$base" ]; then
  mapfile -t files < <(git ls-files -- "${dirs[@]}")
else
  git rev-parse --verify --quiet "$base^{commit}" >/dev/null || { echo "check-format: unknown revision '$base'" >&2; exit 2; }
  mapfile -t files < <({ git diff --name-only --diff-filter=d "$base" -- "${dirs[@]}";
                         git ls-files --others --exclude-standard -- "${dirs[@]}"; } | sort -u)
fi

bad=()
checked=0
for f in "${files[@]}"; do
  case "$f" in *.h|*.cpp|*.cu|*.cuh) ;; *) continue ;; esac
  [ -f "$f" ] || continue
  checked=$((checked + 1))
  "$cf" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done

if [ ${#bad[@]} -gt 0 ]; then
  echo "check-format: ${#bad[@]} of $checked files not formatted ($cf --dry-run -Werror):"
  printf '  %s\n' "${bad[@]}"
  echo "fix with: $cf -i FILE..."
  exit 1
fi
echo "check-format: $checked files formatted"
