// The kernels' index bitwidth (convert-fa-to-gpu index-bitwidth): 32 puts
// (on the TMA wgmma kernels only) a DLTI data layout with 32-bit index on
// the kernel's gpu.module and `index_bits = 32` in its manifest; 64 (the
// pass's default) leaves both out; 0 picks 32 for the TMA producer forward
// at head dim 128, and at head dim 64 with a causal mask, and for every TMA
// backward, else 64. The backward's lse/delta addresses come from the
// memref descriptor's pointer (an unrealized cast to the descriptor of the
// module's index width), not from an index.

// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 tiles-per-block=0" | FileCheck %s --check-prefixes=WIDE,TMA64
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 tiles-per-block=0 index-bitwidth=64" | FileCheck %s --check-prefixes=WIDE,TMA64
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 tiles-per-block=0 index-bitwidth=32" | FileCheck %s --check-prefix=NARROW
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 tiles-per-block=0 index-bitwidth=0" | FileCheck %s --check-prefix=AUTO
// Without the producer warpgroup the forward's choice is 64 everywhere, the
// backward's still 32.
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 index-bitwidth=0" | FileCheck %s --check-prefix=NOPROD
// Only the TMA wgmma kernels take 32 bits: an explicit 32 leaves the
// scalar, mma.sync and cp.async wgmma kernels at 64.
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="index-bitwidth=32" | FileCheck %s --check-prefix=WIDE
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 index-bitwidth=32" | FileCheck %s --check-prefix=WIDE
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 index-bitwidth=32" | FileCheck %s --check-prefix=WIDE
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 index-bitwidth=32" | FileCheck %s --check-prefix=NARROW

// WIDE-NOT: index_bits
// WIDE-NOT: dlti.dl_spec

// NOPROD-LABEL: module attributes {fa.manifests = {d128_none_attention_0 = {
// NOPROD-NOT: index_bits
// NOPROD: gpu.module @d128_none_attention_0 {
// NARROW-LABEL: module attributes {fa.manifests = {d128_none_attention_0 = {
// NARROW-SAME: index_bits = 32 : i64
// NARROW: gpu.module @d128_none_attention_0 attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>}
// AUTO-LABEL: module attributes {fa.manifests = {d128_none_attention_0 = {
// AUTO-SAME: index_bits = 32 : i64
// AUTO: gpu.module @d128_none_attention_0 attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>}
func.func @d128_none(%q: tensor<?x?x128xf16>, %k: tensor<?x?x128xf16>, %v: tensor<?x?x128xf16>) -> tensor<?x?x128xf16> {
  %o = fa.attention %q, %k, %v : tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?x128xf16> -> tensor<?x?x128xf16>
  return %o : tensor<?x?x128xf16>
}

// -----

// NOPROD-LABEL: module attributes {fa.manifests = {d64_none_attention_0 = {
// NOPROD-NOT: index_bits
// NOPROD: gpu.module @d64_none_attention_0 {
// NARROW-LABEL: module attributes {fa.manifests = {d64_none_attention_0 = {
// NARROW-SAME: index_bits = 32 : i64
// NARROW: gpu.module @d64_none_attention_0 attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>}
// AUTO-LABEL: module attributes {fa.manifests = {d64_none_attention_0 = {
// AUTO-NOT: index_bits
// AUTO: gpu.module @d64_none_attention_0 {
func.func @d64_none(%q: tensor<?x?x64xbf16>, %k: tensor<?x?x64xbf16>, %v: tensor<?x?x64xbf16>) -> (tensor<?x?x64xbf16>, tensor<?x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v : tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x64xbf16> -> tensor<?x?x64xbf16>, tensor<?x?xf32>
  return %o, %lse : tensor<?x?x64xbf16>, tensor<?x?xf32>
}

// -----

// NOPROD-LABEL: module attributes {fa.manifests = {d64_causal_attention_0 = {
// NOPROD-NOT: index_bits
// NOPROD: gpu.module @d64_causal_attention_0 {
// AUTO-LABEL: module attributes {fa.manifests = {d64_causal_attention_0 = {
// AUTO-SAME: index_bits = 32 : i64
// AUTO: gpu.module @d64_causal_attention_0 attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>}
func.func @d64_causal(%q: tensor<?x?x64xbf16>, %k: tensor<?x?x64xbf16>, %v: tensor<?x?x64xbf16>) -> (tensor<?x?x64xbf16>, tensor<?x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(bottom_right) : tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x64xbf16> -> tensor<?x?x64xbf16>, tensor<?x?xf32>
  return %o, %lse : tensor<?x?x64xbf16>, tensor<?x?xf32>
}

// -----

// The backward: 32 bits with TMA (explicit or the choice), its cp.async
// copies of the lse and delta columns from the descriptors' pointers.
// NARROW-LABEL: module attributes {fa.manifests = {bwd_attention_backward_0 = {
// NARROW-SAME: index_bits = 32 : i64
// NARROW: gpu.module @bwd_attention_backward_0 attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>}
// NARROW: builtin.unrealized_conversion_cast %arg4 : memref<?x?xf32, strided<[?, ?], offset: ?>> to !llvm.struct<(ptr, ptr, i32, array<2 x i32>, array<2 x i32>)>
// NARROW-NEXT: llvm.extractvalue %{{.*}}[1] : !llvm.struct<(ptr, ptr, i32, array<2 x i32>, array<2 x i32>)>
// NARROW-NEXT: llvm.ptrtoint %{{.*}} : !llvm.ptr to i64
// NARROW: builtin.unrealized_conversion_cast %arg5 : memref<?x?xf32, strided<[?, ?], offset: ?>> to !llvm.struct<(ptr, ptr, i32, array<2 x i32>, array<2 x i32>)>
// NARROW: cp.async.ca.shared.global
// AUTO-LABEL: module attributes {fa.manifests = {bwd_attention_backward_0 = {
// AUTO-SAME: index_bits = 32 : i64
// AUTO: gpu.module @bwd_attention_backward_0 attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>}
// NOPROD-LABEL: module attributes {fa.manifests = {bwd_attention_backward_0 = {
// NOPROD-SAME: index_bits = 32 : i64
// NOPROD: gpu.module @bwd_attention_backward_0 attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>}
// With 64 the same casts, to the 64-bit descriptor.
// TMA64-LABEL: module attributes {fa.manifests = {bwd_attention_backward_0 = {
// TMA64-NOT: index_bits
// TMA64: gpu.module @bwd_attention_backward_0 {
// TMA64: builtin.unrealized_conversion_cast %arg4 : memref<?x?xf32, strided<[?, ?], offset: ?>> to !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// TMA64-NOT: memref.extract_aligned_pointer_as_index
// TMA64: cp.async.ca.shared.global
func.func @bwd(%q: tensor<?x?x128xbf16>, %k: tensor<?x?x128xbf16>, %v: tensor<?x?x128xbf16>, %o: tensor<?x?x128xbf16>, %do: tensor<?x?x128xbf16>, %lse: tensor<?x?xf32>) -> (tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?xf32> -> tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>
  return %dq, %dk, %dv : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>
}
