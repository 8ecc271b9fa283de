#!/usr/bin/env bash
# Device-side A/B of kernel sets made by bench/make_bench_kernels.sh (one
# folder per variant, all under ROOT): for each variant, config and pass, a
# float64 check with fa-run on three ragged problems (3 x 300 x 300,
# 2 x 77 x 1031, 1 x 1000 x 1000; or SHAPES); then ROUNDS rounds (default 2) of
# TFLOP/s on the standard grid (bf16/f16, T in TS, B * H = 16k / T *
# 2048 / D), the variants alternating within each (config, T, pass), so
# that every variant sees about the same clock and power state.
#
# usage: bench/ab_kernels.sh ROOT VARIANT...
#   env: CFGS   configs, dtype_dD_causal (default "bf16_d64_none
#               bf16_d64_top_left"; causal none or top_left)
#        TS     sequence lengths (default "2048 4096 8192 16384")
#        PARTS  "fwd bwd" (default), "fwd" or "bwd"
#        ROUNDS timing rounds (default 2)
#        SHAPES float64 check problems, BxTQxTK (default "3x300x300
#               2x77x1031 1x1000x1000")
#        NOCHECK variants whose float64 check is skipped (already checked)
#        FA_RUN fa-run (default /tmp/fa-rt-build/bin/fa-run, built by
#               scripts/gpu-check.sh; built here if missing)
#   The forward timed is a set's default kernel (fa_fwd_<config>_*), not its
#   short forward (fa_fwd_short_*, head dim 64, which attention_bench.py
#   launches for T <= 2048); to time that shape, make a variant with
#   --block-m 64 --block-n 128 --producer-warp false.
#   Forward timings use --no-check, backward ones --memory-only (synthetic
#   o and lse: no O(T^2) host work). With $OUT set (the device tool) the
#   check lines go to $OUT/ab-checks.txt and the timings to
#   $OUT/ab-times.txt. Exit status: 1 if any check failed, 2 on a usage or
#   build error.
set -uo pipefail
ROOT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -ge 2 ] || { sed -n '2,29p' "$0"; exit 2; }
ROOT=$1; shift
VARIANTS=("$@")
CFGS=${CFGS:-"bf16_d64_none bf16_d64_top_left"}
TS=${TS:-"2048 4096 8192 16384"}
PARTS=${PARTS:-"fwd bwd"}
ROUNDS=${ROUNDS:-2}
OUTDIR=${OUT:-$(mktemp -d)}
FA_RUN=${FA_RUN:-/tmp/fa-rt-build/bin/fa-run}

if [ ! -x "$FA_RUN" ]; then
  BUILD=$(dirname "$(dirname "$FA_RUN")")
  echo "== build: fa-run -> $BUILD"
  { cmake -G Ninja -S "$ROOT_DIR" -B "$BUILD" -DFA_ENABLE_COMPILER=OFF \
      -DCMAKE_BUILD_TYPE=Release && ninja -C "$BUILD" fa-run; } \
    >"$BUILD.log" 2>&1 || { tail -n 40 "$BUILD.log"; exit 2; }
fi

# The manifest of pass $3 (fwd or bwd) of config $2 in variant folder $1.
manifest() {
  local m
  m=$(ls "$ROOT/$1"/*/fa_"$3"_"$2"_*.manifest 2>/dev/null | head -1)
  [ -n "$m" ] || { echo "error: no $3 manifest for $2 in $ROOT/$1" >&2; exit 2; }
  echo "$m"
}
for v in "${VARIANTS[@]}"; do
  for cfg in $CFGS; do for p in $PARTS; do manifest "$v" "$cfg" "$p" >/dev/null || exit 2; done; done
done

for v in "${VARIANTS[@]}"; do
  case " ${NOCHECK:-} " in *" $v "*) continue ;; esac
  for cfg in $CFGS; do for p in $PARTS; do
    m=$(manifest "$v" "$cfg" "$p")
    for shape in ${SHAPES:-3x300x300 2x77x1031 1x1000x1000}; do
      IFS=x read -r b tq tk <<<"$shape"
      r=$("$FA_RUN" --manifest "$m" --batch "$b" --seqlen-q "$tq" --seqlen-k "$tk" \
            --repeat 1 --seed 7 2>&1 | tail -n 1)
      echo "check $v $cfg $p $b x $tq x $tk: $r"
    done
  done; done
done | tee "$OUTDIR/ab-checks.txt"
failed=$(grep -vc ': PASS$' "$OUTDIR/ab-checks.txt")
echo "checks: $(grep -c ': PASS$' "$OUTDIR/ab-checks.txt") passed, $failed failed"

for round in $(seq 1 "$ROUNDS"); do
  for cfg in $CFGS; do
    d=${cfg#*_d}; d=${d%%_*}
    for t in $TS; do
      batch=$(( 16384 / t * 2048 / d ))
      for p in $PARTS; do
        line="round $round $cfg T $t $p:"
        for v in "${VARIANTS[@]}"; do
          m=$(manifest "$v" "$cfg" "$p")
          if [ "$p" = bwd ]; then flag=--memory-only; else flag=--no-check; fi
          tf=$("$FA_RUN" --manifest "$m" --batch "$batch" --seqlen-q "$t" --seqlen-k "$t" \
                 --repeat 20 $flag 2>&1 | grep -o '[0-9.]* TFLOP/s' | cut -d' ' -f1)
          line="$line $v=${tf:-error}"
        done
        echo "$line"
      done
    done
  done
done | tee "$OUTDIR/ab-times.txt"
[ "$failed" -eq 0 ] || exit 1
