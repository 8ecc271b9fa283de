// RUN: fa-opt %s -split-input-file -verify-diagnostics -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 index-bitwidth=32"
// RUN: not fa-opt %s -split-input-file -convert-fa-to-gpu="index-bitwidth=48" 2>&1 | FileCheck %s --check-prefix=VALUE
// The kernel's choice (0) takes 64 bits for them instead of an error.
// RUN: not fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 index-bitwidth=0" 2>%t.err0 | FileCheck %s --check-prefix=WIDE
// RUN: FileCheck %s --check-prefix=WIDEERR < %t.err0
// With 64-bit indices the same ops lower, except where the byte offsets
// would not fit in 64 bits.
// RUN: not fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 index-bitwidth=64" 2>%t.err64 | FileCheck %s --check-prefix=WIDE
// RUN: FileCheck %s --check-prefix=WIDEERR < %t.err64
// The scalar kernels take 64-bit indices and the same limit.
// RUN: not fa-opt %s -split-input-file -convert-fa-to-gpu 2>&1 | FileCheck %s --check-prefix=WIDEERR
// Dynamic dims do not count: the static ones alone stay below 2^31.
// RUN: sed -e 's/8192x2048x128/?x2048x128/g' -e 's/2x8388608x128/2x?x128/g' -e 's/4294967296x4294967296/?x?/g' -e 's/2x16777216x64/2x?x64/g' %s | fa-opt -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 index-bitwidth=32" | FileCheck %s --check-prefix=DYNAMIC

// VALUE: error: convert-fa-to-gpu: expected index-bitwidth 32 or 64, or 0 for the kernel's choice, got 48
// WIDE: gpu.module @q_too_large_attention_0 {
// WIDE: gpu.module @k_too_large_attention_0 {
// WIDE-NOT: @wraps_attention_0
// WIDE: gpu.module @bwd_too_large_attention_backward_0 {
// WIDEERR: error: 'fa.attention' op expected fewer than 2^60 elements in each tensor (byte offsets in 64 bits), but operand #0 has 2^64 or more
// DYNAMIC: gpu.module @q_too_large_attention_0 attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>}
// DYNAMIC: gpu.module @k_too_large_attention_0 attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>}
// DYNAMIC: gpu.module @bwd_too_large_attention_backward_0 attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>}

// q and o: 8192 x 2048 x 128 = 2^31 elements.
func.func @q_too_large(%q: tensor<8192x2048x128xbf16>, %k: tensor<8192x64x128xbf16>, %v: tensor<8192x64x128xbf16>) -> tensor<8192x2048x128xbf16> {
  // expected-error @+1 {{expected fewer than 2^31 elements in each tensor with index-bitwidth=32, but operand #0 has 2147483648 (compile it with index-bitwidth=64)}}
  %o = fa.attention %q, %k, %v : tensor<8192x2048x128xbf16>, tensor<8192x64x128xbf16>, tensor<8192x64x128xbf16> -> tensor<8192x2048x128xbf16>
  return %o : tensor<8192x2048x128xbf16>
}

// -----

// k and v only (q, o and lse are small; lse is a result).
func.func @k_too_large(%q: tensor<2x64x128xbf16>, %k: tensor<2x?x128xbf16>, %v: tensor<2x8388608x128xbf16>) -> (tensor<2x64x128xbf16>, tensor<2x64xf32>) {
  // expected-error @+1 {{expected fewer than 2^31 elements in each tensor with index-bitwidth=32, but operand #2 has 2147483648}}
  %o, %lse = fa.attention %q, %k, %v : tensor<2x64x128xbf16>, tensor<2x?x128xbf16>, tensor<2x8388608x128xbf16> -> tensor<2x64x128xbf16>, tensor<2x64xf32>
  return %o, %lse : tensor<2x64x128xbf16>, tensor<2x64xf32>
}

// -----

// Static dims whose product passes 2^64 (it must not wrap around to a
// small count).
func.func @wraps(%q: tensor<?x4294967296x4294967296x128xbf16>, %k: tensor<?x4294967296x4294967296x128xbf16>, %v: tensor<?x4294967296x4294967296x128xbf16>) -> tensor<?x4294967296x4294967296x128xbf16> {
  // expected-error @+1 {{expected fewer than 2^31 elements in each tensor with index-bitwidth=32, but operand #0 has 2^64 or more (compile it with index-bitwidth=64)}}
  %o = fa.attention %q, %k, %v : tensor<?x4294967296x4294967296x128xbf16>, tensor<?x4294967296x4294967296x128xbf16>, tensor<?x4294967296x4294967296x128xbf16> -> tensor<?x4294967296x4294967296x128xbf16>
  return %o : tensor<?x4294967296x4294967296x128xbf16>
}

// -----

// The backward: k and v (operands #1 and #2), dk and dv of 2 x 2^24 x 64
// = 2^31 elements.
func.func @bwd_too_large(%q: tensor<2x64x64xbf16>, %k: tensor<2x16777216x64xbf16>, %v: tensor<2x16777216x64xbf16>, %o: tensor<2x64x64xbf16>, %do: tensor<2x64x64xbf16>, %lse: tensor<2x64xf32>) -> (tensor<2x64x64xbf16>, tensor<2x16777216x64xbf16>, tensor<2x16777216x64xbf16>) {
  // expected-error @+1 {{expected fewer than 2^31 elements in each tensor with index-bitwidth=32, but operand #1 has 2147483648 (compile it with index-bitwidth=64)}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x64x64xbf16>, tensor<2x16777216x64xbf16>, tensor<2x16777216x64xbf16>, tensor<2x64x64xbf16>, tensor<2x64x64xbf16>, tensor<2x64xf32> -> tensor<2x64x64xbf16>, tensor<2x16777216x64xbf16>, tensor<2x16777216x64xbf16>
  return %dq, %dk, %dv : tensor<2x64x64xbf16>, tensor<2x16777216x64xbf16>, tensor<2x16777216x64xbf16>
}
