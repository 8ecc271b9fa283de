// RUN: fa-opt %s --fa-generate-backward --split-input-file --verify-diagnostics

// The gradient function's name is taken by a function with a body.
func.func @clash(%q: tensor<8x4xf32>, %k: tensor<8x4xf32>, %v: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{fa-generate-backward: cannot add @clash_attention_0_grad: the module already has a symbol of that name that is not a declaration of type '(tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>)'}}
  %o = fa.attention %q, %k, %v : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}
func.func @clash_attention_0_grad() {
  return
}

// -----

// A forward declaration of the right name but the wrong type.
func.func @wrong_type(%q: tensor<8x4xf32>, %k: tensor<8x4xf32>, %v: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{fa-generate-backward: cannot add @wrong_type_attention_0_grad: the module already has a symbol of that name that is not a declaration of type}}
  %o = fa.attention %q, %k, %v : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}
func.func private @wrong_type_attention_0_grad(tensor<8x4xf32>) -> tensor<8x4xf32>
