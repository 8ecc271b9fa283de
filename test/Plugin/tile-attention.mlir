// FAPlugin.so in the stock mlir-opt of LLVM 22: the dialect plugin parses and
// prints fa.attention, the pass plugin runs fa-tile-attention with an option.
// REQUIRES: fa-plugin

// RUN: %mlir_opt_plugin %s | FileCheck %s --check-prefix=ROUNDTRIP
// RUN: %mlir_opt_plugin %s --pass-pipeline="builtin.module(fa-tile-attention{block-m=32})" | FileCheck %s
// RUN: fa-opt %s --fa-tile-attention="block-m=32" > %t.fa-opt.mlir
// RUN: %mlir_opt_plugin %s --pass-pipeline="builtin.module(fa-tile-attention{block-m=32})" > %t.plugin.mlir
// RUN: diff %t.fa-opt.mlir %t.plugin.mlir

// A host that links fa itself (fa-opt here) keeps its own: loading the plugin
// into it registers nothing (it aborted the host before), and the plugin
// loaded twice into mlir-opt is fine too.
// RUN: fa-opt --load-dialect-plugin=%fa_plugin --load-pass-plugin=%fa_plugin %s --pass-pipeline="builtin.module(fa-tile-attention{block-m=32})" > %t.host.mlir
// RUN: diff %t.fa-opt.mlir %t.host.mlir
// RUN: %mlir_opt_plugin --load-dialect-plugin=%fa_plugin --load-pass-plugin=%fa_plugin %s --pass-pipeline="builtin.module(fa-tile-attention{block-m=32})" > %t.twice.mlir
// RUN: diff %t.fa-opt.mlir %t.twice.mlir

// ROUNDTRIP-LABEL: func.func @plugin_causal_lse
// ROUNDTRIP: fa.attention %{{.+}}, %{{.+}}, %{{.+}} causal(top_left) : tensor<2x100x32xf16>, tensor<2x100x32xf16>, tensor<2x100x16xf16> -> tensor<2x100x16xf16>, tensor<2x100xf32>

// CHECK-LABEL: func.func @plugin_causal_lse
// CHECK-NOT: fa.attention
// CHECK-DAG: %[[BM:.+]] = arith.constant 32 : index
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[BM]]
// CHECK: math.exp
// CHECK: math.log
// CHECK-NOT: fa.attention
func.func @plugin_causal_lse(%q: tensor<2x100x32xf16>, %k: tensor<2x100x32xf16>,
                             %v: tensor<2x100x16xf16>)
    -> (tensor<2x100x16xf16>, tensor<2x100xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(top_left)
      : tensor<2x100x32xf16>, tensor<2x100x32xf16>, tensor<2x100x16xf16>
      -> tensor<2x100x16xf16>, tensor<2x100xf32>
  return %o, %lse : tensor<2x100x16xf16>, tensor<2x100xf32>
}
