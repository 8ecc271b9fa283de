// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu | FileCheck %s
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="block-m=32 block-n=16" | FileCheck %s --check-prefix=SMALL

// The kernel of a causal (top_left) bf16 attention with dynamic sequence
// lengths: one gpu.module per op, named <func>_attention_<n>, batch dims
// flattened (2 x 8 = 16), K/V tiles in workgroup memory, q row / acc / scores
// in private memory, the key loop bounded by the diagonal.

// CHECK-LABEL: module attributes
// CHECK-SAME: fa.manifests = {bf16_causal_top_left_attention_0 = {
// CHECK-SAME: batch = 16 : i64, batch_shape = [2, 8], block_m = 64 : i64, block_n = 64 : i64, causal = "top_left", dtype = "bf16"
// CHECK-SAME: has_lse = 1 : i64, head_dim = 64 : i64, head_dim_v = 64 : i64, kernel = "bf16_causal_top_left_attention_0", o_dtype = "bf16"
// CHECK-SAME: params = ["q", "k", "v", "o", "lse"], scale = 1.250000e-01 : f32, seqlen_k = "?", seqlen_q = "?", shared_bytes = 0 : i64, threads = 64 : i64}}
// CHECK-SAME: gpu.container_module
// CHECK-NOT: func.func
// CHECK: gpu.module @bf16_causal_top_left_attention_0 {
// CHECK: gpu.func @bf16_causal_top_left_attention_0(
// CHECK-SAME: %[[Q:[a-z0-9]+]]: memref<16x?x64xbf16, strided<[?, ?, ?], offset: ?>>
// CHECK-SAME: %[[K:[a-z0-9]+]]: memref<16x?x64xbf16, strided<[?, ?, ?], offset: ?>>
// CHECK-SAME: %[[V:[a-z0-9]+]]: memref<16x?x64xbf16, strided<[?, ?, ?], offset: ?>>
// CHECK-SAME: %[[O:[a-z0-9]+]]: memref<16x?x64xbf16, strided<[?, ?, ?], offset: ?>>
// CHECK-SAME: %[[LSE:[a-z0-9]+]]: memref<16x?xf32, strided<[?, ?], offset: ?>>)
// CHECK-SAME: workgroup(%[[KT:.+]] : memref<64x64xbf16, #gpu.address_space<workgroup>>, %[[VT:.+]] : memref<64x64xbf16, #gpu.address_space<workgroup>>)
// CHECK-SAME: private(%[[QROW:.+]] : memref<64xf32, #gpu.address_space<private>>, %[[ACC:.+]] : memref<64xf32, #gpu.address_space<private>>, %[[S:.+]] : memref<64xf32, #gpu.address_space<private>>)
// CHECK-SAME: kernel attributes {known_block_size = array<i32: 64, 1, 1>}
// CHECK-DAG: %[[TQ:.+]] = memref.dim %[[Q]], %{{.+}}
// CHECK-DAG: %[[TK:.+]] = memref.dim %[[K]], %{{.+}}
// CHECK-DAG: %[[BX:.+]] = gpu.block_id x
// CHECK-DAG: %[[BATCH:.+]] = gpu.block_id y
// CHECK-DAG: %[[TID:.+]] = gpu.thread_id x
// CHECK: %[[I0:.+]] = arith.muli %[[BX]], %{{.+}} : index
// CHECK: %[[ROW:.+]] = arith.addi %[[I0]], %[[TID]] : index
// CHECK: %[[VALID:.+]] = arith.cmpi slt, %[[ROW]], %[[TQ]] : index
// Causal loop bound: min(max(i0 + rows + 0, 0), Tk).
// CHECK: %[[END:.+]] = arith.maxsi
// CHECK: %[[KVEND:.+]] = arith.minsi %[[END]], %[[TK]] : index
// CHECK: scf.if %[[VALID]] {
// CHECK: memref.load %[[Q]][%[[BATCH]], %[[ROW]], %{{.+}}]
// CHECK: memref.store %{{.+}}, %[[QROW]]
// CHECK: %[[ML:.+]]:2 = scf.for %[[J0:.+]] = %{{.+}} to %[[KVEND]] step %{{.+}} iter_args(%[[M:.+]] = %{{.+}}, %[[L:.+]] = %{{.+}}) -> (f32, f32) {
// CHECK: gpu.barrier
// CHECK: scf.for %{{.+}} = %[[TID]] to
// CHECK: memref.load %[[K]][%[[BATCH]]
// CHECK: memref.store %{{.+}}, %[[KT]]
// CHECK: scf.for %{{.+}} = %[[TID]] to
// CHECK: memref.load %[[V]][%[[BATCH]]
// CHECK: memref.store %{{.+}}, %[[VT]]
// CHECK: gpu.barrier
// CHECK: scf.if %[[VALID]] -> (f32, f32) {
// Only a key block straddling the diagonal is masked element-wise.
// CHECK: %[[STRADDLES:.+]] = arith.cmpi sgt
// CHECK: scf.if %[[STRADDLES]] -> (f32) {
// CHECK: arith.cmpi sgt
// CHECK: arith.select
// CHECK: } else {
// CHECK-NOT: arith.select
// CHECK: }
// CHECK: %[[MNEW:.+]] = arith.maximumf %[[M]]
// CHECK: math.exp
// CHECK: arith.cmpf oeq, %[[M]]
// CHECK: math.exp
// CHECK: memref.load %[[VT]]
// CHECK: memref.store %{{.+}}, %[[ACC]]
// CHECK: } else {
// CHECK: scf.yield %[[M]], %[[L]] : f32, f32
// Epilogue: o = acc / l (0 when l = 0), lse = m + log(l) (-inf when l = 0).
// CHECK: scf.if %[[VALID]] {
// CHECK: %[[EMPTY:.+]] = arith.cmpf oeq, %[[ML]]#1
// CHECK: arith.divf %{{.+}}, %[[ML]]#1 : f32
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK: memref.store %{{.+}}, %[[O]][%[[BATCH]], %[[ROW]], %{{.+}}]
// CHECK: math.log %[[ML]]#1 : f32
// CHECK: memref.store %{{.+}}, %[[LSE]][%[[BATCH]], %[[ROW]]]
// CHECK: gpu.return

