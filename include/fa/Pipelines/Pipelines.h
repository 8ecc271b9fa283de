//===- Pipelines.h - fa end-to-end pass pipelines ---------------*- C++ -*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#ifndef FA_PIPELINES_PIPELINES_H
#define FA_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

#include <cstdint>
#include <string>

namespace mlir {
class OpPassManager;
namespace fa {

/// Options of `fa-to-cpu`.
struct FAToCPUPipelineOptions
    : public PassPipelineOptions<FAToCPUPipelineOptions> {
  PassOptions::Option<int64_t> blockM{
      *this, "block-m",
      llvm::cl::desc("Query rows per block (block_m) of fa-tile-attention"),
      llvm::cl::init(64)};
  PassOptions::Option<int64_t> blockN{
      *this, "block-n",
      llvm::cl::desc("Key/value rows per block (block_n) of "
                     "fa-tile-attention"),
      llvm::cl::init(64)};
};

/// Builds `fa-to-cpu`: fa-tile-attention (a no-op on IR already tiled),
/// the decomposition of aggregate linalg ops (linalg.softmax), one-shot
/// bufferization with function boundaries (identity layouts),
/// ownership-based deallocation (clones lowered to alloc + copy), linalg to
/// loops, and the upstream conversions to the LLVM dialect. The result runs
/// under mlir-runner or the ExecutionEngine; an op left outside the LLVM
/// dialect is an error naming it. Lowers the functions of the module it
/// runs on; functions in a nested `builtin.module` are an error at that
/// module (nest the pipeline to lower them).
void buildFAToCPUPipeline(OpPassManager &pm,
                          const FAToCPUPipelineOptions &options);

/// Options of `fa-to-ptx`.
struct FAToPTXPipelineOptions
    : public PassPipelineOptions<FAToPTXPipelineOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip",
      llvm::cl::desc("Target GPU architecture (sm_80, sm_90a, ...)"),
      llvm::cl::init("sm_90a")};
  PassOptions::Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX features of the NVVM target (the PTX ISA version; "
                     "8.1 by default, which CUDA 12.1 drivers and later "
                     "take; +ptx80 turns dq-atomics off)"),
      llvm::cl::init("+ptx81")};
  PassOptions::Option<int64_t> blockM{
      *this, "block-m",
      llvm::cl::desc("Query rows per GPU block (convert-fa-to-gpu); 0: the "
                     "default of the kernel and head dim"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> blockN{
      *this, "block-n",
      llvm::cl::desc("Key/value rows per shared-memory tile "
                     "(convert-fa-to-gpu); 1 to 1024, or 0: the default of "
                     "the kernel and head dim"),
      llvm::cl::init(0)};
  PassOptions::Option<bool> tensorCores{
      *this, "tensor-cores",
      llvm::cl::desc("On sm_80 and later, the mma.sync tensor-core kernels "
                     "for f16/bf16 attention (convert-fa-to-gpu); false: the "
                     "scalar kernels everywhere; given as true with a chip "
                     "before sm_80: an error"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> wgmma{
      *this, "wgmma",
      llvm::cl::desc("On sm_90a, the warpgroup-MMA (wgmma) forward and "
                     "backward kernels for f16/bf16 attention with head "
                     "dims (D and Dv) 32, 64 or 128 (convert-fa-to-gpu); "
                     "false: the mma.sync kernels; given as true with "
                     "another chip or with tensor-cores=false: an error"),
      llvm::cl::init(true)};
  PassOptions::Option<int64_t> numWarps{
      *this, "num-warps",
      llvm::cl::desc("Tensor-core kernels (sm_80 and later, f16/bf16): "
                     "warps per block, in [1, 16]; 0: the kernel's default "
                     "(mma.sync: 4; wgmma: 8, i.e. two warpgroups; the "
                     "wgmma forward takes 4, 8, 12 or 16, its backward 4 "
                     "or 8)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> stages{
      *this, "stages",
      llvm::cl::desc("wgmma kernels (sm_90a): stages of loop tiles in "
                     "workgroup memory, 2 or 3; 0: the default (3 when they "
                     "fit, else 2; the TMA forward at block-n 128: 2); "
                     "given non-zero without the wgmma kernels: an error"),
      llvm::cl::init(0)};
  PassOptions::Option<bool> tma{
      *this, "tma",
      llvm::cl::desc("wgmma kernels (sm_90a): Q/K/V (backward: and dO) "
                     "tiles by TMA (cp.async.bulk.tensor on mbarriers, "
                     "128-byte swizzle, tensor maps encoded by the "
                     "runtime); false: cp.async into padded no-swizzle "
                     "tiles; given as true with another chip, wgmma=false "
                     "or tensor-cores=false: an error; ops that take "
                     "another kernel (f32, head dims other than 32, 64, "
                     "128) are unaffected"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> producerWarp{
      *this, "producer-warp",
      llvm::cl::desc("TMA wgmma forward (sm_90a): a producer warpgroup "
                     "issues the TMA loads and gives its registers to the "
                     "consumer warpgroups (setmaxnreg), which release K/V "
                     "stages on mbarriers, no block barrier in the key loop "
                     "(convert-fa-to-gpu; default shapes: 8 consumer "
                     "warps and block-n 128, 160 at D = Dv = 128 "
                     "without a mask and with Tk dynamic or over 800; "
                     "head dims up to 64: 12 warps); given "
                     "as true without the TMA wgmma kernels: an error"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> pingpong{
      *this, "pingpong",
      llvm::cl::desc("With producer-warp: the consumer warpgroups take turns "
                     "issuing their products (convert-fa-to-gpu); given as "
                     "true without producer-warp: an error"),
      llvm::cl::init(false)};
  PassOptions::Option<int64_t> tilesPerBlock{
      *this, "tiles-per-block",
      llvm::cl::desc(
          "With producer-warp, without pingpong: query tiles per "
          "GPU block of the TMA wgmma forward, 1 or 2 (2: Q "
          "double-buffered, the second tile's loads and first "
          "S product overlap the first tile's end), or 0: 2 for two consumer "
          "warpgroups at head dims above 64 (the D 128 kernels, "
          "which persistent=auto makes persistent instead) unless Tk "
          "is static with at most five key "
          "blocks, else 1 (convert-fa-to-gpu); other values, "
          "or 2 without producer-warp or with pingpong: an "
          "error"),
      llvm::cl::init(0)};
  PassOptions::Option<std::string> persistent{
      *this, "persistent",
      llvm::cl::desc(
          "With producer-warp, without pingpong: a persistent TMA wgmma "
          "forward (grid min(query tiles x batch, resident blocks), 128-key "
          "tiles, the tile boundaries peeled with one or two consumer "
          "warpgroups) for ops whose o leaves by TMA (o in q's type, "
          "head_dim_v == head_dim, a multiple of 64); others ignore it "
          "(convert-fa-to-gpu). auto: where measured faster, the kernels "
          "with two consumer warpgroups (head dim 128) with the automatic "
          "tiles-per-block, unless Tk is static with at most five key "
          "blocks; true: wherever it applies; false: never. "
          "Another value, or true with tiles-per-block=2, pingpong or "
          "without producer-warp: an error"),
      llvm::cl::init("auto")};
  PassOptions::Option<bool> deterministic{
      *this, "deterministic",
      llvm::cl::desc("fa.attention_backward: dq from its own kernel over "
                     "query blocks (no atomics, bitwise reproducible) "
                     "(convert-fa-to-gpu)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> dqAtomics{
      *this, "dq-atomics",
      llvm::cl::desc("fa.attention_backward on sm_90a: dq accumulated in "
                     "_dkdv with f32 atomics (5 tile products, no _dq "
                     "kernel, block-n unused) where it applies: wgmma "
                     "kernels, head dim 64 or 128 (= Dv), deterministic "
                     "off, PTX ISA 8.1 or later; elsewhere, and with false, "
                     "the wgmma backward's split _dkdv + _dq kernels (the "
                     "other backward kernels add dq with atomics unless "
                     "deterministic) (convert-fa-to-gpu)"),
      llvm::cl::init(true)};
  PassOptions::Option<std::string> backwardProducerWarp{
      *this, "backward-producer-warp",
      llvm::cl::desc("TMA wgmma backward with dq atomics (sm_90a): a "
                     "producer warpgroup in _dkdv issues the Q/dO loads and "
                     "copies the lse/delta columns (convert-fa-to-gpu); "
                     "auto: where measured faster (top-left causal, head dim "
                     "128); "
                     "true: wherever it applies; false: never; true "
                     "without the TMA wgmma kernels or with "
                     "deterministic=true, dq-atomics=false or "
                     "features=+ptx80: an error"),
      llvm::cl::init("auto")};
  PassOptions::Option<bool> pairKeyBlocks{
      *this, "pair-key-blocks",
      llvm::cl::desc("Causal TMA wgmma backward with the producer "
                     "warpgroup: each _dkdv block computes key blocks x and "
                     "n - 1 - x (convert-fa-to-gpu; measured +1.5% at T "
                     "2k-4k, 4.5% slower at T 16k on the H200)"),
      llvm::cl::init(false)};
  PassOptions::Option<int64_t> indexBitwidth{
      *this, "index-bitwidth",
      llvm::cl::desc(
          "Bits of the TMA wgmma kernels' index type (forward and "
          "backward), 32 or 64, or 0: 32 for the producer "
          "warpgroup forward at D = Dv = 128 and at D = Dv = 64 with a "
          "causal mask, and for the TMA backward, unless a static shape "
          "holds 2^31 elements or more, else 64 (convert-fa-to-gpu). 32 "
          "makes the memref sizes, strides and offsets 32-bit kernel "
          "parameters and needs every tensor to hold fewer than "
          "2^31 elements (static shapes: an error here; dynamic: "
          "the runtimes launch the batch in chunks that fit, manifest "
          "`index_bits 32`). The other kernels keep 64; other "
          "values: an error"),
      llvm::cl::init(0)};
  PassOptions::Option<std::string> cudaPath{
      *this, "cuda-path",
      llvm::cl::desc("CUDA toolkit holding nvvm/libdevice/libdevice.10.bc; "
                     "empty: $CUDA_ROOT, $CUDA_HOME, $CUDA_PATH, else the "
                     "toolkit found at configure time"),
      llvm::cl::init("")};
  PassOptions::Option<std::string> outputDir{
      *this, "output-dir",
      llvm::cl::desc("Directory receiving <kernel>.ptx and <kernel>.manifest "
                     "(docs/ARTIFACTS.md); empty: write nothing"),
      llvm::cl::init("")};
};

/// Builds `fa-to-ptx`: convert-fa-to-gpu (one kernel per fa.attention), the
/// device half of upstream's `gpu-lower-to-nvvm-pipeline` (nvvm-attach-target,
/// convert-gpu-to-nvvm, ...), gpu-module-to-binary with `format=isa` linking
/// libdevice from the CUDA toolkit, then fa-export-kernels, which writes the
/// PTX and manifest of each kernel to `output-dir`. The resulting module holds
/// one gpu.binary per kernel. Options are checked as `--fa-to-ptx` checks
/// them, a value assigned in C++ counting as given: one that cannot apply
/// (e.g. `wgmma = true` with chip sm_80) makes the pipeline a single pass
/// that fails with the error when it runs.
void buildFAToPTXPipeline(OpPassManager &pm,
                          const FAToPTXPipelineOptions &options);

/// Registers `fa-to-cpu` and `fa-to-ptx` with the global pipeline registry.
void registerFAPipelines();

} // namespace fa
} // namespace mlir

#endif // FA_PIPELINES_PIPELINES_H
