// RUN: fa-opt %s -split-input-file -verify-diagnostics

func.func @rank_below_two(%q: tensor<8xf32>, %k: tensor<8xf32>, %v: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'fa.attention' op expected q of rank >= 2 ([batch..., Tq, D]), got rank 1}}
  %o = fa.attention %q, %k, %v : tensor<8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  return %o : tensor<8xf32>
}

// -----

func.func @k_rank_mismatch(%q: tensor<2x8x4xf32>, %k: tensor<8x4xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{'fa.attention' op expected k of rank 3 (the rank of q), got rank 2}}
  %o = fa.attention %q, %k, %v : tensor<2x8x4xf32>, tensor<8x4xf32>, tensor<2x8x4xf32> -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

func.func @v_rank_mismatch(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<1x2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{'fa.attention' op expected v of rank 3 (the rank of q), got rank 4}}
  %o = fa.attention %q, %k, %v : tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

func.func @head_dim_mismatch(%q: tensor<8x64xf32>, %k: tensor<16x32xf32>, %v: tensor<16x64xf32>) -> tensor<8x64xf32> {
  // expected-error @+1 {{'fa.attention' op expected k head_dim 64 (that of q), got 32}}
  %o = fa.attention %q, %k, %v : tensor<8x64xf32>, tensor<16x32xf32>, tensor<16x64xf32> -> tensor<8x64xf32>
  return %o : tensor<8x64xf32>
}

// -----

func.func @kv_length_mismatch(%q: tensor<8x64xf32>, %k: tensor<16x64xf32>, %v: tensor<17x64xf32>) -> tensor<8x64xf32> {
  // expected-error @+1 {{'fa.attention' op expected v seqlen 16 (that of k), got 17}}
  %o = fa.attention %q, %k, %v : tensor<8x64xf32>, tensor<16x64xf32>, tensor<17x64xf32> -> tensor<8x64xf32>
  return %o : tensor<8x64xf32>
}

// -----

func.func @k_batch_mismatch(%q: tensor<2x8x4xf32>, %k: tensor<3x8x4xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{'fa.attention' op expected k batch dim 0 to be 2 (that of q), got 3}}
  %o = fa.attention %q, %k, %v : tensor<2x8x4xf32>, tensor<3x8x4xf32>, tensor<2x8x4xf32> -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

func.func @v_batch_mismatch(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<5x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{'fa.attention' op expected v batch dim 0 to be 2 (that of q), got 5}}
  %o = fa.attention %q, %k, %v : tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<5x8x4xf32> -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

func.func @k_element_type_mismatch(%q: tensor<8x4xf16>, %k: tensor<8x4xf32>, %v: tensor<8x4xf16>) -> tensor<8x4xf16> {
  // expected-error @+1 {{'fa.attention' op expected k element type 'f16' (that of q), got 'f32'}}
  %o = fa.attention %q, %k, %v : tensor<8x4xf16>, tensor<8x4xf32>, tensor<8x4xf16> -> tensor<8x4xf16>
  return %o : tensor<8x4xf16>
}

// -----

func.func @v_element_type_mismatch(%q: tensor<8x4xbf16>, %k: tensor<8x4xbf16>, %v: tensor<8x4xf16>) -> tensor<8x4xbf16> {
  // expected-error @+1 {{'fa.attention' op expected v element type 'bf16' (that of q), got 'f16'}}
  %o = fa.attention %q, %k, %v : tensor<8x4xbf16>, tensor<8x4xbf16>, tensor<8x4xf16> -> tensor<8x4xbf16>
  return %o : tensor<8x4xbf16>
}

// -----

func.func @non_float(%q: tensor<8x4xi32>, %k: tensor<8x4xi32>, %v: tensor<8x4xi32>) -> tensor<8x4xi32> {
  // expected-error @+1 {{'fa.attention' op expected q element type f16, bf16 or f32, got 'i32'}}
  %o = fa.attention %q, %k, %v : tensor<8x4xi32>, tensor<8x4xi32>, tensor<8x4xi32> -> tensor<8x4xi32>
  return %o : tensor<8x4xi32>
}

// -----

