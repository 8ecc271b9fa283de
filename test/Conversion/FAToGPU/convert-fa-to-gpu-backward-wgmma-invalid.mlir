// Shapes the wgmma backward kernels cannot take are errors on the op.
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 num-warps=6" 2>&1 | FileCheck %s --check-prefix=WARPS
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 block-m=24" 2>&1 | FileCheck %s --check-prefix=BLOCKM
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 block-m=272" 2>&1 | FileCheck %s --check-prefix=BLOCKM272
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 block-n=40" 2>&1 | FileCheck %s --check-prefix=BLOCKN
// RUN: not fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 block-m=16" 2>&1 | FileCheck %s --check-prefix=SPLIT
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 block-m=128" 2>&1 | FileCheck %s --check-prefix=REGS
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 block-n=256" 2>&1 | FileCheck %s --check-prefix=DQREGS
// With TMA the split dk/dv kernel's model is D / 2 + Dv / 2 + 3 x tile / 2 + 8
// (no copy addresses): 64-query tiles fit at D 128, 128-query tiles do not.
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 tma=1 block-m=128" 2>&1 | FileCheck %s --check-prefix=REGSTMA
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 num-warps=16" 2>&1 | FileCheck %s --check-prefix=WARPS16
// RUN: not fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 num-warps=8" 2>&1 | FileCheck %s --check-prefix=NODEFAULT
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 num-warps=8 max-shared-bytes=65536" 2>&1 | FileCheck %s --check-prefix=SMEM
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 num-warps=8 stages=3 max-shared-bytes=90000" 2>&1 | FileCheck %s --check-prefix=STAGES3
// STAGES3: error: 'fa.attention_backward' op the wgmma backward's dk/dv tiles (128 own rows, 3 stages of 32-row tiles) take
// RUN: not fa-opt %s -convert-fa-to-gpu="tensor-cores=1 wgmma=1 stages=4" 2>&1 | FileCheck %s --check-prefix=STAGES4
// RUN: not fa-opt %s --fa-to-ptx="stages=1" 2>&1 | FileCheck %s --check-prefix=STAGES1
// STAGES4: error: convert-fa-to-gpu: expected stages 2 or 3, or 0 for the default, got 4
// STAGES1: error: fa-to-ptx: expected stages 2 or 3, or 0 for the default, got 1
// fa-to-ptx passes its options on (wgmma is its default on sm_90a).
// RUN: not fa-opt %s --fa-to-ptx="num-warps=6" 2>&1 | FileCheck %s --check-prefix=WARPS
// The tensor-core kernels fold scale * log2(e) into one f32.
// RUN: not fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1" 2>&1 | FileCheck %s --check-prefix=SCALE

