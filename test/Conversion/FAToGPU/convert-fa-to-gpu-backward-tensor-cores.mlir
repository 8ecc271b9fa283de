// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1" | FileCheck %s
// RUN: not fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 block-n=48" 2>&1 | FileCheck %s --check-prefix=BLOCKN
// RUN: not fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 block-m=40" 2>&1 | FileCheck %s --check-prefix=BLOCKM
// RUN: not fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 num-warps=-1" 2>&1 | FileCheck %s --check-prefix=WARPS
// RUN: not fa-opt %s -split-input-file --fa-to-ptx="num-warps=64" 2>&1 | FileCheck %s --check-prefix=WARPS
// WARPS: error: 'fa.attention_backward' op expected num-warps in [1, 16], or 0 for the default of the head dim, got {{-1|64}}

// The tensor-core backward of a causal bf16 attention, D = 64: the
// deterministic kernel list (_delta, then _dkdv and _dq on mma.sync), no
// f32 dq accumulator, no atomics. Defaults: _dkdv blocks of 64 keys over
// query tiles of 48, _dq blocks of 64 queries over key tiles of 64.

// CHECK-LABEL: module attributes
// CHECK-SAME: bwd_attention_backward_0 = {
// CHECK-SAME: deterministic = 1 : i64
// CHECK-SAME: kernels = [{{{.*}}kernel = "bwd_attention_backward_0_delta"{{.*}}}, {block_m = 48 : i64, block_n = 64 : i64{{.*}}kernel = "bwd_attention_backward_0_dkdv", params = ["q", "k", "v", "do", "lse", "delta", "dk", "dv"], shared_bytes = 27648 : i64, threads = 128 : i64}, {block_m = 64 : i64, block_n = 64 : i64{{.*}}kernel = "bwd_attention_backward_0_dq", params = ["q", "k", "v", "do", "lse", "delta", "dq"], shared_bytes = 36864 : i64, threads = 128 : i64}]
// CHECK-SAME: scratch = ["delta f32 batch seqlen_q"]
// CHECK-NOT: memref.atomic_rmw
// CHECK: gpu.func @bwd_attention_backward_0_delta(

// _dkdv: warps own keys; K and V fragments from global memory before the
// loop; Q and dO tiles double-buffered; S^T = K Q^T, dV += P^T dO,
// dP^T = V dO^T, dK += dS^T Q.
// CHECK: gpu.func @bwd_attention_backward_0_dkdv(
// CHECK-SAME: %[[Q:[a-z0-9]+]]: memref<8x?x64xbf16, strided<[?, ?, 1], offset: ?>>
// CHECK: %[[QB:.+]] = memref.view %{{.+}} to memref<2x48x72xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[DOB:.+]] = memref.view %{{.+}} to memref<2x48x72xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %[[Q]][{{.+}}], %[[QB]][%c0{{.*}}, {{.+}}, {{.+}}], 8
// CHECK: vector.load %{{.+}} : memref<8x?x64xbf16, strided<[?, ?, 1], offset: ?>>, vector<2xbf16>
// CHECK: scf.for %[[IB:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(
// CHECK: nvvm.cp.async.wait.group 0
// CHECK: gpu.barrier
// CHECK: nvgpu.device_async_copy %[[Q]]
// CHECK: nvgpu.ldmatrix %[[QB]][{{.+}}] {numTiles = 4 : i32, transpose = false}
// CHECK: nvgpu.mma.sync
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: nvgpu.ldmatrix %[[DOB]][{{.+}}] {numTiles = 4 : i32, transpose = true}
// CHECK: nvgpu.ldmatrix %[[DOB]][{{.+}}] {numTiles = 4 : i32, transpose = false}
// CHECK: nvgpu.ldmatrix %[[QB]][{{.+}}] {numTiles = 4 : i32, transpose = true}
// CHECK: scf.yield
// CHECK: vector.store %{{.+}} : memref<8x?x64xbf16, strided<[?, ?, 1], offset: ?>>, vector<2xbf16>
// CHECK: gpu.return

