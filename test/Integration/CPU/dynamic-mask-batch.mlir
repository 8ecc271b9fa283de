// A mask with a dynamic batch dim: 1 at run time broadcasts over the batch,
// 2 gives each batch entry its own row. q, k are 0 (equal scores); the mask
// keeps one key: key 0 for both entries (broadcast), then key 0 for entry 0
// and key 1 for entry 1 (per entry). o is then that key's v: [1, 3] and
// [1, 4].
// RUN: fa-opt %s --fa-to-cpu="block-m=1 block-n=1" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so | FileCheck %s

func.func private @printMemrefF32(tensor<*xf32>)

func.func @attend(%q: tensor<2x1x1xf32>, %k: tensor<2x2x1xf32>, %v: tensor<2x2x1xf32>, %m: tensor<?x1x2xf32>) {
  %o = fa.attention %q, %k, %v mask(%m : tensor<?x1x2xf32>) scale(1.0) : tensor<2x1x1xf32>, tensor<2x2x1xf32>, tensor<2x2x1xf32> -> tensor<2x1x1xf32>
  %u = tensor.cast %o : tensor<2x1x1xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}

func.func @main() {
  %q = arith.constant dense<0.0> : tensor<2x1x1xf32>
  %k = arith.constant dense<0.0> : tensor<2x2x1xf32>
  %v = arith.constant dense<[[[1.0], [2.0]], [[3.0], [4.0]]]> : tensor<2x2x1xf32>
  %m1 = arith.constant dense<[[[0.0, 0xFF800000]]]> : tensor<1x1x2xf32>
  %d1 = tensor.cast %m1 : tensor<1x1x2xf32> to tensor<?x1x2xf32>
  // CHECK: sizes = [2, 1, 1]
  // CHECK-NEXT: {{\[\[\[}}1]],
  // CHECK-NEXT: {{\[\[}}3]]]
  call @attend(%q, %k, %v, %d1) : (tensor<2x1x1xf32>, tensor<2x2x1xf32>, tensor<2x2x1xf32>, tensor<?x1x2xf32>) -> ()
  %m2 = arith.constant dense<[[[0.0, 0xFF800000]], [[0xFF800000, 0.0]]]> : tensor<2x1x2xf32>
  %d2 = tensor.cast %m2 : tensor<2x1x2xf32> to tensor<?x1x2xf32>
  // CHECK: sizes = [2, 1, 1]
  // CHECK-NEXT: {{\[\[\[}}1]],
  // CHECK-NEXT: {{\[\[}}4]]]
  call @attend(%q, %k, %v, %d2) : (tensor<2x1x1xf32>, tensor<2x2x1xf32>, tensor<2x2x1xf32>, tensor<?x1x2xf32>) -> ()
  return
}
