// Shapes the wgmma kernel cannot take are errors on the op.
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 num-warps=6" 2>&1 | FileCheck %s --check-prefix=WARPS
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 num-warps=8 block-m=64" 2>&1 | FileCheck %s --check-prefix=BLOCKM
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 block-m=512" 2>&1 | FileCheck %s --check-prefix=DERIVED
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 block-n=24" 2>&1 | FileCheck %s --check-prefix=BLOCKN
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 block-n=272" 2>&1 | FileCheck %s --check-prefix=BLOCKN272
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 num-warps=12 block-n=64" 2>&1 | FileCheck %s --check-prefix=SPLIT
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 num-warps=12" 2>&1 | FileCheck %s --check-prefix=NODEFAULT
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 num-warps=16 block-n=256" 2>&1 | FileCheck %s --check-prefix=REGS
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=65536" 2>&1 | FileCheck %s --check-prefix=SMEM
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 tma=1 producer-warp=1 num-warps=16 block-n=128" 2>&1 | FileCheck %s --check-prefix=REGSPRODUCER
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 tma=1 pingpong=1" 2>&1 | FileCheck %s --check-prefix=PINGPONG
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 tma=1 producer-warp=1 pingpong=1 num-warps=4" 2>&1 | FileCheck %s --check-prefix=PINGPONG4
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 tma=1 producer-warp=1 tiles-per-block=3" 2>&1 | FileCheck %s --check-prefix=TILES3
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 tma=1 producer-warp=1 tiles-per-block=-1" 2>&1 | FileCheck %s --check-prefix=TILESNEG
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 tma=1 tiles-per-block=2" 2>&1 | FileCheck %s --check-prefix=TILESPRODUCER
// Options of the wgmma kernels without them are errors, not ignored.
// RUN: not fa-opt %s -convert-fa-to-gpu="wgmma=1" 2>&1 | FileCheck %s --check-prefix=NOTC
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 tma=1" 2>&1 | FileCheck %s --check-prefix=NOWGMMA
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 producer-warp=1" 2>&1 | FileCheck %s --check-prefix=NOTMA
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 pingpong=1" 2>&1 | FileCheck %s --check-prefix=NOTMA
// RUN: not fa-opt %s -convert-fa-to-gpu="tiles-per-block=2" 2>&1 | FileCheck %s --check-prefix=NOTMA
// NOTC: error: convert-fa-to-gpu: wgmma=true needs tensor-cores=true (the wgmma kernels are tensor-core kernels)
// NOWGMMA: error: convert-fa-to-gpu: tma=true needs the wgmma kernels (wgmma=true)
// RUN: not fa-opt %s -convert-fa-to-gpu="persistent=1" 2>&1 | FileCheck %s --check-prefix=NOTMA
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 tma=1 persistent=1" 2>&1 | FileCheck %s --check-prefix=PERSISTENT
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 tma=1 producer-warp=1 pingpong=1 persistent=1" 2>&1 | FileCheck %s --check-prefix=PERSISTENT
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 tma=1 producer-warp=1 tiles-per-block=2 persistent=1" 2>&1 | FileCheck %s --check-prefix=PERSISTENT
// NOTMA: error: convert-fa-to-gpu: producer-warp, pingpong, tiles-per-block=2 or persistent needs the TMA wgmma kernels (wgmma=true tma=true)
// PERSISTENT: error: convert-fa-to-gpu: persistent=true needs producer-warp=true without pingpong or tiles-per-block=2
// The value is checked even where no op takes the wgmma kernel.
// RUN: not fa-opt %s -convert-fa-to-gpu="tiles-per-block=3" 2>&1 | FileCheck %s --check-prefix=TILES3
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 tma=1 producer-warp=1 tiles-per-block=2 block-n=128 stages=3 max-shared-bytes=232448" 2>&1 | FileCheck %s --check-prefix=TILESSMEM
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 tma=1 producer-warp=1 pingpong=1 tiles-per-block=2" 2>&1 | FileCheck %s --check-prefix=TILESPRODUCER
// fa-to-ptx passes its options on (wgmma is its default on sm_90a).
// RUN: not fa-opt %s --fa-to-ptx="num-warps=6" 2>&1 | FileCheck %s --check-prefix=WARPS
// The tensor-core kernels fold scale * log2(e) into one f32.
// RUN: not fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1" 2>&1 | FileCheck %s --check-prefix=SCALE

