// Block shapes the tensor-core kernel cannot take are errors on the op.
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 block-m=100" 2>&1 | FileCheck %s --check-prefix=BLOCKM
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 num-warps=2 block-m=160" 2>&1 | FileCheck %s --check-prefix=ROWS
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 block-n=24" 2>&1 | FileCheck %s --check-prefix=BLOCKN
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 num-warps=17" 2>&1 | FileCheck %s --check-prefix=WARPS
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 num-warps=16 block-m=1024 block-n=512" 2>&1 | FileCheck %s --check-prefix=SMEM
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_80 block-n=24" 2>&1 | FileCheck %s --check-prefix=BLOCKN
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_86 num-warps=8 block-m=256 block-n=128" 2>&1 | FileCheck %s --check-prefix=CHIP86
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a wgmma=false num-warps=8 block-m=256 block-n=128" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHIP90 --allow-empty

// BLOCKM: :[[@LINE+13]]:8: error: 'fa.attention' op the tensor-core kernel expects block-m to be a multiple of 16 x num-warps = 64 of at most 64 x num-warps = 256 (16 to 64 query rows per warp), got block-m = 100
// ROWS: error: 'fa.attention' op the tensor-core kernel expects block-m to be a multiple of 16 x num-warps = 32 of at most 64 x num-warps = 128 (16 to 64 query rows per warp), got block-m = 160
// BLOCKN: error: 'fa.attention' op the tensor-core kernel expects block-n to be a multiple of 16, got 24
// WARPS: error: 'fa.attention' op expected num-warps in [1, 16], or 0 for the default of the head dim, got 17
// SMEM: error: 'fa.attention' op the tensor-core kernel's tiles (block-m = 1024, block-n = 512) take 557056 bytes of workgroup memory, over the 166912 bytes a block may use (max-shared-bytes; fa-to-ptx sets it from the chip)
// The limit follows the chip: 8 warps x 32 rows and 128-key tiles (D 128:
// 139264 bytes) fit sm_90a's 232448 (mma.sync kernel: wgmma=false) but not
// sm_86's 101376.
// CHIP86: error: 'fa.attention' op the tensor-core kernel's tiles (block-m = 256, block-n = 128) take 139264 bytes of workgroup memory, over the 101376 bytes a block may use (max-shared-bytes; fa-to-ptx sets it from the chip)
// CHIP90-NOT: error

func.func @f(%q: tensor<2x?x128xbf16>, %k: tensor<2x?x128xbf16>,
             %v: tensor<2x?x128xbf16>) -> tensor<2x?x128xbf16> {
  %o = fa.attention %q, %k, %v
      : tensor<2x?x128xbf16>, tensor<2x?x128xbf16>, tensor<2x?x128xbf16>
      -> tensor<2x?x128xbf16>
  return %o : tensor<2x?x128xbf16>
}