// _dq: warps own queries (longest causal blocks first); K and V tiles
// double-buffered; S = Q K^T, dP = dO V^T, dQ += dS K.
// CHECK: gpu.func @bwd_attention_backward_0_dq(
// CHECK: %[[KB:.+]] = memref.view %{{.+}} to memref<2x64x72xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[VB:.+]] = memref.view %{{.+}} to memref<2x64x72xbf16, #gpu.address_space<workgroup>>
// CHECK: gpu.grid_dim x
// CHECK: scf.for
// CHECK: nvgpu.ldmatrix %[[KB]][{{.+}}] {numTiles = 4 : i32, transpose = false}
// CHECK: nvgpu.ldmatrix %[[VB]][{{.+}}] {numTiles = 4 : i32, transpose = false}
// CHECK: nvgpu.ldmatrix %[[KB]][{{.+}}] {numTiles = 4 : i32, transpose = true}
// CHECK: scf.yield
// CHECK: vector.store
// CHECK: gpu.return

// BLOCKN: error: 'fa.attention_backward' op the tensor-core backward expects block-n (keys per dk/dv block) to be 16 or 32 keys per warp (num-warps = 4), got block-n = 48
// BLOCKM: error: 'fa.attention_backward' op the tensor-core backward expects block-m (queries per dk/dv tile) to be a multiple of 16, got 40

func.func @bwd(%q: tensor<8x?x64xbf16>, %k: tensor<8x?x64xbf16>, %v: tensor<8x?x64xbf16>,
               %o: tensor<8x?x64xbf16>, %do: tensor<8x?x64xbf16>, %lse: tensor<8x?xf32>)
    -> (tensor<8x?x64xbf16>, tensor<8x?x64xbf16>, tensor<8x?x64xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(top_left)
      : tensor<8x?x64xbf16>, tensor<8x?x64xbf16>, tensor<8x?x64xbf16>,
        tensor<8x?x64xbf16>, tensor<8x?x64xbf16>, tensor<8x?xf32>
     -> tensor<8x?x64xbf16>, tensor<8x?x64xbf16>, tensor<8x?x64xbf16>
  return %dq, %dk, %dv : tensor<8x?x64xbf16>, tensor<8x?x64xbf16>, tensor<8x?x64xbf16>
}

// -----

// Negative: f32 operands, and a dO type that differs from q's, keep the
// scalar kernels (dq through f32 atomics by default).

// CHECK-LABEL: module attributes
// CHECK-SAME: f32_grads_attention_backward_0 = {
// CHECK-SAME: deterministic = 0 : i64
// CHECK-SAME: mixed_grads_attention_backward_0 = {
// CHECK-SAME: deterministic = 0 : i64
// CHECK-NOT: nvgpu.
// CHECK: memref.atomic_rmw addf
// CHECK-NOT: nvgpu.
// CHECK: memref.atomic_rmw addf
// CHECK-NOT: nvgpu.

func.func @f32_grads(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>,
                     %o: tensor<2x16x64xf32>, %do: tensor<2x16x64xf32>, %lse: tensor<2x16xf32>)
    -> (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse
      : tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>,
        tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16xf32>
     -> tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>
  return %dq, %dk, %dv : tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>
}

func.func @mixed_grads(%q: tensor<2x16x64xbf16>, %k: tensor<2x16x64xbf16>, %v: tensor<2x16x64xbf16>,
                       %o: tensor<2x16x64xbf16>, %do: tensor<2x16x64xf32>, %lse: tensor<2x16xf32>)
    -> (tensor<2x16x64xbf16>, tensor<2x16x64xbf16>, tensor<2x16x64xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse
      : tensor<2x16x64xbf16>, tensor<2x16x64xbf16>, tensor<2x16x64xbf16>,
        tensor<2x16x64xbf16>, tensor<2x16x64xf32>, tensor<2x16xf32>
     -> tensor<2x16x64xbf16>, tensor<2x16x64xbf16>, tensor<2x16x64xbf16>
  return %dq, %dk, %dv : tensor<2x16x64xbf16>, tensor<2x16x64xbf16>, tensor<2x16x64xbf16>
}