// SMALL-LABEL: gpu.func @bf16_causal_top_left_attention_0(
// SMALL-SAME: workgroup(%{{.+}} : memref<16x64xbf16, #gpu.address_space<workgroup>>, %{{.+}} : memref<16x64xbf16, #gpu.address_space<workgroup>>)
// SMALL-SAME: private(%{{.+}} : memref<64xf32, #gpu.address_space<private>>, %{{.+}} : memref<64xf32, #gpu.address_space<private>>, %{{.+}} : memref<16xf32, #gpu.address_space<private>>)
// SMALL-SAME: known_block_size = array<i32: 32, 1, 1>
func.func @bf16_causal_top_left(%q: tensor<2x8x?x64xbf16>, %k: tensor<2x8x?x64xbf16>,
                                %v: tensor<2x8x?x64xbf16>)
    -> (tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v scale(0.125) causal(top_left)
      : tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>
      -> tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>
  return %o, %lse : tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>
}

// -----

// A 4096 x 4096 attention: nothing of Tq x Tk size exists, the tiles are
// 64 x 64; no causal bound and no element-wise mask.

// CHECK-LABEL: gpu.module @f16_no_score_matrix_attention_0
// CHECK-NOT: 4096x4096
// CHECK: gpu.func @f16_no_score_matrix_attention_0(
// CHECK-SAME: memref<4x4096x64xf16, strided<[?, ?, ?], offset: ?>>
// CHECK-SAME: workgroup(%{{.+}} : memref<64x64xf16, #gpu.address_space<workgroup>>, %{{.+}} : memref<64x64xf16, #gpu.address_space<workgroup>>)
// CHECK-NOT: 4096x4096
// CHECK-NOT: arith.cmpi sgt
// CHECK-NOT: 4096x4096
// CHECK: gpu.return
// CHECK-NOT: 4096x4096
func.func @f16_no_score_matrix(%q: tensor<4x4096x64xf16>, %k: tensor<4x4096x64xf16>,
                               %v: tensor<4x4096x64xf16>) -> tensor<4x4096x64xf16> {
  %o = fa.attention %q, %k, %v
      : tensor<4x4096x64xf16>, tensor<4x4096x64xf16>, tensor<4x4096x64xf16>
      -> tensor<4x4096x64xf16>
  return %o : tensor<4x4096x64xf16>
}