func.func @unsupported_float(%q: tensor<8x4xf64>, %k: tensor<8x4xf64>, %v: tensor<8x4xf64>) -> tensor<8x4xf64> {
  // expected-error @+1 {{'fa.attention' op expected q element type f16, bf16 or f32, got 'f64'}}
  %o = fa.attention %q, %k, %v : tensor<8x4xf64>, tensor<8x4xf64>, tensor<8x4xf64> -> tensor<8x4xf64>
  return %o : tensor<8x4xf64>
}

// -----

func.func @o_wrong_shape(%q: tensor<8x4xf32>, %k: tensor<16x4xf32>, %v: tensor<16x6xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'fa.attention' op expected o dim 1 to be 6 ([batch..., Tq, Dv]), got 4}}
  %o = fa.attention %q, %k, %v : tensor<8x4xf32>, tensor<16x4xf32>, tensor<16x6xf32> -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

func.func @o_wrong_rows(%q: tensor<8x4xf32>, %k: tensor<16x4xf32>, %v: tensor<16x4xf32>) -> tensor<16x4xf32> {
  // expected-error @+1 {{'fa.attention' op expected o dim 0 to be 8 ([batch..., Tq, Dv]), got 16}}
  %o = fa.attention %q, %k, %v : tensor<8x4xf32>, tensor<16x4xf32>, tensor<16x4xf32> -> tensor<16x4xf32>
  return %o : tensor<16x4xf32>
}

// -----

func.func @o_wrong_rank(%q: tensor<8x4xf32>, %k: tensor<16x4xf32>, %v: tensor<16x4xf32>) -> tensor<1x8x4xf32> {
  // expected-error @+1 {{'fa.attention' op expected o of rank 2 ([batch..., Tq, Dv]), got rank 3}}
  %o = fa.attention %q, %k, %v : tensor<8x4xf32>, tensor<16x4xf32>, tensor<16x4xf32> -> tensor<1x8x4xf32>
  return %o : tensor<1x8x4xf32>
}

// -----

func.func @o_wrong_type(%q: tensor<8x4xbf16>, %k: tensor<16x4xbf16>, %v: tensor<16x4xbf16>) -> tensor<8x4xf16> {
  // expected-error @+1 {{'fa.attention' op expected o element type 'bf16' (that of q) or f32, got 'f16'}}
  %o = fa.attention %q, %k, %v : tensor<8x4xbf16>, tensor<16x4xbf16>, tensor<16x4xbf16> -> tensor<8x4xf16>
  return %o : tensor<8x4xf16>
}

// -----

// With f32 q the only allowed o type is named once.
func.func @o_wrong_type_f32(%q: tensor<8x4xf32>, %k: tensor<16x4xf32>, %v: tensor<16x4xf32>) -> tensor<8x4xf16> {
  // expected-error @+1 {{'fa.attention' op expected o element type f32 (that of q), got 'f16'}}
  %o = fa.attention %q, %k, %v : tensor<8x4xf32>, tensor<16x4xf32>, tensor<16x4xf32> -> tensor<8x4xf16>
  return %o : tensor<8x4xf16>
}

// -----

func.func @lse_wrong_type(%q: tensor<8x4xf16>, %k: tensor<16x4xf16>, %v: tensor<16x4xf16>) -> (tensor<8x4xf16>, tensor<8xf16>) {
  // expected-error @+1 {{'fa.attention' op expected lse element type f32, got 'f16'}}
  %o, %lse = fa.attention %q, %k, %v : tensor<8x4xf16>, tensor<16x4xf16>, tensor<16x4xf16> -> tensor<8x4xf16>, tensor<8xf16>
  return %o, %lse : tensor<8x4xf16>, tensor<8xf16>
}

// -----

func.func @lse_wrong_rank(%q: tensor<8x4xf32>, %k: tensor<16x4xf32>, %v: tensor<16x4xf32>) -> (tensor<8x4xf32>, tensor<8x1xf32>) {
  // expected-error @+1 {{'fa.attention' op expected lse of rank 1 ([batch..., Tq]), got rank 2}}
  %o, %lse = fa.attention %q, %k, %v : tensor<8x4xf32>, tensor<16x4xf32>, tensor<16x4xf32> -> tensor<8x4xf32>, tensor<8x1xf32>
  return %o, %lse : tensor<8x4xf32>, tensor<8x1xf32>
}

// -----

