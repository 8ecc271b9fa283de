// RUN: fa-opt %s -split-input-file -verify-diagnostics

// One case per rule of AttentionBackwardOp::verify (the q/k/v rules are
// shared with fa.attention).

func.func @rank_below_two(%q: tensor<8xf32>, %k: tensor<8xf32>, %v: tensor<8xf32>, %o: tensor<8xf32>, %do: tensor<8xf32>, %lse: tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected q of rank >= 2 ([batch..., Tq, D]), got rank 1}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32> -> tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  return %dq, %dk, %dv : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

func.func @k_rank_mismatch(%q: tensor<2x8x4xf32>, %k: tensor<16x4xf32>, %v: tensor<2x16x6xf32>, %o: tensor<2x8x6xf32>, %do: tensor<2x8x6xf32>, %lse: tensor<2x8xf32>) -> (tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected k of rank 3 (the rank of q), got rank 2}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf32>, tensor<16x4xf32>, tensor<2x16x6xf32>, tensor<2x8x6xf32>, tensor<2x8x6xf32>, tensor<2x8xf32> -> tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
  return %dq, %dk, %dv : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
}

// -----

func.func @v_rank_mismatch(%q: tensor<2x8x4xf32>, %k: tensor<2x16x4xf32>, %v: tensor<1x2x16x6xf32>, %o: tensor<2x8x6xf32>, %do: tensor<2x8x6xf32>, %lse: tensor<2x8xf32>) -> (tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected v of rank 3 (the rank of q), got rank 4}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<1x2x16x6xf32>, tensor<2x8x6xf32>, tensor<2x8x6xf32>, tensor<2x8xf32> -> tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
  return %dq, %dk, %dv : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
}

// -----

func.func @unsupported_q_element_type(%q: tensor<2x8x4xf64>, %k: tensor<2x16x4xf64>, %v: tensor<2x16x6xf64>, %o: tensor<2x8x6xf32>, %do: tensor<2x8x6xf32>, %lse: tensor<2x8xf32>) -> (tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected q element type f16, bf16 or f32, got 'f64'}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf64>, tensor<2x16x4xf64>, tensor<2x16x6xf64>, tensor<2x8x6xf32>, tensor<2x8x6xf32>, tensor<2x8xf32> -> tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
  return %dq, %dk, %dv : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
}

// -----

func.func @k_element_type_mismatch(%q: tensor<2x8x4xf32>, %k: tensor<2x16x4xf16>, %v: tensor<2x16x6xf32>, %o: tensor<2x8x6xf32>, %do: tensor<2x8x6xf32>, %lse: tensor<2x8xf32>) -> (tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected k element type 'f32' (that of q), got 'f16'}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf32>, tensor<2x16x4xf16>, tensor<2x16x6xf32>, tensor<2x8x6xf32>, tensor<2x8x6xf32>, tensor<2x8xf32> -> tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
  return %dq, %dk, %dv : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
}

// -----

func.func @v_element_type_mismatch(%q: tensor<2x8x4xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x16x6xbf16>, %o: tensor<2x8x6xf32>, %do: tensor<2x8x6xf32>, %lse: tensor<2x8xf32>) -> (tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected v element type 'f32' (that of q), got 'bf16'}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xbf16>, tensor<2x8x6xf32>, tensor<2x8x6xf32>, tensor<2x8xf32> -> tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
  return %dq, %dk, %dv : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
}

// -----

func.func @k_batch_mismatch(%q: tensor<2x8x4xf32>, %k: tensor<3x16x4xf32>, %v: tensor<2x16x6xf32>, %o: tensor<2x8x6xf32>, %do: tensor<2x8x6xf32>, %lse: tensor<2x8xf32>) -> (tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected k batch dim 0 to be 2 (that of q), got 3}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf32>, tensor<3x16x4xf32>, tensor<2x16x6xf32>, tensor<2x8x6xf32>, tensor<2x8x6xf32>, tensor<2x8xf32> -> tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
  return %dq, %dk, %dv : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
}

// -----

func.func @v_batch_mismatch(%q: tensor<2x8x4xf32>, %k: tensor<2x16x4xf32>, %v: tensor<5x16x6xf32>, %o: tensor<2x8x6xf32>, %do: tensor<2x8x6xf32>, %lse: tensor<2x8xf32>) -> (tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected v batch dim 0 to be 2 (that of q), got 5}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<5x16x6xf32>, tensor<2x8x6xf32>, tensor<2x8x6xf32>, tensor<2x8xf32> -> tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
  return %dq, %dk, %dv : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
}

// -----

