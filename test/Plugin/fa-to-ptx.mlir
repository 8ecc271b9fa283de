// The fa-to-ptx pipeline and convert-fa-to-gpu from FAPlugin.so in the stock
// mlir-opt: the same PTX and manifest files as fa-opt's (the IR itself
// differs only in gpu.binary's compile-time property).
// REQUIRES: fa-plugin

// RUN: rm -rf %t && mkdir -p %t/fa-opt %t/plugin
// RUN: %mlir_opt_plugin %s --pass-pipeline="builtin.module(convert-fa-to-gpu{block-m=64 block-n=32})" | FileCheck %s --check-prefix=GPU
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a output-dir=%t/fa-opt" > %t/fa-opt.mlir
// RUN: %mlir_opt_plugin %s --pass-pipeline="builtin.module(fa-to-ptx{chip=sm_90a output-dir=%t/plugin})" > %t/plugin.mlir
// RUN: FileCheck %s --check-prefix=BIN < %t/plugin.mlir
// RUN: diff %t/fa-opt/plugin_attention_attention_0.ptx %t/plugin/plugin_attention_attention_0.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/plugin/plugin_attention_attention_0.manifest
// RUN: diff %t/fa-opt/plugin_attention_attention_0.manifest %t/plugin/plugin_attention_attention_0.manifest

// GPU: gpu.module
// GPU: gpu.func @{{.+}} kernel
// GPU-NOT: fa.attention

// MANIFEST: kernel plugin_attention_attention_0

// BIN: gpu.binary
// BIN-SAME: #gpu.object<#nvvm.target<chip = "sm_90a"
// BIN-NOT: fa.attention

func.func @plugin_attention(%q: tensor<2x128x64xf16>, %k: tensor<2x128x64xf16>,
                            %v: tensor<2x128x64xf16>) -> tensor<2x128x64xf16> {
  %o = fa.attention %q, %k, %v causal(bottom_right)
      : tensor<2x128x64xf16>, tensor<2x128x64xf16>, tensor<2x128x64xf16>
      -> tensor<2x128x64xf16>
  return %o : tensor<2x128x64xf16>
}
