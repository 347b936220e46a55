#!/usr/bin/env bash
# Every device call sends the whole tracked tree, and the tree is mostly the committed drafter
# (32 MB) and completions (~3.5 MB more each session): with the GGUF in pieces beside it, run 14
# needed 5 calls for 98 MB, and at ~60 MB of tree no piece fits at all. `pack` takes those files
# out of the working tree and cuts them, with the GGUF, into .gpu-carry/g1, g2, ... that fill a
# call each (3 calls for ~145 MB); `restore` brings them back from HEAD. On the device,
# `unpack` (stage_c.sh with BULK=1) rebuilds them under .gpu-carry/bulk/, git-ignored, which
# pipeline.sh reads with BULK_DIR set.
#   bash ../shared/scripts/split-model-for-gpu.sh    # .gpu-carry/part1, part2, wheels
#   bash scripts/gpu/bulk.sh pack                     # prints the pieces and the calls
#   ... call A (g1 + wheels), B (g2, ...), C with the last piece: BULK=1 ... stage_c.sh
#   bash scripts/gpu/bulk.sh restore                  # before anything is committed
set -euo pipefail
PATHS=(models/assets/smollm2-dflash models/data/smollm2-dflash)
limit=67108864                                     # 64 MiB per call
margin=${MARGIN:-1000000}                          # headroom for files written before the call

travelling_bytes() {                               # what a call sends besides its carry
  # (tracked files taken out by pack are listed too: stat skips them, and its status with them)
  git ls-files -z --cached --others --exclude-standard | { xargs -0 stat -c %s 2>/dev/null || true; } |
    awk '{s += $1} END {print s + 0}'
}

case "${1:-}" in
pack)
  git diff --quiet HEAD -- "${PATHS[@]}" && [ -z "$(git ls-files --others --exclude-standard "${PATHS[@]}")" ] ||
    { echo "uncommitted changes under ${PATHS[*]}: commit them first (restore brings back HEAD's)" >&2; exit 1; }
  src=(.gpu-carry/part1/part_aa .gpu-carry/part2/part_ab)
  [ -f "${src[0]}" ] && [ -f "${src[1]}" ] || { echo "run ../shared/scripts/split-model-for-gpu.sh first" >&2; exit 1; }
  mapfile -t files < <(git ls-files "${PATHS[@]}")
  rm -rf .gpu-carry/g[0-9]* .gpu-carry/x_* .gpu-carry/stage && mkdir -p .gpu-carry/stage
  cat "${src[@]}" > .gpu-carry/stage/smollm2.gguf
  tar cf .gpu-carry/stage/bulk.tar "${files[@]}" -C .gpu-carry/stage smollm2.gguf
  rm -f .gpu-carry/stage/smollm2.gguf "${files[@]}"
  tree=$(travelling_bytes)
  wheels=$(du -cb .gpu-carry/wheels | tail -n 1 | cut -f1)
  piece=$(( limit - tree - wheels - margin ))
  [ "$piece" -gt 4000000 ] || { echo "tree is $tree bytes even without the bulk: no room" >&2; exit 1; }
  split -b "$piece" -d -a 1 .gpu-carry/stage/bulk.tar .gpu-carry/x_
  i=1; for f in .gpu-carry/x_*; do mkdir -p .gpu-carry/g$i && mv "$f" .gpu-carry/g$i/; i=$((i + 1)); done
  [ "$i" -le 10 ] || { echo "more than 9 pieces: stage_c.sh's glob orders g10 before g2" >&2; exit 1; }
  sha256sum .gpu-carry/stage/bulk.tar | cut -c1-16 > .gpu-carry/stage/bulk.sha
  rm -f .gpu-carry/stage/bulk.tar
  echo "bulk: ${#files[@]} files + the GGUF out of the tree (now $tree bytes), pieces of $piece bytes:" \
       "$((i - 1)) calls (A carries g1 + wheels, then one call per piece, BULK=1 stage_c.sh with" \
       "the last); tar sha256 $(cat .gpu-carry/stage/bulk.sha)"
  ;;
restore)
  git checkout HEAD -- "${PATHS[@]}"
  git status --short "${PATHS[@]}"
  ;;
unpack)                                            # on the device, after the last piece came
  mkdir -p .gpu-carry/bulk
  cat .gpu-carry/g*/x_* | tee >(sha256sum | cut -c1-16 >&2) | tar xf - -C .gpu-carry/bulk
  ls .gpu-carry/bulk/models/data/smollm2-dflash | tr '\n' ' '; echo
  ;;
*)
  echo "usage: bash scripts/gpu/bulk.sh pack|restore|unpack" >&2; exit 2
  ;;
esac
