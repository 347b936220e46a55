#!/usr/bin/env bash
# The target's completions and held-out turns (models/data/smollm2-dflash/*.jsonl.xz, ~42 MB)
# are not in the working tree: every clone and every device call would carry them, and only
# the drafter pipeline reads them. They stay in git history at the commits that
# models/DATA.tsv lists; `restore` writes them back under models/data/ (git-ignored), where
# scripts/gpu/pipeline.sh and bulk.sh read them as before. Needs a full clone (not --depth 1).
#   bash scripts/gpu/data.sh restore      # every listed set, checked against its sha256
#   bash scripts/gpu/data.sh list         # what is listed, with sizes
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
lock=models/DATA.tsv
case "${1:-}" in
restore)
  n=0
  while IFS=$'\t' read -r commit path sha bytes; do
    case "$commit" in ''|\#*) continue ;; esac
    if [ -f "$path" ] && [ "$(sha256sum "$path" | cut -c1-16)" = "$sha" ]; then continue; fi
    git cat-file -e "$commit^{commit}" 2>/dev/null ||
      { echo "commit $commit is not in this clone (a shallow clone?): git fetch --unshallow" >&2; exit 1; }
    mkdir -p "$(dirname "$path")"
    git show "$commit:$path" > "$path.tmp"
    got=$(sha256sum "$path.tmp" | cut -c1-16)
    [ "$got" = "$sha" ] || { echo "$path at $commit: sha256 $got, expected $sha" >&2; rm -f "$path.tmp"; exit 1; }
    mv "$path.tmp" "$path"; n=$((n + 1))
  done < "$lock"
  echo "restored $n file(s) under models/data/ ($(du -sh models/data | cut -f1) in all)"
  ;;
list)
  awk -F'\t' '!/^#/ && NF == 4 {printf "%-60s %6.1f MB  %s\n", $2, $4 / 1e6, substr($1, 1, 12); s += $4}
              END {printf "%d files, %.1f MB\n", NR - 1, s / 1e6}' "$lock"
  ;;
*)
  echo "usage: bash scripts/gpu/data.sh restore|list" >&2; exit 2
  ;;
esac