// WARPS: :[[@LINE+15]]:19: error: 'fa.attention_backward' op the wgmma backward expects one or two warpgroups: num-warps 4 or 8, got 6 (wgmma=false selects the mma.sync kernels)
// BLOCKM: error: 'fa.attention_backward' op the wgmma backward expects block-m (queries per dk/dv tile) to be a multiple of 16 of at most 256, got 24
// BLOCKM272: error: 'fa.attention_backward' op the wgmma backward expects block-m (queries per dk/dv tile) to be a multiple of 16 of at most 256, got 272
// BLOCKN: error: 'fa.attention_backward' op the wgmma backward expects block-n (keys per dq tile) to be a multiple of 16 of at most 256, got 40
// SPLIT: error: 'fa.attention_backward' op the wgmma backward expects the 8-row x 32-column groups of a Q/dO tile (block-m (queries per dk/dv tile) = 16, head dims 32 and 128) to split evenly over num-warps = 8
// REGS: error: 'fa.attention_backward' op the wgmma backward's dk/dv accumulators (block-m (queries per dk/dv tile) = 128: 448 registers per thread) do not fit the 239 a thread of a 256-thread block can give them; use a smaller tile (wgmma=false selects the mma.sync kernels)
// REGSTMA: error: 'fa.attention_backward' op the wgmma backward's dk/dv accumulators (block-m (queries per dk/dv tile) = 128: 328 registers per thread) do not fit the 239 a thread of a 256-thread block can give them; use a smaller tile (wgmma=false selects the mma.sync kernels)
// DQREGS: error: 'fa.attention_backward' op the wgmma backward's dq accumulators (block-n (keys per dq tile) = 256: 464 registers per thread) do not fit the 239 a thread of a 256-thread block can give them; use a smaller tile (wgmma=false selects the mma.sync kernels)
// WARPS16: error: 'fa.attention_backward' op the wgmma backward expects one or two warpgroups: num-warps 4 or 8, got 16 (wgmma=false selects the mma.sync kernels)
// NODEFAULT: error: 'fa.attention_backward' op the wgmma backward has no default block-m (queries per dk/dv tile) (64 or 32) whose tiles split evenly over num-warps = 8 and fit the registers (head dims 32 and 128); give one (wgmma=false selects the mma.sync kernels)
// SMEM: error: 'fa.attention_backward' op the wgmma backward's dk/dv tiles (128 own rows, 2 stages of 32-row tiles) take 104960 bytes of workgroup memory, over the 65536 bytes a block may use (max-shared-bytes; fa-to-ptx sets it from the chip)
func.func @f(%q: tensor<2x?x128xbf16>, %k: tensor<2x?x128xbf16>,
             %v: tensor<2x?x128xbf16>, %o: tensor<2x?x128xbf16>,
             %do: tensor<2x?x128xbf16>, %lse: tensor<2x?xf32>)
    -> (tensor<2x?x128xbf16>, tensor<2x?x128xbf16>, tensor<2x?x128xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse
      : tensor<2x?x128xbf16>, tensor<2x?x128xbf16>, tensor<2x?x128xbf16>,
        tensor<2x?x128xbf16>, tensor<2x?x128xbf16>, tensor<2x?xf32>
     -> tensor<2x?x128xbf16>, tensor<2x?x128xbf16>, tensor<2x?x128xbf16>
  return %dq, %dk, %dv : tensor<2x?x128xbf16>, tensor<2x?x128xbf16>, tensor<2x?x128xbf16>
}

// -----

// SCALE: error: 'fa.attention_backward' op the tensor-core kernels fold scale * log2(e) into one f32, expected |scale| <= 2.35e38, got 3.000000e+38
func.func @huge_scale(%q: tensor<2x?x64xbf16>, %k: tensor<2x?x64xbf16>,
                      %v: tensor<2x?x64xbf16>, %o: tensor<2x?x64xbf16>,
                      %do: tensor<2x?x64xbf16>, %lse: tensor<2x?xf32>)
    -> (tensor<2x?x64xbf16>, tensor<2x?x64xbf16>, tensor<2x?x64xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse scale(3.0e38)
      : tensor<2x?x64xbf16>, tensor<2x?x64xbf16>, tensor<2x?x64xbf16>,
        tensor<2x?x64xbf16>, tensor<2x?x64xbf16>, tensor<2x?xf32>
     -> tensor<2x?x64xbf16>, tensor<2x?x64xbf16>, tensor<2x?x64xbf16>
  return %dq, %dk, %dv : tensor<2x?x64xbf16>, tensor<2x?x64xbf16>, tensor<2x?x64xbf16>
}

// -----

// D 32 with Dv 128: 16-query tiles do not split over 8 warps (SPLIT), and
// with num-warps given there is no default tile and no fallback (NODEFAULT).
func.func @d32_dv128(%q: tensor<?x?x32xbf16>, %k: tensor<?x?x32xbf16>, %v: tensor<?x?x128xbf16>, %o: tensor<?x?x128xbf16>, %do: tensor<?x?x128xbf16>, %lse: tensor<?x?xf32>) -> (tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x128xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?xf32> -> tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x128xbf16>
  return %dq, %dk, %dv : tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x128xbf16>
}