func.func @head_dim_mismatch(%q: tensor<2x8x4xf32>, %k: tensor<2x16x5xf32>, %v: tensor<2x16x6xf32>, %o: tensor<2x8x6xf32>, %do: tensor<2x8x6xf32>, %lse: tensor<2x8xf32>) -> (tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected k head_dim 4 (that of q), got 5}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf32>, tensor<2x16x5xf32>, tensor<2x16x6xf32>, tensor<2x8x6xf32>, tensor<2x8x6xf32>, tensor<2x8xf32> -> tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
  return %dq, %dk, %dv : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
}

// -----

func.func @kv_length_mismatch(%q: tensor<2x8x4xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x17x6xf32>, %o: tensor<2x8x6xf32>, %do: tensor<2x8x6xf32>, %lse: tensor<2x8xf32>) -> (tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected v seqlen 16 (that of k), got 17}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x17x6xf32>, tensor<2x8x6xf32>, tensor<2x8x6xf32>, tensor<2x8xf32> -> tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
  return %dq, %dk, %dv : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
}

// -----

func.func @o_element_type(%q: tensor<2x8x4xbf16>, %k: tensor<2x16x4xbf16>, %v: tensor<2x16x6xbf16>, %o: tensor<2x8x6xf16>, %do: tensor<2x8x6xf32>, %lse: tensor<2x8xf32>) -> (tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected o element type 'bf16' (that of q) or f32, got 'f16'}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xbf16>, tensor<2x16x4xbf16>, tensor<2x16x6xbf16>, tensor<2x8x6xf16>, tensor<2x8x6xf32>, tensor<2x8xf32> -> tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
  return %dq, %dk, %dv : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
}

// -----

func.func @o_rank(%q: tensor<2x8x4xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x16x6xf32>, %o: tensor<8x6xf32>, %do: tensor<2x8x6xf32>, %lse: tensor<2x8xf32>) -> (tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected o of rank 3 ([batch..., Tq, Dv]), got rank 2}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>, tensor<8x6xf32>, tensor<2x8x6xf32>, tensor<2x8xf32> -> tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
  return %dq, %dk, %dv : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
}

// -----

func.func @o_shape(%q: tensor<2x8x4xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x16x6xf32>, %o: tensor<2x8x4xf32>, %do: tensor<2x8x6xf32>, %lse: tensor<2x8xf32>) -> (tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected o dim 2 to be 6 ([batch..., Tq, Dv]), got 4}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>, tensor<2x8x4xf32>, tensor<2x8x6xf32>, tensor<2x8xf32> -> tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
  return %dq, %dk, %dv : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
}

// -----

func.func @do_element_type(%q: tensor<2x8x4xbf16>, %k: tensor<2x16x4xbf16>, %v: tensor<2x16x6xbf16>, %o: tensor<2x8x6xbf16>, %do: tensor<2x8x6xf16>, %lse: tensor<2x8xf32>) -> (tensor<2x8x4xbf16>, tensor<2x16x4xbf16>, tensor<2x16x6xbf16>) {
  // expected-error @+1 {{'fa.attention_backward' op expected do element type 'bf16' (that of q) or f32, got 'f16'}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xbf16>, tensor<2x16x4xbf16>, tensor<2x16x6xbf16>, tensor<2x8x6xbf16>, tensor<2x8x6xf16>, tensor<2x8xf32> -> tensor<2x8x4xbf16>, tensor<2x16x4xbf16>, tensor<2x16x6xbf16>
  return %dq, %dk, %dv : tensor<2x8x4xbf16>, tensor<2x16x4xbf16>, tensor<2x16x6xbf16>
}

// -----

func.func @do_rank(%q: tensor<2x8x4xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x16x6xf32>, %o: tensor<2x8x6xf32>, %do: tensor<1x2x8x6xf32>, %lse: tensor<2x8xf32>) -> (tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected do of rank 3 ([batch..., Tq, Dv]), got rank 4}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>, tensor<2x8x6xf32>, tensor<1x2x8x6xf32>, tensor<2x8xf32> -> tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
  return %dq, %dk, %dv : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
}

// -----

func.func @do_shape(%q: tensor<2x8x4xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x16x6xf32>, %o: tensor<2x8x6xf32>, %do: tensor<2x9x6xf32>, %lse: tensor<2x8xf32>) -> (tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected do dim 1 to be 8 ([batch..., Tq, Dv]), got 9}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>, tensor<2x8x6xf32>, tensor<2x9x6xf32>, tensor<2x8xf32> -> tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
  return %dq, %dk, %dv : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
}

// -----

func.func @lse_element_type(%q: tensor<2x8x4xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x16x6xf32>, %o: tensor<2x8x6xf32>, %do: tensor<2x8x6xf32>, %lse: tensor<2x8xf16>) -> (tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected lse element type f32, got 'f16'}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>, tensor<2x8x6xf32>, tensor<2x8x6xf32>, tensor<2x8xf16> -> tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
  return %dq, %dk, %dv : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
}

