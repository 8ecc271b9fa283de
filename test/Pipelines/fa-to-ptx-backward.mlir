// fa-to-ptx on fa.attention_backward writes one PTX module and one version 2
// manifest per op (docs/ARTIFACTS.md, "Backward"): the kernels in launch
// order, each with its params and grid, and the scratch buffers. The scalar
// kernels (tensor-cores=false) in both dq modes, then the tensor-core
// kernels (the default on sm_80 and later for f16/bf16).

// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a tensor-cores=false output-dir=%t/atomic" -o /dev/null
// RUN: FileCheck %s --check-prefix=MANIFEST --match-full-lines --strict-whitespace < %t/atomic/grads_attention_backward_0.manifest
// RUN: FileCheck %s --check-prefix=PTX < %t/atomic/grads_attention_backward_0.ptx
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a tensor-cores=false deterministic=true output-dir=%t/det" -o /dev/null
// RUN: FileCheck %s --check-prefix=DET < %t/det/grads_attention_backward_0.manifest
// RUN: FileCheck %s --check-prefix=DETPTX < %t/det/grads_attention_backward_0.ptx
// RUN: fa-opt %s --fa-to-ptx="chip=sm_80 output-dir=%t/tc" -o /dev/null
// RUN: FileCheck %s --check-prefix=TC --match-full-lines < %t/tc/grads_attention_backward_0.manifest
// RUN: FileCheck %s --check-prefix=TCPTX < %t/tc/grads_attention_backward_0.ptx

// MANIFEST:# fa backward manifest
// MANIFEST-NEXT:version 2
// MANIFEST-NEXT:op attention_backward
// MANIFEST-NEXT:name grads_attention_backward_0
// MANIFEST-NEXT:ptx grads_attention_backward_0.ptx
// MANIFEST-NEXT:chip sm_90a
// MANIFEST-NEXT:dtype f16
// MANIFEST-NEXT:o_dtype f16
// MANIFEST-NEXT:do_dtype f16
// MANIFEST-NEXT:dq_dtype f16
// MANIFEST-NEXT:dk_dtype f32
// MANIFEST-NEXT:dv_dtype f16
// MANIFEST-NEXT:causal bottom_right
// MANIFEST-NEXT:scale 0.0883883461
// MANIFEST-NEXT:batch ?
// MANIFEST-NEXT:batch_shape ? 4
// MANIFEST-NEXT:seqlen_q ?
// MANIFEST-NEXT:seqlen_k 512
// MANIFEST-NEXT:head_dim 128
// MANIFEST-NEXT:head_dim_v 64
// MANIFEST-NEXT:deterministic 0
// MANIFEST-NEXT:scratch delta f32 batch seqlen_q
// MANIFEST-NEXT:scratch dq_accum f32 batch seqlen_q head_dim
// MANIFEST-NEXT:kernel grads_attention_backward_0_delta
// MANIFEST-NEXT:threads 128
// MANIFEST-NEXT:shared_bytes 0
// MANIFEST-NEXT:params o do delta dq_accum
// MANIFEST-NEXT:grid ceil_div(seqlen_q,threads) batch 1
// MANIFEST-NEXT:kernel grads_attention_backward_0_dkdv
// MANIFEST-NEXT:threads 64
// MANIFEST-NEXT:block_m 32
// MANIFEST-NEXT:block_n 64
// MANIFEST-NEXT:shared_bytes 0
// MANIFEST-NEXT:params q k v do lse delta dk dv dq_accum
// MANIFEST-NEXT:grid ceil_div(seqlen_k,block_n) batch 1
// MANIFEST-NEXT:kernel grads_attention_backward_0_dq_convert
// MANIFEST-NEXT:threads 128
// MANIFEST-NEXT:shared_bytes 0
// MANIFEST-NEXT:params dq_accum dq
// MANIFEST-NEXT:grid ceil_div(seqlen_q,threads) batch 1
// MANIFEST-EMPTY:

// The dq accumulation is a global f32 atomic add; barriers in the dk/dv
// kernel.
// PTX: .entry grads_attention_backward_0_delta(
// PTX: .entry grads_attention_backward_0_dkdv(
// PTX: bar.sync
// PTX: {{(red|atom)}}.global.add.f32
// PTX: .entry grads_attention_backward_0_dq_convert(

// DET: deterministic 1
// DET: scratch delta f32 batch seqlen_q
// DET-NOT: dq_accum
// DET: kernel grads_attention_backward_0_dq
// DET-NEXT: threads 64
// DET-NEXT: block_m 64
// DET-NEXT: block_n 64
// DET-NEXT: shared_bytes 0
// DET-NEXT: params q k v do lse delta dq
// DET-NEXT: grid ceil_div(seqlen_q,block_m) batch 1
// DETPTX-NOT: .add.f32
// DETPTX: .entry grads_attention_backward_0_dq(
// DETPTX-NOT: {{(red|atom)}}.global

// Tensor cores: always the deterministic list (_delta, _dkdv, _dq), no
// dq accumulator; the _dkdv blocks hold 64 keys (4 warps of 16), query
// tiles of 32 rows (head dim 128); _dq blocks 64 queries over key tiles of
// 32; dynamic workgroup memory.
// TC:chip sm_80
// TC:deterministic 1
// TC-NEXT:row_align 16
// TC-NEXT:scratch delta f32 batch seqlen_q
// TC-NEXT:kernel grads_attention_backward_0_delta
// TC:kernel grads_attention_backward_0_dkdv
// TC-NEXT:threads 128
// TC-NEXT:block_m 32
// TC-NEXT:block_n 64
// TC-NEXT:shared_bytes 53248
// TC-NEXT:params q k v do lse delta dk dv
// TC-NEXT:grid ceil_div(seqlen_k,block_n) batch 1
// TC-NEXT:kernel grads_attention_backward_0_dq
// TC-NEXT:threads 128
// TC-NEXT:block_m 64
// TC-NEXT:block_n 32
// TC-NEXT:shared_bytes 53248
// TC-NEXT:params q k v do lse delta dq
// TC-NEXT:grid ceil_div(seqlen_q,block_m) batch 1
// TCPTX: .entry grads_attention_backward_0_dkdv(
// TCPTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// TCPTX: .entry grads_attention_backward_0_dq(
// TCPTX-NOT: {{[[:space:]](red|atom)\.global}}
// TCPTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32

func.func @grads(%q: tensor<?x4x?x128xf16>, %k: tensor<?x4x512x128xf16>,
                 %v: tensor<?x4x512x64xf16>, %o: tensor<?x4x?x64xf16>,
                 %do: tensor<?x4x?x64xf16>, %lse: tensor<?x4x?xf32>)
    -> (tensor<?x4x?x128xf16>, tensor<?x4x512x128xf32>, tensor<?x4x512x64xf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(bottom_right)
      : tensor<?x4x?x128xf16>, tensor<?x4x512x128xf16>, tensor<?x4x512x64xf16>,
        tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?xf32>
     -> tensor<?x4x?x128xf16>, tensor<?x4x512x128xf32>, tensor<?x4x512x64xf16>
  return %dq, %dk, %dv : tensor<?x4x?x128xf16>, tensor<?x4x512x128xf32>, tensor<?x4x512x64xf16>
}
