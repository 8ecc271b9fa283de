// fa-to-ptx: one gpu.binary of PTX per fa.attention, and with output-dir the
// <kernel>.ptx and <kernel>.manifest of docs/ARTIFACTS.md.

// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-opt %s --fa-to-ptx | FileCheck %s --check-prefix=IR
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a output-dir=%t/sm90" -o /dev/null
// RUN: FileCheck %s --check-prefix=MANIFEST --match-full-lines --strict-whitespace < %t/sm90/main_attention_0.manifest
// RUN: FileCheck %s --check-prefix=PTX90 --implicit-check-not=.extern < %t/sm90/main_attention_0.ptx
// RUN: FileCheck %s --check-prefix=SECOND < %t/sm90/other_attention_0.manifest
// RUN: fa-opt %s --fa-to-ptx="chip=sm_80 block-m=128 block-n=32 output-dir=%t/sm80" -o /dev/null
// RUN: FileCheck %s --check-prefix=SM80 < %t/sm80/main_attention_0.manifest
// RUN: FileCheck %s --check-prefix=PTX80 --implicit-check-not=.extern < %t/sm80/main_attention_0.ptx
// RUN: not fa-opt %s --fa-to-ptx="output-dir=/dev/null/fa" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NODIR
// An output-dir that exists as a file: reported at the input file, before
// any kernel is written.
// RUN: touch %t/file && not fa-opt %s --fa-to-ptx="output-dir=%t/file" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOTDIR
// RUN: fa-opt %s --fa-to-ptx="chip=sm_75 output-dir=%t/sm75" -o /dev/null
// RUN: FileCheck %s --check-prefix=SM75 < %t/sm75/main_attention_0.manifest
// RUN: FileCheck %s --check-prefix=PTX75 < %t/sm75/main_attention_0.ptx

// Without output-dir the pipeline only prints the module of gpu.binary ops.
// IR-LABEL: module attributes
// IR-SAME: fa.manifests
// IR-NOT: func.func
// IR-NOT: gpu.module
// IR: gpu.binary @main_attention_0 [#gpu.object<#nvvm.target<chip = "sm_90a", features = "+ptx81">, {{.*}}assembly = "{{.*}}.entry main_attention_0
// IR: gpu.binary @other_attention_0 [#gpu.object<#nvvm.target<chip = "sm_90a", features = "+ptx81">, {{.*}}assembly =

// The example of docs/ARTIFACTS.md, line by line.
//      MANIFEST:# fa kernel manifest
// MANIFEST-NEXT:version 3
// MANIFEST-NEXT:kernel main_attention_0
// MANIFEST-NEXT:ptx main_attention_0.ptx
// MANIFEST-NEXT:chip sm_90a
// MANIFEST-NEXT:dtype bf16
// MANIFEST-NEXT:o_dtype bf16
// MANIFEST-NEXT:causal top_left
// MANIFEST-NEXT:scale 0.125
// MANIFEST-NEXT:batch 16
// MANIFEST-NEXT:batch_shape 2 8
// MANIFEST-NEXT:seqlen_q ?
// MANIFEST-NEXT:seqlen_k ?
// MANIFEST-NEXT:head_dim 64
// MANIFEST-NEXT:head_dim_v 64
// MANIFEST-NEXT:has_lse 1
// MANIFEST-NEXT:block_m 192
// MANIFEST-NEXT:block_n 128
// MANIFEST-NEXT:threads 512
// MANIFEST-NEXT:shared_bytes 90192
// MANIFEST-NEXT:row_align 16
// MANIFEST-NEXT:index_bits 32
// MANIFEST-NEXT:params q k v o lse
// MANIFEST-NEXT:tensor_map q 64 192 128
// MANIFEST-NEXT:tensor_map k 64 128 128
// MANIFEST-NEXT:tensor_map v 64 128 128
// MANIFEST-NEXT:tensor_map o 64 16 128
// MANIFEST-NEXT:grid ceil_div(seqlen_q,block_m) batch 1
//  MANIFEST-NOT:{{.}}

// libdevice is linked: no external function (__nv_expf, ...) is left
// (--implicit-check-not on the RUN lines).
// PTX90: .target sm_90a
// PTX90: .visible .entry main_attention_0(
// PTX90: .maxntid 512, 1, 1
// PTX90: .shared .align 1024 .b8 __dynamic_shmem
// PTX90: bar.sync
// PTX90: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16

// SECOND: kernel other_attention_0
// SECOND: dtype f16
// SECOND: o_dtype f32
// SECOND: causal bottom_right
// SECOND: scale 0.0883883461
// SECOND: batch ?
// SECOND: batch_shape ?
// SECOND: seqlen_q 256
// SECOND: seqlen_k 512
// SECOND: head_dim 128
// SECOND: head_dim_v 128
// SECOND: has_lse 0
// SECOND: params q k v o
// SECOND-NOT: lse

// SM80: chip sm_80
// SM80: block_m 128
// SM80: block_n 32
// SM80: threads 128

// sm_80 and later: the tensor-core kernel (cp.async tiles, ldmatrix,
// bf16 mma.sync with f32 accumulation, ex2 on the SFU).
// PTX80: .target sm_80
// PTX80: .maxntid 128, 1, 1
// PTX80-DAG: cp.async.cg.shared.global
// PTX80-DAG: cp.async.wait_group 0;
// PTX80-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX80-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX80-DAG: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX80-DAG: ex2.approx.ftz.f32
// PTX80-DAG: shfl.sync.bfly.b32

// Before sm_80 (no m16n8k16 mma.sync on bf16): the scalar kernel, one
// thread per query row.
// SM75: chip sm_75
// SM75: block_m 64
// SM75: threads 64
// SM75: shared_bytes 0
// PTX75: .target sm_75
// PTX75-NOT: mma.sync

// NODIR: error: fa-export-kernels: cannot create directory '/dev/null/fa'
// NOTDIR: fa-to-ptx.mlir:0:0: error: fa-export-kernels: output-dir '{{.*}}file' exists and is not a directory

func.func @main(%q: tensor<2x8x?x64xbf16>, %k: tensor<2x8x?x64xbf16>,
                %v: tensor<2x8x?x64xbf16>) -> (tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v scale(0.125) causal(top_left)
      : tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>
      -> tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>
  return %o, %lse : tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>
}

func.func @other(%q: tensor<?x256x128xf16>, %k: tensor<?x512x128xf16>,
                 %v: tensor<?x512x128xf16>) -> tensor<?x256x128xf32> {
  %o = fa.attention %q, %k, %v causal(bottom_right)
      : tensor<?x256x128xf16>, tensor<?x512x128xf16>, tensor<?x512x128xf16>
      -> tensor<?x256x128xf32>
  return %o : tensor<?x256x128xf32>
}
