#!/usr/bin/env bash
# Every device call sends the whole tracked tree, and the tree is mostly the committed drafter
# (32 MB). `pack` takes it out of the working tree and cuts it, with the GGUF and the
# completions that scripts/gpu/data.sh restored under models/data/ (git-ignored, so they never
# travel by themselves), into .gpu-carry/g1, g2, ... that fill a call each (3 calls for
# ~145 MB); `restore` brings the drafter back from HEAD. On the device,
# `unpack` (stage_c.sh with BULK=1) rebuilds them under .gpu-carry/bulk/, git-ignored, which
# pipeline.sh reads with BULK_DIR set.
#   bash ../shared/scripts/split-model-for-gpu.sh    # .gpu-carry/part1, part2, wheels
#   bash scripts/gpu/data.sh restore                  # models/data/ from git history
#   bash scripts/gpu/bulk.sh pack                     # prints the pieces and the calls
#   ... call A (g1 + wheels), B (g2, ...), C with the last piece: BULK=1 ... stage_c.sh
#   bash scripts/gpu/bulk.sh restore                  # before anything is committed
set -euo pipefail
PATHS=(models/assets/smollm2-dflash)   # tracked; models/data/ is restored, not tracked
case "${1:-}" in
pack)
  git diff --quiet HEAD -- "${PATHS[@]}" && [ -z "$(git ls-files --others --exclude-standard "${PATHS[@]}")" ] ||
    { echo "uncommitted changes under ${PATHS[*]}: commit them first (restore brings back HEAD's)" >&2; exit 1; }
  [ -d models/data/smollm2-dflash ] ||
    echo "bulk: no models/data/ (bash scripts/gpu/data.sh restore): no carried completions" >&2
  src=(.gpu-carry/part1/part_aa .gpu-carry/part2/part_ab)
  [ -f "${src[0]}" ] && [ -f "${src[1]}" ] || { echo "run ../shared/scripts/split-model-for-gpu.sh first" >&2; exit 1; }
  mapfile -t files < <(git ls-files "${PATHS[@]}")
  mapfile -t data < <(find models/data -type f -name '*.jsonl.xz' 2>/dev/null | sort)
  rm -rf .gpu-carry/stage && mkdir -p .gpu-carry/stage
  cat "${src[@]}" > .gpu-carry/stage/smollm2.gguf
  tar cf .gpu-carry/stage/bulk.tar "${files[@]}" "${data[@]}" -C .gpu-carry/stage smollm2.gguf
  rm -f .gpu-carry/stage/smollm2.gguf "${files[@]}"
  echo "bulk: ${#files[@]} tracked files out of the tree, + ${#data[@]} data files and the GGUF," \
       "one tar (BULK=1 stage_c.sh with the last piece)"
  bash scripts/gpu/pieces.sh .gpu-carry/stage/bulk.tar    # its sha256 is the tar's
  rm -f .gpu-carry/stage/bulk.tar
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