// -----

// bottom_right: query i sees keys j <= i + Tk - Tq. f32 with D = 128: block-n
// is lowered to 48 so that the two tiles fit in 48 KiB of shared memory.

// CHECK-LABEL: module attributes
// CHECK-SAME: block_n = 48 : i64
// CHECK-SAME: causal = "bottom_right"
// CHECK-SAME: dtype = "f32"
// CHECK-SAME: scale = 0.0883883461 : f32
// CHECK: gpu.func @f32_bottom_right_d128_attention_0(
// CHECK-SAME: %[[Q:[a-z0-9]+]]: memref<2x?x128xf32
// CHECK-SAME: %[[K:[a-z0-9]+]]: memref<2x?x128xf32
// CHECK-SAME: workgroup(%{{.+}} : memref<48x128xf32, #gpu.address_space<workgroup>>, %{{.+}} : memref<48x128xf32, #gpu.address_space<workgroup>>)
// CHECK-DAG: %[[TQ:.+]] = memref.dim %[[Q]]
// CHECK-DAG: %[[TK:.+]] = memref.dim %[[K]]
// CHECK: %[[OFFSET:.+]] = arith.subi %[[TK]], %[[TQ]] : index
// CHECK: %[[END:.+]] = arith.addi %{{.+}}, %[[OFFSET]] : index
// CHECK: arith.maxsi %[[END]]
// SMALL-LABEL: gpu.func @f32_bottom_right_d128_attention_0(
// SMALL-SAME: workgroup(%{{.+}} : memref<16x128xf32, #gpu.address_space<workgroup>>
func.func @f32_bottom_right_d128(%q: tensor<2x?x128xf32>, %k: tensor<2x?x128xf32>,
                                 %v: tensor<2x?x128xf32>) -> (tensor<2x?x128xf32>, tensor<2x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(bottom_right)
      : tensor<2x?x128xf32>, tensor<2x?x128xf32>, tensor<2x?x128xf32>
      -> tensor<2x?x128xf32>, tensor<2x?xf32>
  return %o, %lse : tensor<2x?x128xf32>, tensor<2x?xf32>
}

// -----

// Dynamic batch dims, Dv != D, f32 output of bf16 inputs, no lse; two ops in
// one function give two kernels, numbered in order. Constants may stay in
// the erased host function.

// CHECK-LABEL: module attributes
// CHECK-SAME: two_ops_attention_0 = {batch = "?", batch_shape = ["?", "?"]
// CHECK-SAME: head_dim = 64 : i64, head_dim_v = 32 : i64
// CHECK-SAME: o_dtype = "f32", params = ["q", "k", "v", "o"]
// CHECK-SAME: two_ops_attention_1 = {batch = "?", batch_shape = ["?", "?"]
// CHECK-NOT: func.func
// CHECK: gpu.module @two_ops_attention_0
// CHECK: gpu.func @two_ops_attention_0(%{{.+}}: memref<?x?x64xbf16, strided<[?, ?, ?], offset: ?>>, %{{.+}}: memref<?x?x64xbf16, strided<[?, ?, ?], offset: ?>>, %{{.+}}: memref<?x?x32xbf16, strided<[?, ?, ?], offset: ?>>, %{{.+}}: memref<?x?x32xf32, strided<[?, ?, ?], offset: ?>>)
// CHECK-NOT: arith.truncf
// CHECK: gpu.module @two_ops_attention_1
// CHECK: gpu.func @two_ops_attention_1(
func.func @two_ops(%q: tensor<?x?x?x64xbf16>, %k: tensor<?x?x?x64xbf16>,
                   %v: tensor<?x?x?x32xbf16>) -> (tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>) {
  %c0 = arith.constant 0 : index
  %a = fa.attention %q, %k, %v causal(bottom_right)
      : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x32xbf16>
      -> tensor<?x?x?x32xf32>
  %b = fa.attention %q, %k, %v
      : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x32xbf16>
      -> tensor<?x?x?x32xf32>
  return %a, %b : tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>
}
