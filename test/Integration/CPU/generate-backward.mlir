// The generated gradient function, tiled and run on the CPU, on a case
// worked by hand: q = [[1, 0]], k = [[1, 0], [0, 1]], v = [[1], [2]],
// do = [[1]], scale 1. p = softmax([1, 0]) = [0.731059, 0.268941],
// o = 1.268941, dv = p = [0.731059, 0.268941], dp = [1, 2],
// delta = 1.268941, ds = p * (dp - delta) = [-0.196612, 0.196612],
// dq = ds k = [-0.196612, 0.196612], dk = ds^T q = [[-0.196612, 0], [0.196612, 0]].
// RUN: fa-opt %s --fa-generate-backward --fa-to-cpu="block-m=1 block-n=1" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so | FileCheck %s

func.func private @printMemrefF32(tensor<*xf32>)

// Declared for the call below; fa-generate-backward defines it.
func.func private @attn_attention_0_grad(tensor<1x2xf32>, tensor<2x2xf32>, tensor<2x1xf32>, tensor<1x1xf32>) -> (tensor<1x2xf32>, tensor<2x2xf32>, tensor<2x1xf32>)

func.func @attn(%q: tensor<1x2xf32>, %k: tensor<2x2xf32>, %v: tensor<2x1xf32>) -> tensor<1x1xf32> {
  %o = fa.attention %q, %k, %v scale(1.0) : tensor<1x2xf32>, tensor<2x2xf32>, tensor<2x1xf32> -> tensor<1x1xf32>
  return %o : tensor<1x1xf32>
}

func.func @main() {
  %q = arith.constant dense<[[1.0, 0.0]]> : tensor<1x2xf32>
  %k = arith.constant dense<[[1.0, 0.0], [0.0, 1.0]]> : tensor<2x2xf32>
  %v = arith.constant dense<[[1.0], [2.0]]> : tensor<2x1xf32>
  %do = arith.constant dense<[[1.0]]> : tensor<1x1xf32>
  %dq, %dk, %dv = call @attn_attention_0_grad(%q, %k, %v, %do) : (tensor<1x2xf32>, tensor<2x2xf32>, tensor<2x1xf32>, tensor<1x1xf32>) -> (tensor<1x2xf32>, tensor<2x2xf32>, tensor<2x1xf32>)
  %a = tensor.cast %dq : tensor<1x2xf32> to tensor<*xf32>
  // CHECK: sizes = [1, 2]
  // CHECK-NEXT: {{\[\[}}-0.19661{{[0-9]*}}, 0.19661{{[0-9]*}}]]
  call @printMemrefF32(%a) : (tensor<*xf32>) -> ()
  %b = tensor.cast %dk : tensor<2x2xf32> to tensor<*xf32>
  // CHECK: sizes = [2, 2]
  // CHECK-NEXT: {{\[\[}}-0.19661{{[0-9]*}}, 0],
  // CHECK-NEXT: [0.19661{{[0-9]*}}, 0]]
  call @printMemrefF32(%b) : (tensor<*xf32>) -> ()
  %c = tensor.cast %dv : tensor<2x1xf32> to tensor<*xf32>
  // CHECK: sizes = [2, 1]
  // CHECK-NEXT: {{\[\[}}0.731059],
  // CHECK-NEXT: [0.268941]]
  call @printMemrefF32(%c) : (tensor<*xf32>) -> ()
  return
}
