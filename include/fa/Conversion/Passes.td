//===- Passes.td - fa conversion passes --------------------*- tablegen -*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#ifndef FA_CONVERSION_PASSES_TD
#define FA_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// FAToGPU
//===----------------------------------------------------------------------===//

def ConvertFAToGPU : Pass<"convert-fa-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Lower each fa.attention to a gpu.module holding one FlashAttention kernel";
  let description = [{
    Replaces every `fa.attention` by a `gpu.module @<func>_attention_<n>`
    holding one `gpu.func ... kernel` of the same name (`<func>` is the
    enclosing `func.func`, `<n>` the index of the op in it). The kernel
    follows the ABI of docs/ARTIFACTS.md: its arguments are the memrefs
    `q`, `k`, `v`, `o` (and `lse` when the op returns it) with the batch
    dims flattened into one (`[batch, T, D]`; lse `[batch, Tq]`), with a
    dynamic offset and dynamic strides (the kernel honours the strides the
    launcher passes).

    One launch computes the whole attention. `gpu.block_id x` is the query
    block (`block-m` rows), `gpu.block_id y` the flattened batch index, and
    each of the `block-m` threads of a block owns one query row. The row of
    `q` and the f32 output accumulator live in private memory. Key/value
    blocks of `block-n` rows are copied cooperatively into workgroup
    (shared) memory between two `gpu.barrier`s, then every thread runs the
    online softmax on them (FlashAttention-2, Dao 2023, arXiv:2307.08691,
    Algorithm 1): running max `m`, running sum `l`, unnormalized f32
    accumulator, rescaled by `exp(m_old - m_new)`, which is forced to 0
    while `m_old` is -inf. Under `causal` the key loop stops at the last key
    visible to the block's last row, and only blocks that straddle the
    diagonal are masked element-wise. Ragged last blocks on both axes are
    handled; threads past the last query row take part in the copies and
    barriers only. Rows with no visible key give `o = 0` and `lse = -inf`.
    Nothing of size Tq x Tk is allocated: per block, shared memory holds
    `block-n x (D + Dv)` elements of q's type, per thread, private memory
    holds `D + Dv + block-n` f32.

    `block-n` is lowered, when needed, so that the key/value tiles fit in
    48 KiB of static shared memory; the value used is the one recorded.

    The launch facts of each kernel (docs/ARTIFACTS.md's manifest, less
    `version`, `ptx` and `chip`, which `fa-export-kernels` adds) are
    recorded in the top-level module's `fa.manifests` dictionary, keyed by
    kernel name, so that they survive the lowering of the gpu.module to a
    gpu.binary. The module gets the `gpu.container_module` attribute.

    The `func.func` that held the ops is erased; it may only contain
    `fa.attention`, constants and its return (the host side of the launch
    is the runtime's job), otherwise the pass fails naming it.

    Preconditions and limits (each reported as an error on the op): no
    `mask` operand; static head dims D and Dv; `block-m` in [1, 1024].

    Every `fa.attention_backward` becomes one `gpu.module
    @<func>_attention_backward_<n>` holding three kernels, launched in this
    order (FlashAttention-2's backward, Dao 2023, Algorithm 2; see
    lib/Conversion/FAToGPU/BackwardKernels.cpp and docs/ARTIFACTS.md,
    "Backward"):
    - `_delta`: delta = rowsum(do * o) into an f32 [batch, Tq] scratch
      buffer (and, unless `deterministic`, zeroes the f32 dq accumulator);
    - `_dkdv`: one GPU block per key block of `block-n` rows and batch index,
      one thread per key row. For each query block (`block-m` rows; under
      causal, blocks before the first row that sees the key block are
      skipped by the loop bound), the Q and dO tiles, lse and delta go to
      workgroup memory between barriers; each thread recomputes
      s = scale q k^T and p = exp(s - lse) for its key (0 where lse = -inf,
      and, on blocks straddling the diagonal only, past it) and accumulates
      dv += p^T dO and dk += scale dS^T Q with dS = p (dO v^T - delta) in
      private f32. By default the block then adds scale dS K for its key
      block into the f32 dq accumulator with one `memref.atomic_rmw addf`
      per element;
    - by default `_dq_convert` converts the accumulator to dq's type; with
      `deterministic`, `_dq` instead computes dq over query blocks (one
      thread per query row, K/V tiles in workgroup memory, no atomics), so
      dq is bitwise reproducible.
    For the backward, `block-n` (the dk/dv kernel's threads) must be in
    [1, 1024] as well; the dk/dv tiles are halved, the larger first, until
    they fit in 48 KiB of static shared memory. Nothing of size Tq x Tk is
    allocated.
  }];
  let options = [
    Option<"blockM", "block-m", "int64_t", /*default=*/"64",
           "Query rows per GPU block (block_m), also the threads per block; "
           "in [1, 1024]">,
    Option<"blockN", "block-n", "int64_t", /*default=*/"64",
           "Key/value rows per shared-memory tile (block_n), > 0">,
    Option<"deterministic", "deterministic", "bool", /*default=*/"false",
           "fa.attention_backward: compute dq in a separate kernel over "
           "query blocks instead of with f32 atomics, so that dq is bitwise "
           "identical across runs">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
  ];
}

//===----------------------------------------------------------------------===//
// Kernel export
//===----------------------------------------------------------------------===//

def FAExportKernels : Pass<"fa-export-kernels", "::mlir::ModuleOp"> {
  let summary = "Write the PTX and the manifest of each fa kernel to a directory";
  let description = [{
    For every `gpu.binary` named after a kernel recorded in the module's
    `fa.manifests` (see `convert-fa-to-gpu`), writes `<output-dir>/<kernel>.ptx`
    (the PTX assembly of its NVVM object) and `<output-dir>/<kernel>.manifest`
    in the format of docs/ARTIFACTS.md, adding `version`, `ptx` and `chip`
    (the chip of the object's `#nvvm.target`). The directory is created when
    missing. The IR is not changed.

    Preconditions: the binaries hold PTX assembly (`gpu-module-to-binary
    format=isa`). An empty `output-dir` makes the pass a no-op. A binary
    without PTX, a missing manifest or a file that cannot be written is an
    error.
  }];
  let options = [
    Option<"outputDir", "output-dir", "std::string", /*default=*/"\"\"",
           "Directory to write <kernel>.ptx and <kernel>.manifest into; "
           "empty: do nothing">,
  ];
}

#endif // FA_CONVERSION_PASSES_TD
