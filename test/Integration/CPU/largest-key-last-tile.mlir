// The largest score arrives in the last key tile (blocks 1x2): the running
// max must be raised and the earlier sum and accumulator rescaled.
// softmax([0, 0, 0, 20]) . [1, 2, 3, 4] = 4.0 (to 6 digits); lse = 20.
// RUN: fa-opt %s --fa-to-cpu="block-m=1 block-n=2" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so | FileCheck %s

func.func private @printMemrefF32(tensor<*xf32>)

func.func @main() {
  %q = arith.constant dense<[[1.0]]> : tensor<1x1xf32>
  %k = arith.constant dense<[[0.0], [0.0], [0.0], [20.0]]> : tensor<4x1xf32>
  %v = arith.constant dense<[[1.0], [2.0], [3.0], [4.0]]> : tensor<4x1xf32>
  %o, %lse = fa.attention %q, %k, %v scale(1.0) : tensor<1x1xf32>, tensor<4x1xf32>, tensor<4x1xf32> -> tensor<1x1xf32>, tensor<1xf32>
  %uo = tensor.cast %o : tensor<1x1xf32> to tensor<*xf32>
  // CHECK: sizes = [1, 1]
  // CHECK-NEXT: {{\[\[}}4]]
  call @printMemrefF32(%uo) : (tensor<*xf32>) -> ()
  %ul = tensor.cast %lse : tensor<1xf32> to tensor<*xf32>
  // CHECK: sizes = [1]
  // CHECK-NEXT: [20]
  call @printMemrefF32(%ul) : (tensor<*xf32>) -> ()
  return
}
