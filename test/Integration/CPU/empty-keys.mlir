// Tk = 0: every query row has no visible key, so o = 0 and lse = -inf
// (never NaN). Also a fully masked row under bottom-right causal with
// Tq > Tk: rows 0 and 1 of a (3 x 1) problem see no key.
// RUN: fa-opt %s --fa-to-cpu="block-m=2 block-n=2" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so | FileCheck %s

func.func private @printMemrefF32(tensor<*xf32>)

func.func @main() {
  %q = arith.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %k = tensor.empty() : tensor<0x2xf32>
  %v = tensor.empty() : tensor<0x3xf32>
  %o, %lse = fa.attention %q, %k, %v : tensor<3x2xf32>, tensor<0x2xf32>, tensor<0x3xf32> -> tensor<3x3xf32>, tensor<3xf32>
  %uo = tensor.cast %o : tensor<3x3xf32> to tensor<*xf32>
  // CHECK: sizes = [3, 3]
  // CHECK-NEXT: {{\[\[}}0,   0,   0],
  // CHECK-NEXT: [0,   0,   0],
  // CHECK-NEXT: [0,   0,   0]]
  call @printMemrefF32(%uo) : (tensor<*xf32>) -> ()
  %ul = tensor.cast %lse : tensor<3xf32> to tensor<*xf32>
  // CHECK: sizes = [3]
  // CHECK-NEXT: [-inf,  -inf,  -inf]
  call @printMemrefF32(%ul) : (tensor<*xf32>) -> ()

  %k1 = arith.constant dense<[[1.0, 1.0]]> : tensor<1x2xf32>
  %v1 = arith.constant dense<[[7.0, 8.0, 9.0]]> : tensor<1x3xf32>
  %o1, %lse1 = fa.attention %q, %k1, %v1 scale(1.0) causal(bottom_right) : tensor<3x2xf32>, tensor<1x2xf32>, tensor<1x3xf32> -> tensor<3x3xf32>, tensor<3xf32>
  %uo1 = tensor.cast %o1 : tensor<3x3xf32> to tensor<*xf32>
  // CHECK: sizes = [3, 3]
  // CHECK-NEXT: {{\[\[}}0,   0,   0],
  // CHECK-NEXT: [0,   0,   0],
  // CHECK-NEXT: [7,   8,   9]]
  call @printMemrefF32(%uo1) : (tensor<*xf32>) -> ()
  %ul1 = tensor.cast %lse1 : tensor<3xf32> to tensor<*xf32>
  // CHECK: sizes = [3]
  // CHECK-NEXT: [-inf,  -inf,  11]
  call @printMemrefF32(%ul1) : (tensor<*xf32>) -> ()
  return
}
