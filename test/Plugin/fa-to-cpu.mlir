// The fa-to-cpu pipeline from FAPlugin.so in the stock mlir-opt: the same
// LLVM dialect as fa-opt's, and it runs under mlir-runner with the right
// numbers (the largest score in the last key tile forces a rescale:
// softmax([0, 0, 0, 20]) . [1, 2, 3, 4] = 4, lse = 20).
// REQUIRES: fa-plugin

// RUN: %mlir_opt_plugin %s --pass-pipeline="builtin.module(fa-to-cpu{block-m=1 block-n=2})" | FileCheck %s --check-prefix=IR
// RUN: fa-opt %s --fa-to-cpu="block-m=1 block-n=2" > %t.fa-opt.mlir
// RUN: %mlir_opt_plugin %s --pass-pipeline="builtin.module(fa-to-cpu{block-m=1 block-n=2})" > %t.plugin.mlir
// RUN: diff %t.fa-opt.mlir %t.plugin.mlir
// RUN: mlir-runner %t.plugin.mlir -e main -entry-point-result=void -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so | FileCheck %s --check-prefix=EXEC

// IR-LABEL: llvm.func @main()
// IR-NOT: fa.attention
// IR-NOT: tensor<
// IR: llvm.call @printMemrefF32

func.func private @printMemrefF32(tensor<*xf32>)

func.func @main() {
  %q = arith.constant dense<[[1.0]]> : tensor<1x1xf32>
  %k = arith.constant dense<[[0.0], [0.0], [0.0], [20.0]]> : tensor<4x1xf32>
  %v = arith.constant dense<[[1.0], [2.0], [3.0], [4.0]]> : tensor<4x1xf32>
  %o, %lse = fa.attention %q, %k, %v scale(1.0) : tensor<1x1xf32>, tensor<4x1xf32>, tensor<4x1xf32> -> tensor<1x1xf32>, tensor<1xf32>
  %uo = tensor.cast %o : tensor<1x1xf32> to tensor<*xf32>
  // EXEC: sizes = [1, 1]
  // EXEC-NEXT: {{\[\[}}4]]
  call @printMemrefF32(%uo) : (tensor<*xf32>) -> ()
  %ul = tensor.cast %lse : tensor<1xf32> to tensor<*xf32>
  // EXEC: sizes = [1]
  // EXEC-NEXT: [20]
  call @printMemrefF32(%ul) : (tensor<*xf32>) -> ()
  return
}