func.func @lse_wrong_shape(%q: tensor<2x8x4xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x16x4xf32>) -> (tensor<2x8x4xf32>, tensor<2x9xf32>) {
  // expected-error @+1 {{'fa.attention' op expected lse dim 1 to be 8 ([batch..., Tq]), got 9}}
  %o, %lse = fa.attention %q, %k, %v : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x4xf32> -> tensor<2x8x4xf32>, tensor<2x9xf32>
  return %o, %lse : tensor<2x8x4xf32>, tensor<2x9xf32>
}

// -----

func.func @zero_scale(%q: tensor<8x4xf32>, %k: tensor<16x4xf32>, %v: tensor<16x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'fa.attention' op expected a finite, positive scale, got 0.000000e+00}}
  %o = fa.attention %q, %k, %v scale(0.0) : tensor<8x4xf32>, tensor<16x4xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

func.func @negative_scale(%q: tensor<8x4xf32>, %k: tensor<16x4xf32>, %v: tensor<16x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'fa.attention' op expected a finite, positive scale, got -5.000000e-01}}
  %o = fa.attention %q, %k, %v scale(-0.5) : tensor<8x4xf32>, tensor<16x4xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

func.func @infinite_scale(%q: tensor<8x4xf32>, %k: tensor<16x4xf32>, %v: tensor<16x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'fa.attention' op expected a finite, positive scale, got INF}}
  %o = fa.attention %q, %k, %v scale(0x7FF0000000000000) : tensor<8x4xf32>, tensor<16x4xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

func.func @nan_scale(%q: tensor<8x4xf32>, %k: tensor<16x4xf32>, %v: tensor<16x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'fa.attention' op expected a finite, positive scale, got nan}}
  %o = fa.attention %q, %k, %v scale(0x7FF8000000000000) : tensor<8x4xf32>, tensor<16x4xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

func.func @mask_wrong_rank(%q: tensor<2x8x4xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x16x4xf32>, %m: tensor<8x16xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{'fa.attention' op expected mask of rank 3 ([batch..., Tq, Tk]), got rank 2}}
  %o = fa.attention %q, %k, %v mask(%m : tensor<8x16xf32>) : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x4xf32> -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

func.func @mask_wrong_type(%q: tensor<8x4xf16>, %k: tensor<16x4xf16>, %v: tensor<16x4xf16>, %m: tensor<8x16xi8>) -> tensor<8x4xf16> {
  // expected-error @+1 {{'fa.attention' op expected mask element type i1, f32 or that of q ('f16'), got 'i8'}}
  %o = fa.attention %q, %k, %v mask(%m : tensor<8x16xi8>) : tensor<8x4xf16>, tensor<16x4xf16>, tensor<16x4xf16> -> tensor<8x4xf16>
  return %o : tensor<8x4xf16>
}

// -----

func.func @mask_wrong_batch(%q: tensor<2x8x4xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x16x4xf32>, %m: tensor<3x8x16xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{'fa.attention' op expected mask batch dim 0 to be 1 or 2, got 3}}
  %o = fa.attention %q, %k, %v mask(%m : tensor<3x8x16xf32>) : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x4xf32> -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

func.func @mask_wrong_shape(%q: tensor<8x4xf32>, %k: tensor<16x4xf32>, %v: tensor<16x4xf32>, %m: tensor<8x15xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'fa.attention' op expected mask shape [..., 8, 16] (Tq of q, Tk of k), got [..., 8, 15]}}
  %o = fa.attention %q, %k, %v mask(%m : tensor<8x15xf32>) : tensor<8x4xf32>, tensor<16x4xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

func.func @unknown_causal(%q: tensor<8x4xf32>, %k: tensor<16x4xf32>, %v: tensor<16x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'causal' [none, top_left, bottom_right]}}
  %o = fa.attention %q, %k, %v causal(diagonal) : tensor<8x4xf32>, tensor<16x4xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

func.func @zero_head_dim(%q: tensor<2x4x0xf32>, %k: tensor<2x4x0xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{'fa.attention' op expected a positive head_dim, got 0}}
  %o = fa.attention %q, %k, %v : tensor<2x4x0xf32>, tensor<2x4x0xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// k carries the 0 when q's head dim is dynamic.