// -----

func.func @lse_rank(%q: tensor<2x8x4xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x16x6xf32>, %o: tensor<2x8x6xf32>, %do: tensor<2x8x6xf32>, %lse: tensor<2x8x1xf32>) -> (tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected lse of rank 2 ([batch..., Tq]), got rank 3}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>, tensor<2x8x6xf32>, tensor<2x8x6xf32>, tensor<2x8x1xf32> -> tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
  return %dq, %dk, %dv : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
}

// -----

func.func @lse_shape(%q: tensor<2x8x4xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x16x6xf32>, %o: tensor<2x8x6xf32>, %do: tensor<2x8x6xf32>, %lse: tensor<2x16xf32>) -> (tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected lse dim 1 to be 8 ([batch..., Tq]), got 16}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>, tensor<2x8x6xf32>, tensor<2x8x6xf32>, tensor<2x16xf32> -> tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
  return %dq, %dk, %dv : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
}

// -----

func.func @non_positive_scale(%q: tensor<2x8x4xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x16x6xf32>, %o: tensor<2x8x6xf32>, %do: tensor<2x8x6xf32>, %lse: tensor<2x8xf32>) -> (tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected a finite, positive scale, got -1}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse scale(-1.0) : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>, tensor<2x8x6xf32>, tensor<2x8x6xf32>, tensor<2x8xf32> -> tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
  return %dq, %dk, %dv : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
}

// -----

func.func @dq_element_type(%q: tensor<2x8x4xf16>, %k: tensor<2x16x4xf16>, %v: tensor<2x16x6xf16>, %o: tensor<2x8x6xf16>, %do: tensor<2x8x6xf16>, %lse: tensor<2x8xf32>) -> (tensor<2x8x4xbf16>, tensor<2x16x4xf16>, tensor<2x16x6xf16>) {
  // expected-error @+1 {{'fa.attention_backward' op expected dq element type 'f16' (that of q) or f32, got 'bf16'}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf16>, tensor<2x16x4xf16>, tensor<2x16x6xf16>, tensor<2x8x6xf16>, tensor<2x8x6xf16>, tensor<2x8xf32> -> tensor<2x8x4xbf16>, tensor<2x16x4xf16>, tensor<2x16x6xf16>
  return %dq, %dk, %dv : tensor<2x8x4xbf16>, tensor<2x16x4xf16>, tensor<2x16x6xf16>
}

// -----

func.func @dq_rank(%q: tensor<2x8x4xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x16x6xf32>, %o: tensor<2x8x6xf32>, %do: tensor<2x8x6xf32>, %lse: tensor<2x8xf32>) -> (tensor<16x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected dq of rank 3 (that of q, [batch..., Tq, D]), got rank 2}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>, tensor<2x8x6xf32>, tensor<2x8x6xf32>, tensor<2x8xf32> -> tensor<16x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
  return %dq, %dk, %dv : tensor<16x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
}

// -----

func.func @dq_shape(%q: tensor<2x8x4xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x16x6xf32>, %o: tensor<2x8x6xf32>, %do: tensor<2x8x6xf32>, %lse: tensor<2x8xf32>) -> (tensor<2x16x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected dq dim 1 to be 8 (that of q, [batch..., Tq, D]), got 16}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>, tensor<2x8x6xf32>, tensor<2x8x6xf32>, tensor<2x8xf32> -> tensor<2x16x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
  return %dq, %dk, %dv : tensor<2x16x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
}

// -----

func.func @dk_element_type(%q: tensor<2x8x4xbf16>, %k: tensor<2x16x4xbf16>, %v: tensor<2x16x6xbf16>, %o: tensor<2x8x6xbf16>, %do: tensor<2x8x6xbf16>, %lse: tensor<2x8xf32>) -> (tensor<2x8x4xbf16>, tensor<2x16x4xf16>, tensor<2x16x6xbf16>) {
  // expected-error @+1 {{'fa.attention_backward' op expected dk element type 'bf16' (that of q) or f32, got 'f16'}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xbf16>, tensor<2x16x4xbf16>, tensor<2x16x6xbf16>, tensor<2x8x6xbf16>, tensor<2x8x6xbf16>, tensor<2x8xf32> -> tensor<2x8x4xbf16>, tensor<2x16x4xf16>, tensor<2x16x6xbf16>
  return %dq, %dk, %dv : tensor<2x8x4xbf16>, tensor<2x16x4xf16>, tensor<2x16x6xbf16>
}

// -----

