// Shapes the wgmma kernel cannot take are errors on the op.
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 num-warps=6" 2>&1 | FileCheck %s --check-prefix=WARPS
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 num-warps=8 block-m=64" 2>&1 | FileCheck %s --check-prefix=BLOCKM
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 block-n=24" 2>&1 | FileCheck %s --check-prefix=BLOCKN
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 block-n=272" 2>&1 | FileCheck %s --check-prefix=BLOCKN272
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 num-warps=12 block-n=64" 2>&1 | FileCheck %s --check-prefix=SPLIT
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=65536" 2>&1 | FileCheck %s --check-prefix=SMEM
// fa-to-ptx passes its options on (wgmma is its default on sm_90a).
// RUN: not fa-opt %s --fa-to-ptx="num-warps=6" 2>&1 | FileCheck %s --check-prefix=WARPS

// WARPS: :[[@LINE+9]]:8: error: 'fa.attention' op the wgmma kernel expects whole warpgroups of 64 query rows: num-warps a multiple of 4 and block-m = 16 x num-warps, got num-warps = 6 and block-m = 96
// BLOCKM: error: 'fa.attention' op the wgmma kernel expects whole warpgroups of 64 query rows: num-warps a multiple of 4 and block-m = 16 x num-warps, got num-warps = 8 and block-m = 64
// BLOCKN: error: 'fa.attention' op the wgmma kernel expects block-n to be a multiple of 16 of at most 256, got 24
// BLOCKN272: error: 'fa.attention' op the wgmma kernel expects block-n to be a multiple of 16 of at most 256, got 272
// SPLIT: error: 'fa.attention' op the wgmma kernel expects the 32 8-row x 32-column groups of a K/V tile (block-n = 64, head dim 128) to split evenly over num-warps = 12
// SMEM: error: 'fa.attention' op the wgmma kernel's tiles (block-m = 128, block-n = 64, two K/V stages) take 103424 bytes of workgroup memory, over the 65536 bytes a block may use (max-shared-bytes, set by the chip)

func.func @f(%q: tensor<2x?x128xbf16>, %k: tensor<2x?x128xbf16>,
             %v: tensor<2x?x128xbf16>) -> tensor<2x?x128xbf16> {
  %o = fa.attention %q, %k, %v
      : tensor<2x?x128xbf16>, tensor<2x?x128xbf16>, tensor<2x?x128xbf16>
      -> tensor<2x?x128xbf16>
  return %o : tensor<2x?x128xbf16>
}