// TILES3: error: convert-fa-to-gpu: expected tiles-per-block 1 or 2, or 0 for the kernel's choice, got 3
// TILESNEG: error: convert-fa-to-gpu: expected tiles-per-block 1 or 2, or 0 for the kernel's choice, got -1
// TILESSMEM: error: 'fa.attention' op the wgmma kernel's tiles (block-m = 128, block-n = 128, 3 K/V stages, two Q buffers for tiles-per-block = 2) take 262256 bytes of workgroup memory
// TILESPRODUCER: error: 'fa.attention' op two query tiles per block (tiles-per-block = 2) need the producer warpgroup (producer-warp = true) without pingpong scheduling
// WARPS: :[[@LINE+15]]:8: error: 'fa.attention' op the wgmma kernel expects one to four warpgroups of 64 query rows: num-warps 4, 8, 12 or 16 and block-m = 16 x num-warps, got num-warps = 6 and block-m = 96
// BLOCKM: error: 'fa.attention' op the wgmma kernel expects one to four warpgroups of 64 query rows: num-warps 4, 8, 12 or 16 and block-m = 16 x num-warps, got num-warps = 8 and block-m = 64
// DERIVED: error: 'fa.attention' op the wgmma kernel expects one to four warpgroups of 64 query rows: num-warps 4, 8, 12 or 16 and block-m = 16 x num-warps, got block-m = 512 (num-warps not given: block-m / 16 = 32)
// BLOCKN: error: 'fa.attention' op the wgmma kernel expects block-n to be a multiple of 16 of at most 256, got 24
// BLOCKN272: error: 'fa.attention' op the wgmma kernel expects block-n to be a multiple of 16 of at most 256, got 272
// SPLIT: error: 'fa.attention' op the wgmma kernel expects the 8-row x 32-column groups of a K/V tile (block-n = 64, head dims 128 and 128) to split evenly over num-warps = 12
// NODEFAULT: error: 'fa.attention' op the wgmma kernel has no default block-n (128, 64 or 32) whose K/V tile splits evenly over num-warps = 12 (head dims 128 and 128); give block-n
// REGS: error: 'fa.attention' op the wgmma kernel's accumulators (block-n = 256, Dv = 128: 256 registers per thread) do not fit the 112 a thread of a 512-thread block can give them; use a smaller block-n or fewer warps
// REGSPRODUCER: error: 'fa.attention' op the wgmma kernel's accumulators (block-n = 128, Dv = 128: 160 registers per thread) do not fit the 96 a thread of a 640-thread block can give them; use a smaller block-n or fewer warps
// PINGPONG: error: 'fa.attention' op pingpong scheduling needs the producer warpgroup (producer-warp = true): the consumer warpgroups must not share a block barrier
// PINGPONG4: error: 'fa.attention' op pingpong scheduling needs two or more consumer warpgroups (num-warps 8, 12 or 16), got num-warps = 4
// SMEM: error: 'fa.attention' op the wgmma kernel's tiles (block-m = 128, block-n = 32, 2 K/V stages) take 70656 bytes of workgroup memory, over the 65536 bytes a block may use (max-shared-bytes; fa-to-ptx sets it from the chip)

func.func @f(%q: tensor<2x?x128xbf16>, %k: tensor<2x?x128xbf16>,
             %v: tensor<2x?x128xbf16>) -> tensor<2x?x128xbf16> {
  %o = fa.attention %q, %k, %v
      : tensor<2x?x128xbf16>, tensor<2x?x128xbf16>, tensor<2x?x128xbf16>
      -> tensor<2x?x128xbf16>
  return %o : tensor<2x?x128xbf16>
}

// -----

// SCALE: error: 'fa.attention' op the tensor-core kernels fold scale * log2(e) into one f32, expected |scale| <= 2.35e38, got 3.000000e+38
func.func @huge_scale(%q: tensor<2x?x64xbf16>, %k: tensor<2x?x64xbf16>,
                      %v: tensor<2x?x64xbf16>) -> tensor<2x?x64xbf16> {
  %o = fa.attention %q, %k, %v scale(3.0e38)
      : tensor<2x?x64xbf16>, tensor<2x?x64xbf16>, tensor<2x?x64xbf16>
      -> tensor<2x?x64xbf16>
  return %o : tensor<2x?x64xbf16>
}
