// The sm_90a TMA wgmma forward with a static seqlen_k: the kernel reads Tk
// through empty inline PTX, so that it is the kernel of a dynamic Tk
// (LLVM specialized the key loop of a constant Tk, and ptxas spilled 24-476
// bytes of the default two-tile D 128 kernel at Tk 640-4096; found by a
// break test). Static and dynamic Tk give the same registers, no spills.
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a output-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t/static_k_attention_0.ptx
// RUN: %ptxas -arch=sm_90a -v %t/static_k_attention_0.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/static_all_attention_0.ptx -o %t/b.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/static_causal_attention_0.ptx -o %t/c.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL

// PTX-LABEL: .entry static_k_attention_0(
// PTX: mov.b64 [[TK:%rd[0-9]+]], 3000;
// PTX-NEXT: // begin inline asm
// PTX-NEXT: // end inline asm

// NOSPILL: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// NOSPILL-NOT: bytes spill
// NOSPILL-NOT: C751{{[0-9]}}

func.func @static_k(%q: tensor<?x?x128xbf16>, %k: tensor<?x3000x128xbf16>, %v: tensor<?x3000x128xbf16>) -> tensor<?x?x128xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x?x128xbf16>, tensor<?x3000x128xbf16>, tensor<?x3000x128xbf16> -> tensor<?x?x128xbf16>
  return %o : tensor<?x?x128xbf16>
}

func.func @static_all(%q: tensor<2x8x4096x128xf16>, %k: tensor<2x8x4096x128xf16>, %v: tensor<2x8x4096x128xf16>) -> tensor<2x8x4096x128xf16> {
  %o = fa.attention %q, %k, %v : tensor<2x8x4096x128xf16>, tensor<2x8x4096x128xf16>, tensor<2x8x4096x128xf16> -> tensor<2x8x4096x128xf16>
  return %o : tensor<2x8x4096x128xf16>
}

func.func @static_causal(%q: tensor<4x640x128xbf16>, %k: tensor<4x640x128xbf16>, %v: tensor<4x640x128xbf16>) -> tensor<4x640x128xbf16> {
  %o = fa.attention %q, %k, %v causal(top_left) : tensor<4x640x128xbf16>, tensor<4x640x128xbf16>, tensor<4x640x128xbf16> -> tensor<4x640x128xbf16>
  return %o : tensor<4x640x128xbf16>
}
