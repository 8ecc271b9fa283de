// convert-fa-to-gpu on fa.attention_backward: three kernels per op (delta,
// dk/dv with dq atomics, dq conversion), or, with deterministic=true, a dq
// kernel over query blocks and no atomics.

// RUN: fa-opt %s -convert-fa-to-gpu -canonicalize -cse | FileCheck %s
// RUN: fa-opt %s -convert-fa-to-gpu="deterministic=true" -canonicalize -cse | FileCheck %s --check-prefix=DET --implicit-check-not=atomic_rmw
// RUN: fa-opt %s -convert-fa-to-gpu -canonicalize -cse | FileCheck %s --check-prefix=NOSCORES
// RUN: fa-opt %s -convert-fa-to-gpu="deterministic=true" -canonicalize -cse | FileCheck %s --check-prefix=NOSCORES

// The manifests, one per op, naming the kernels in launch order and the
// scratch buffers.
// CHECK: module attributes {fa.manifests = {
// CHECK-SAME: bwd_top_left_attention_backward_0 = {
// CHECK-SAME: deterministic = 0
// CHECK-SAME: kernels = [{grid = ["ceil_div(seqlen_q,threads)", "batch", "1"], kernel = "bwd_top_left_attention_backward_0_delta", params = ["o", "do", "delta", "dq_accum"]
// CHECK-SAME: block_m = 64 : i64, block_n = 64 : i64, grid = ["ceil_div(seqlen_k,block_n)", "batch", "1"], kernel = "bwd_top_left_attention_backward_0_dkdv", params = ["q", "k", "v", "do", "lse", "delta", "dk", "dv", "dq_accum"]
// CHECK-SAME: kernel = "bwd_top_left_attention_backward_0_dq_convert", params = ["dq_accum", "dq"]
// CHECK-SAME: op = "attention_backward"
// CHECK-SAME: scratch = ["delta f32 batch seqlen_q", "dq_accum f32 batch seqlen_q head_dim"]
// DET: module attributes {fa.manifests = {
// DET-SAME: deterministic = 1
// DET-SAME: kernel = "bwd_top_left_attention_backward_0_dq", params = ["q", "k", "v", "do", "lse", "delta", "dq"]
// DET-SAME: scratch = ["delta f32 batch seqlen_q"]

// CHECK-LABEL: gpu.module @bwd_top_left_attention_backward_0
// delta = rowsum(do * o), and the dq accumulator cleared.
// CHECK: gpu.func @bwd_top_left_attention_backward_0_delta(%[[O:.+]]: memref<16x?x64xbf16, {{.+}}>, %[[DO:.+]]: memref<16x?x64xbf16, {{.+}}>, %[[DELTA:.+]]: memref<16x?xf32, {{.+}}>, %[[ACC:.+]]: memref<16x?x64xf32, {{.+}}>) kernel
// CHECK:   memref.store %{{.+}}, %[[DELTA]]
// CHECK:   memref.store %{{.+}}, %[[ACC]]
// CHECK:   gpu.return

// One block per key block, one thread per key: K tile, Q/dO tiles and
// lse/delta in workgroup memory, dk/dv accumulators private.
// CHECK: gpu.func @bwd_top_left_attention_backward_0_dkdv(%[[Q:[^:]+]]: memref<16x?x64xbf16
// CHECK-SAME: %[[DQACC:[^:]+]]: memref<16x?x64xf32, strided<[?, ?, ?], offset: ?>>) workgroup(%[[KT:[^ ]+]] : memref<64x64xbf16, #gpu.address_space<workgroup>>, %[[QT:[^ ]+]] : memref<64x64xbf16, #gpu.address_space<workgroup>>, %[[DOT:[^ ]+]] : memref<64x64xbf16, #gpu.address_space<workgroup>>, %{{.+}} : memref<64xf32, #gpu.address_space<workgroup>>, %{{.+}} : memref<64xf32, #gpu.address_space<workgroup>>, %[[DST:[^ ]+]] : memref<64x64xf32, #gpu.address_space<workgroup>>) private(
// CHECK-SAME: known_block_size = array<i32: 64, 1, 1>
// CHECK:   %[[TQ:.+]] = memref.dim %[[Q]], %c1
// CHECK:   %[[KB:.+]] = gpu.block_id  x
// CHECK:   %[[J0:.+]] = arith.muli %[[KB]], %c64
// Causal (top_left): query blocks start at the first row that sees key j0,
// clamp(j0 - 0, 0, Tq); earlier blocks are never visited.
// CHECK:   %[[LO:.+]] = arith.maxsi %[[J0]], %c0
// CHECK:   %[[QSTART:.+]] = arith.minsi %[[LO]], %[[TQ]]
// CHECK:   scf.for %[[I0:.+]] = %[[QSTART]] to %[[TQ]] step %c64 {
// CHECK:     gpu.barrier
// CHECK:     memref.store %{{.+}}, %[[QT]]
// CHECK:     memref.store %{{.+}}, %[[DOT]]
// CHECK:     gpu.barrier
// Only blocks straddling the diagonal take the element-wise mask.
// CHECK:     %[[STRADDLES:.+]] = arith.cmpi sgt
// CHECK:     scf.if %[[STRADDLES]] {
// CHECK:       math.exp
// CHECK:       arith.ori
// CHECK:       memref.store %{{.+}}, %[[DST]]
// CHECK:     } else {
// CHECK-NOT:   arith.ori
// CHECK:       math.exp
// CHECK:       memref.store %{{.+}}, %[[DST]]
// CHECK:     }
// dq += scale dS K for the key block: one f32 atomic per element.
// CHECK:     gpu.barrier
// CHECK:     memref.load %[[DST]]
// CHECK:     memref.atomic_rmw addf %{{.+}}, %[[DQACC]]
// CHECK:   }
// CHECK:   gpu.return
// CHECK: gpu.func @bwd_top_left_attention_backward_0_dq_convert
// CHECK:   arith.truncf %{{.+}} : f32 to bf16
// CHECK:   gpu.return