func.func @zero_head_dim_k(%q: tensor<2x?x?xf32>, %k: tensor<2x5x0xf32>, %v: tensor<2x5x8xf32>) -> tensor<2x?x8xf32> {
  // expected-error @+1 {{'fa.attention' op expected a positive head_dim, got 0}}
  %o = fa.attention %q, %k, %v : tensor<2x?x?xf32>, tensor<2x5x0xf32>, tensor<2x5x8xf32> -> tensor<2x?x8xf32>
  return %o : tensor<2x?x8xf32>
}

// -----

func.func @zero_head_dim_k_backward(%q: tensor<2x4x?xf32>, %k: tensor<2x4x0xf32>, %v: tensor<2x4x8xf32>, %o: tensor<2x4x8xf32>, %do: tensor<2x4x8xf32>, %lse: tensor<2x4xf32>) -> tensor<2x4x?xf32> {
  // expected-error @+1 {{'fa.attention_backward' op expected a positive head_dim, got 0}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x4x?xf32>, tensor<2x4x0xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4xf32> -> tensor<2x4x?xf32>, tensor<2x4x0xf32>, tensor<2x4x8xf32>
  return %dq : tensor<2x4x?xf32>
}

// -----

func.func @zero_head_dim_v(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x0xf32>) -> tensor<2x4x0xf32> {
  // expected-error @+1 {{'fa.attention' op expected a positive head_dim_v (the last dim of v), got 0}}
  %o = fa.attention %q, %k, %v : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x0xf32> -> tensor<2x4x0xf32>
  return %o : tensor<2x4x0xf32>
}

// -----

func.func @zero_head_dim_v_backward(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x0xf32>, %o: tensor<2x4x0xf32>, %do: tensor<2x4x0xf32>, %lse: tensor<2x4xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{'fa.attention_backward' op expected a positive head_dim_v (the last dim of v), got 0}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x0xf32>, tensor<2x4x0xf32>, tensor<2x4x0xf32>, tensor<2x4xf32> -> tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x0xf32>
  return %dq : tensor<2x4x8xf32>
}

// -----

func.func @scale_overflows_f32(%q: tensor<8x4xf32>, %k: tensor<16x4xf32>, %v: tensor<16x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'fa.attention' op expected a scale representable in f32 (about 1.4e-45 to 3.4e+38), got 1.000000e+39}}
  %o = fa.attention %q, %k, %v scale(1.0e39) : tensor<8x4xf32>, tensor<16x4xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

func.func @scale_underflows_f32(%q: tensor<8x4xf32>, %k: tensor<16x4xf32>, %v: tensor<16x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'fa.attention' op expected a scale representable in f32 (about 1.4e-45 to 3.4e+38), got 4.940656e-324}}
  %o = fa.attention %q, %k, %v scale(4.9e-324) : tensor<8x4xf32>, tensor<16x4xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

// Tensor encodings: the fa ops take and give dense tensors.
func.func @encoded_q(%q: tensor<8x4xf32, "enc">, %k: tensor<16x4xf32>, %v: tensor<16x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'fa.attention' op expected q without a tensor encoding (the fa ops take and give dense tensors), got 'tensor<8x4xf32, "enc">'}}
  %o = fa.attention %q, %k, %v : tensor<8x4xf32, "enc">, tensor<16x4xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

func.func @encoded_o(%q: tensor<8x4xf32>, %k: tensor<16x4xf32>, %v: tensor<16x4xf32>) -> tensor<8x4xf32, "enc"> {
  // expected-error @+1 {{'fa.attention' op expected o without a tensor encoding}}
  %o = fa.attention %q, %k, %v : tensor<8x4xf32>, tensor<16x4xf32>, tensor<16x4xf32> -> tensor<8x4xf32, "enc">
  return %o : tensor<8x4xf32, "enc">
}

// -----

func.func @encoded_mask(%q: tensor<8x4xf32>, %k: tensor<16x4xf32>, %v: tensor<16x4xf32>, %m: tensor<8x16xi1, "enc">) -> tensor<8x4xf32> {
  // expected-error @+1 {{'fa.attention' op expected mask without a tensor encoding}}
  %o = fa.attention %q, %k, %v mask(%m : tensor<8x16xi1, "enc">) : tensor<8x4xf32>, tensor<16x4xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}
