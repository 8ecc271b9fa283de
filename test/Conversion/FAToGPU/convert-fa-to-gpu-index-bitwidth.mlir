// The kernels' index bitwidth (convert-fa-to-gpu index-bitwidth): 32 puts
// (on the TMA wgmma forward kernels only) a DLTI data layout with 32-bit
// index on the kernel's gpu.module and
// `index_bits = 32` in its manifest; 64 (the pass's default) leaves both
// out; 0 picks 32 for the TMA producer forward at head dim 128, and at head
// dim 64 with a causal mask, else 64. The backward keeps 64 always.

// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 tiles-per-block=0" | FileCheck %s --check-prefix=WIDE
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 tiles-per-block=0 index-bitwidth=64" | FileCheck %s --check-prefix=WIDE
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 tiles-per-block=0 index-bitwidth=32" | FileCheck %s --check-prefix=NARROW
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 tiles-per-block=0 index-bitwidth=0" | FileCheck %s --check-prefix=AUTO
// Without the producer warpgroup the choice is 64 everywhere.
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 index-bitwidth=0" | FileCheck %s --check-prefix=WIDE
// Only the TMA wgmma kernels take 32 bits: an explicit 32 leaves the
// scalar, mma.sync and cp.async wgmma kernels at 64.
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="index-bitwidth=32" | FileCheck %s --check-prefix=WIDE
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 index-bitwidth=32" | FileCheck %s --check-prefix=WIDE
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 index-bitwidth=32" | FileCheck %s --check-prefix=WIDE
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 index-bitwidth=32" | FileCheck %s --check-prefix=NARROW

// WIDE-NOT: index_bits
// WIDE-NOT: dlti.dl_spec

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

// AUTO-LABEL: module attributes {fa.manifests = {d64_causal_attention_0 = {
// AUTO-SAME: index_bits = 32 : i64
// AUTO: gpu.module @d64_causal_attention_0 attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>}
func.func @d64_causal(%q: tensor<?x?x64xbf16>, %k: tensor<?x?x64xbf16>, %v: tensor<?x?x64xbf16>) -> (tensor<?x?x64xbf16>, tensor<?x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(bottom_right) : tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x64xbf16> -> tensor<?x?x64xbf16>, tensor<?x?xf32>
  return %o, %lse : tensor<?x?x64xbf16>, tensor<?x?xf32>
}

// -----

// The backward keeps 64-bit indices whatever the option says.
// NARROW-LABEL: module attributes {fa.manifests = {bwd_attention_backward_0 = {
// NARROW-NOT: index_bits
// NARROW: gpu.module @bwd_attention_backward_0 {
// AUTO-LABEL: module attributes {fa.manifests = {bwd_attention_backward_0 = {
// AUTO-NOT: index_bits
// AUTO: gpu.module @bwd_attention_backward_0 {
func.func @bwd(%q: tensor<?x?x128xbf16>, %k: tensor<?x?x128xbf16>, %v: tensor<?x?x128xbf16>, %o: tensor<?x?x128xbf16>, %do: tensor<?x?x128xbf16>, %lse: tensor<?x?xf32>) -> (tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?xf32> -> tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>
  return %dq, %dk, %dv : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>
}
