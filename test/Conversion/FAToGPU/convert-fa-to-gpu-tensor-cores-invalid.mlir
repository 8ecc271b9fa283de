// Block shapes the tensor-core kernel cannot take are errors on the op.
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 block-m=100" 2>&1 | FileCheck %s --check-prefix=BLOCKM
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 num-warps=2 block-m=160" 2>&1 | FileCheck %s --check-prefix=ROWS
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 block-n=24" 2>&1 | FileCheck %s --check-prefix=BLOCKN
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 num-warps=17" 2>&1 | FileCheck %s --check-prefix=WARPS
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 num-warps=16 block-m=1024 block-n=512" 2>&1 | FileCheck %s --check-prefix=SMEM
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_80 block-n=24" 2>&1 | FileCheck %s --check-prefix=BLOCKN

// BLOCKM: :[[@LINE+8]]:8: error: 'fa.attention' op the tensor-core kernel expects block-m to be 16, 32, 48 or 64 query rows per warp (num-warps = 4), got block-m = 100
// ROWS: error: 'fa.attention' op the tensor-core kernel expects block-m to be 16, 32, 48 or 64 query rows per warp (num-warps = 2), got block-m = 160
// BLOCKN: error: 'fa.attention' op the tensor-core kernel expects block-n to be a multiple of 16, got 24
// WARPS: error: 'fa.attention' op expected num-warps in [1, 16], or 0 for the default of the head dim, got 17
// SMEM: error: 'fa.attention' op the tensor-core kernel's tiles (block-m = 1024, block-n = 512) take 557056 bytes of workgroup memory, over the 166912 bytes of sm_80

func.func @f(%q: tensor<2x?x128xbf16>, %k: tensor<2x?x128xbf16>,
             %v: tensor<2x?x128xbf16>) -> tensor<2x?x128xbf16> {
  %o = fa.attention %q, %k, %v
      : tensor<2x?x128xbf16>, tensor<2x?x128xbf16>, tensor<2x?x128xbf16>
      -> tensor<2x?x128xbf16>
  return %o : tensor<2x?x128xbf16>
}