func.func @dk_rank(%q: tensor<2x8x4xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x16x6xf32>, %o: tensor<2x8x6xf32>, %do: tensor<2x8x6xf32>, %lse: tensor<2x8xf32>) -> (tensor<2x8x4xf32>, tensor<2x1x16x4xf32>, tensor<2x16x6xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected dk of rank 3 (that of k, [batch..., Tk, D]), got rank 4}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>, tensor<2x8x6xf32>, tensor<2x8x6xf32>, tensor<2x8xf32> -> tensor<2x8x4xf32>, tensor<2x1x16x4xf32>, tensor<2x16x6xf32>
  return %dq, %dk, %dv : tensor<2x8x4xf32>, tensor<2x1x16x4xf32>, tensor<2x16x6xf32>
}

// -----

func.func @dk_shape(%q: tensor<2x8x4xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x16x6xf32>, %o: tensor<2x8x6xf32>, %do: tensor<2x8x6xf32>, %lse: tensor<2x8xf32>) -> (tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x16x6xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected dk dim 1 to be 16 (that of k, [batch..., Tk, D]), got 8}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>, tensor<2x8x6xf32>, tensor<2x8x6xf32>, tensor<2x8xf32> -> tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x16x6xf32>
  return %dq, %dk, %dv : tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x16x6xf32>
}

// -----

func.func @dv_element_type(%q: tensor<2x8x4xbf16>, %k: tensor<2x16x4xbf16>, %v: tensor<2x16x6xbf16>, %o: tensor<2x8x6xbf16>, %do: tensor<2x8x6xbf16>, %lse: tensor<2x8xf32>) -> (tensor<2x8x4xbf16>, tensor<2x16x4xbf16>, tensor<2x16x6xf64>) {
  // expected-error @+1 {{'fa.attention_backward' op expected dv element type 'bf16' (that of q) or f32, got 'f64'}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xbf16>, tensor<2x16x4xbf16>, tensor<2x16x6xbf16>, tensor<2x8x6xbf16>, tensor<2x8x6xbf16>, tensor<2x8xf32> -> tensor<2x8x4xbf16>, tensor<2x16x4xbf16>, tensor<2x16x6xf64>
  return %dq, %dk, %dv : tensor<2x8x4xbf16>, tensor<2x16x4xbf16>, tensor<2x16x6xf64>
}

// -----

func.func @dv_rank(%q: tensor<2x8x4xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x16x6xf32>, %o: tensor<2x8x6xf32>, %do: tensor<2x8x6xf32>, %lse: tensor<2x8xf32>) -> (tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<16x6xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected dv of rank 3 (that of v, [batch..., Tk, Dv]), got rank 2}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>, tensor<2x8x6xf32>, tensor<2x8x6xf32>, tensor<2x8xf32> -> tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<16x6xf32>
  return %dq, %dk, %dv : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<16x6xf32>
}

// -----

func.func @dv_shape(%q: tensor<2x8x4xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x16x6xf32>, %o: tensor<2x8x6xf32>, %do: tensor<2x8x6xf32>, %lse: tensor<2x8xf32>) -> (tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x4xf32>) {
  // expected-error @+1 {{'fa.attention_backward' op expected dv dim 2 to be 6 (that of v, [batch..., Tk, Dv]), got 4}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>, tensor<2x8x6xf32>, tensor<2x8x6xf32>, tensor<2x8xf32> -> tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x4xf32>
  return %dq, %dk, %dv : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x4xf32>
}

// -----

// Tensor encodings: the fa ops take and give dense tensors.
func.func @encoded_do(%q: tensor<2x8x4xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x16x6xf32>, %o: tensor<2x8x6xf32>, %do: tensor<2x8x6xf32, "enc">, %lse: tensor<2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{'fa.attention_backward' op expected do without a tensor encoding (the fa ops take and give dense tensors), got 'tensor<2x8x6xf32, "enc">'}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>, tensor<2x8x6xf32>, tensor<2x8x6xf32, "enc">, tensor<2x8xf32> -> tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>
  return %dq : tensor<2x8x4xf32>
}

// -----

func.func @encoded_dk(%q: tensor<2x8x4xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x16x6xf32>, %o: tensor<2x8x6xf32>, %do: tensor<2x8x6xf32>, %lse: tensor<2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{'fa.attention_backward' op expected dk without a tensor encoding}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x4xf32>, tensor<2x16x4xf32>, tensor<2x16x6xf32>, tensor<2x8x6xf32>, tensor<2x8x6xf32>, tensor<2x8xf32> -> tensor<2x8x4xf32>, tensor<2x16x4xf32, "enc">, tensor<2x16x6xf32>
  return %dq : tensor<2x8x4xf32>
}
