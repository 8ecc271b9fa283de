// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1" | FileCheck %s
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu | FileCheck %s --check-prefix=SCALAR
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 num-warps=2 block-m=64 block-n=32" | FileCheck %s --check-prefix=OPTS

// The tensor-core kernel of a causal bf16 attention, D = 64 (defaults: 4
// warps of 2 m16 tiles, block_m 128, block_n 64; Q fragments in registers).

// CHECK-LABEL: module attributes
// CHECK-SAME: bf16_d64_attention_0 = {{{.*}}block_m = 128 : i64, block_n = 64 : i64
// CHECK-SAME: shared_bytes = 18432 : i64, threads = 128 : i64}
// CHECK: gpu.func @bf16_d64_attention_0(
// CHECK-SAME: %[[Q:[a-z0-9]+]]: memref<16x?x64xbf16, strided<[?, ?, 1], offset: ?>>
// CHECK-SAME: %[[K:[a-z0-9]+]]: memref<16x?x64xbf16, strided<[?, ?, 1], offset: ?>>
// CHECK-SAME: %[[V:[a-z0-9]+]]: memref<16x?x64xbf16, strided<[?, ?, 1], offset: ?>>
// CHECK-SAME: kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// K and V tiles in dynamic workgroup memory, rows padded by 8 elements.
// CHECK: %[[SMEM:.+]] = gpu.dynamic_shared_memory
// CHECK: %[[KT:.+]] = memref.view %[[SMEM]][%{{.+}}][] : {{.+}} to memref<64x72xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[VT:.+]] = memref.view %[[SMEM]][%{{.+}}][] : {{.+}} to memref<64x72xbf16, #gpu.address_space<workgroup>>
// Causal: the last query blocks first.
// CHECK: gpu.grid_dim x
// The first K tile: full tiles copy without bounds, the last one zero-fills
// rows past Tk (src-size operand).
// CHECK: nvgpu.device_async_copy %[[K]][{{.+}}], %[[KT]][{{.+}}], 8 {bypassL1}
// CHECK: nvgpu.device_async_create_group
// CHECK: nvgpu.device_async_copy %[[K]][{{.+}}], %[[KT]][{{.+}}], 8, %{{.+}} {bypassL1}
// Q fragments: bf16 pairs loaded once, before the key loop.
// CHECK: vector.load %[[Q]][{{.+}}] : {{.+}}, vector<2xbf16>
// CHECK: scf.for
// CHECK-SAME: -> (vector<2x2xf32>, vector<2x2xf32>,
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// CHECK: nvgpu.device_async_copy %[[V]]
// S = Q K^T: ldmatrix (not transposed) of K rows, mma.sync m16n8k16.
// CHECK: nvgpu.ldmatrix %[[KT]][{{.+}}] {numTiles = 4 : i32, transpose = false} : {{.+}} -> vector<4x2xbf16>
// CHECK: nvgpu.mma.sync(%{{.+}}, %{{.+}}, %{{.+}}) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
// Masking only on blocks that straddle the diagonal or the end of K.
// CHECK: scf.if %{{.+}} -> (vector<2x2xf32>
// CHECK: arith.select %{{.+}}, %{{.+}}, %{{.+}} : f32
// Row max over the four lanes of a row.
// CHECK: gpu.shuffle xor %{{.+}}, %c1_i32{{[_0-9]*}}, %c32_i32{{[_0-9]*}} : f32
// CHECK: gpu.shuffle xor %{{.+}}, %c2_i32{{[_0-9]*}}, %c32_i32{{[_0-9]*}} : f32
// exp2 on the SFU with scale * log2(e) folded into an fma.
// CHECK: math.fma
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// P converted in registers.
// CHECK: arith.truncf %{{.+}} : vector<2x2xf32> to vector<2x2xbf16>
// O rescaled only where a row max moved.
// CHECK: scf.if %{{.+}} -> (vector<2x2xf32>
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// The next K tile is prefetched during P V.
// CHECK: scf.if
// CHECK: nvgpu.device_async_copy %[[K]]
// O += P V: ldmatrix.trans of V rows.
// CHECK: nvgpu.ldmatrix %[[VT]][{{.+}}] {numTiles = 4 : i32, transpose = true}
// CHECK: nvgpu.mma.sync
// Epilogue: row sums over the lanes, o and lse stored (each pair as one
// 4-byte aligned store: rows are 16-byte aligned, the column even).
// CHECK: gpu.shuffle xor
// CHECK: vector.store %{{.+}}, %{{.+}}[{{.+}}] {alignment = 4 : i64} : {{.+}}, vector<2xbf16>
// CHECK: math.log