// Deterministic: no atomics anywhere (--implicit-check-not); dq from a kernel over query blocks
// with K/V tiles in workgroup memory, up to the block's diagonal.
// DET-LABEL: gpu.module @bwd_top_left_attention_backward_0
// DET: gpu.func @bwd_top_left_attention_backward_0_delta(%{{[^:]+}}: memref<16x?x64xbf16, {{[^)]+}}>, %{{[^:]+}}: memref<16x?x64xbf16, {{[^)]+}}>, %{{[^:]+}}: memref<16x?xf32, strided<[?, ?], offset: ?>>) kernel
// DET: gpu.func @bwd_top_left_attention_backward_0_dkdv
// DET-SAME: workgroup(%{{.+}} : memref<64x64xbf16, #gpu.address_space<workgroup>>, %{{.+}} : memref<64x64xbf16, #gpu.address_space<workgroup>>, %{{.+}} : memref<64x64xbf16, #gpu.address_space<workgroup>>, %{{.+}} : memref<64xf32, #gpu.address_space<workgroup>>, %{{.+}} : memref<64xf32, #gpu.address_space<workgroup>>) private(
// DET: gpu.func @bwd_top_left_attention_backward_0_dq(
// DET-SAME: workgroup(%[[DKT:[^ ]+]] : memref<64x64xbf16, #gpu.address_space<workgroup>>, %[[DVT:[^ ]+]] : memref<64x64xbf16, #gpu.address_space<workgroup>>)
// DET:   gpu.block_id  x
// DET:   scf.for %[[J0:.+]] = %c0 to %[[KVEND:.+]] step %c64 {
// DET:     gpu.barrier
// DET:     memref.store %{{.+}}, %[[DKT]]
// DET:     memref.store %{{.+}}, %[[DVT]]
// DET:     gpu.barrier
// DET:     scf.if
// DET:   gpu.return

// Nothing of size Tq x Tk, even with Tq = Tk = 4096 static.
// NOSCORES-LABEL: gpu.module @bwd_static_4096_attention_backward_0
// NOSCORES-NOT: 4096x4096
// NOSCORES: gpu.func @bwd_static_4096_attention_backward_0_dkdv
// NOSCORES-NOT: 4096x4096
// NOSCORES: gpu.return
// NOSCORES-NOT: 4096x4096

func.func @bwd_top_left(%q: tensor<2x8x?x64xbf16>, %k: tensor<2x8x?x64xbf16>,
                        %v: tensor<2x8x?x64xbf16>, %o: tensor<2x8x?x64xbf16>,
                        %do: tensor<2x8x?x64xbf16>, %lse: tensor<2x8x?xf32>)
    -> (tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(top_left)
      : tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>,
        tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>
     -> tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>
  return %dq, %dk, %dv : tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>
}

func.func @bwd_static_4096(%q: tensor<1x4096x128xf32>, %k: tensor<1x4096x128xf32>,
                           %v: tensor<1x4096x128xf32>, %o: tensor<1x4096x128xf32>,
                           %do: tensor<1x4096x128xf32>, %lse: tensor<1x4096xf32>)
    -> (tensor<1x4096x128xf32>, tensor<1x4096x128xf32>, tensor<1x4096x128xf32>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse
      : tensor<1x4096x128xf32>, tensor<1x4096x128xf32>, tensor<1x4096x128xf32>,
        tensor<1x4096x128xf32>, tensor<1x4096x128xf32>, tensor<1x4096xf32>
     -> tensor<1x4096x128xf32>, tensor<1x4096x128xf32>, tensor<1x4096x128xf32>
  return %dq, %dk, %dv : tensor<1x4096x128xf32>, tensor<1x4096x128xf32>, tensor<1x4096x128xf32>
}