// Without tensor-cores the same op gets the scalar kernel.
// SCALAR-LABEL: gpu.func @bf16_d64_attention_0(
// SCALAR-SAME: strided<[?, ?, ?], offset: ?>
// SCALAR-NOT: nvgpu.
// SCALAR: gpu.return

// Options: 2 warps of 2 m16 tiles, 32 keys per tile.
// OPTS-LABEL: module attributes
// OPTS-SAME: bf16_d64_attention_0 = {{{.*}}block_m = 64 : i64, block_n = 32 : i64
// OPTS-SAME: threads = 64 : i64
// OPTS: memref.view {{.+}} to memref<32x72xbf16, #gpu.address_space<workgroup>>

func.func @bf16_d64(%q: tensor<2x8x?x64xbf16>, %k: tensor<2x8x?x64xbf16>,
                    %v: tensor<2x8x?x64xbf16>)
    -> (tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(top_left)
      : tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>
      -> tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>
  return %o, %lse : tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>
}

// -----

// D = 128 (f16): 2 m16 tiles per warp would take 64 registers of Q
// fragments, so Q is a third tile in workgroup memory, read by ldmatrix at
// each use; block_n 32.

// CHECK-LABEL: module attributes
// CHECK-SAME: f16_d128_attention_0 = {{{.*}}block_m = 128 : i64, block_n = 32 : i64
// CHECK-SAME: shared_bytes = 52224 : i64, threads = 128 : i64}
// CHECK: gpu.func @f16_d128_attention_0(
// CHECK: %[[SMEM:.+]] = gpu.dynamic_shared_memory
// CHECK: %[[QT:.+]] = memref.view %[[SMEM]][%{{.+}}][] : {{.+}} to memref<128x136xf16, #gpu.address_space<workgroup>>
// CHECK: memref.view %[[SMEM]][%{{.+}}][] : {{.+}} to memref<32x136xf16, #gpu.address_space<workgroup>>
// CHECK: memref.view %[[SMEM]][%{{.+}}][] : {{.+}} to memref<32x136xf16, #gpu.address_space<workgroup>>
// No causal reordering.
// CHECK-NOT: gpu.grid_dim
// CHECK: nvgpu.device_async_copy %{{.+}}, %[[QT]]
// CHECK-NOT: vector.load
// CHECK: scf.for
// CHECK: nvgpu.ldmatrix %[[QT]][{{.+}}] {numTiles = 4 : i32, transpose = false} : {{.+}} -> vector<4x2xf16>
// CHECK: nvgpu.mma.sync(%{{.+}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK: vector.store %{{.+}} : {{.+}}, vector<2xf32>

func.func @f16_d128(%q: tensor<4x?x128xf16>, %k: tensor<4x?x128xf16>,
                    %v: tensor<4x?x128xf16>) -> tensor<4x?x128xf32> {
  %o = fa.attention %q, %k, %v
      : tensor<4x?x128xf16>, tensor<4x?x128xf16>, tensor<4x?x128xf16>
      -> tensor<4x?x128xf32>
  return %o : tensor<4x?x128xf32>
}

// -----

// Negative: f32 operands and a head dim that is not a multiple of 16 keep
// the scalar kernel under tensor-cores.

// CHECK-LABEL: module attributes
// CHECK: gpu.func @f32_d64_attention_0(
// CHECK-SAME: private(
// CHECK-NOT: nvgpu.
// CHECK: gpu.func @bf16_d72_attention_0(
// CHECK-SAME: private(
// CHECK-NOT: nvgpu.
// CHECK: gpu.return

func.func @f32_d64(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>,
                   %v: tensor<2x16x64xf32>) -> tensor<2x16x64xf32> {
  %o = fa.attention %q, %k, %v
      : tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>
      -> tensor<2x16x64xf32>
  return %o : tensor<2x16x64xf32>
}

func.func @bf16_d72(%q: tensor<2x16x72xbf16>, %k: tensor<2x16x72xbf16>,
                    %v: tensor<2x16x72xbf16>) -> tensor<2x16x72xbf16> {
  %o = fa.attention %q, %k, %v
      : tensor<2x16x72xbf16>, tensor<2x16x72xbf16>, tensor<2x16x72xbf16>
      -> tensor<2x16x72xbf16>
  return %o : tensor<2x16x72xbf16>
}
