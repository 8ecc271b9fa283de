//===- Manifest.h - kernel manifests and launch parameters -------*- C++
//-*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// The host side of docs/ARTIFACTS.md: reading a kernel manifest, checking
// launch shapes against its static dims, and building the grid and the
// memref-descriptor parameter list. Pure host code, testable without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_MANIFEST_H
#define FA_RUNTIME_MANIFEST_H

#include "fa/Runtime/FaRuntime.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fa::rt {

/// A dim the manifest marks `?`: any value >= 0 works at launch.
constexpr int64_t kDynamic = -1;

/// One `tensor_map OPERAND BOX_COLS BOX_ROWS SWIZZLE` line: the kernel takes
/// a 128-byte CUtensorMap of that operand by value, after its memref params
/// (docs/ARTIFACTS.md, "Tensor maps"; in a backward manifest, one kernel
/// section's line).
struct TensorMapSpec {
  std::string operand; ///< q, k, v or o (backward: q, k, v, do or dq_accum)
  int64_t boxCols = 0;      ///< box extent along D (innermost), elements
  int64_t boxRows = 0;      ///< box extent along T, rows
  int64_t swizzleBytes = 0; ///< 0 (none), 32, 64 or 128
  int line = 0;             ///< manifest line, for messages
};

/// One forward kernel manifest (docs/ARTIFACTS.md): version 1, or version 3
/// when it has tensor_map lines.
struct Manifest {
  std::string path; ///< The file it was read from (for messages).
  std::string dir;  ///< Its folder: the base of a relative `ptx` path.
  int64_t version = 0;
  std::string kernel;
  std::string ptx;
  std::string chip; ///< e.g. sm_90a; empty when the manifest has none.
  faRtDtype dtype = FA_RT_DTYPE_F32;
  faRtDtype oDtype = FA_RT_DTYPE_F32;
  faRtCausal causal = FA_RT_CAUSAL_NONE;
  double scale = 0.0;
  int64_t batch = kDynamic;
  std::vector<int64_t> batchShape; ///< kDynamic entries for `?`.
  int64_t seqlenQ = kDynamic;
  int64_t seqlenK = kDynamic;
  int64_t headDim = 0;
  int64_t headDimV = 0;
  bool hasLse = false;
  int64_t blockM = 0;
  int64_t blockN = 0; ///< 0 when the manifest has none.
  int64_t threads = 0;
  int64_t sharedBytes = 0;
  /// Bytes each q/k/v/o row start must be a multiple of (`row_align`, 0 or
  /// absent: element alignment only). The tensor-core kernels copy rows
  /// with 16-byte cp.async.
  int64_t rowAlign = 0;
  /// Bits of the kernel's index type (`index_bits`, 32 or 64; absent: 64).
  /// With 32 the memref sizes, strides and offsets are 32-bit parameters
  /// (cuLaunchKernel copies the low four bytes of each 64-bit value: the
  /// hosts are little-endian) and every tensor of one launch must hold
  /// fewer than 2^31 elements (checkLaunchShape; faRtKernelLaunch and
  /// faRtBackwardLaunch split a dynamic batch into such launches,
  /// batchChunk).
  int64_t indexBits = 64;
  std::vector<std::string> params; ///< q k v o [lse]
  std::array<std::string, 3> grid; ///< x, y, z expressions
  /// Extra by-value kernel parameters after params, in manifest order
  /// (which is params order: q, k, v, o); non-empty exactly in version 3.
  std::vector<TensorMapSpec> tensorMaps;
  std::string ptxPath() const; ///< ptx resolved against dir
};

/// The sizes a launch gives; head dims come from the manifest.
struct LaunchShape {
  int64_t batch = 0;
  int64_t seqlenQ = 0;
  int64_t seqlenK = 0;
};

/// Device pointers of the kernel's tensors (lse ignored without lse).
struct TensorPointers {
  uint64_t q = 0, k = 0, v = 0, o = 0, lse = 0;
};

/// Parses manifest text. `fileName` prefixes messages ("x.manifest:7: ...").
/// Unknown keys are ignored; a missing required key, a duplicate key or a
/// malformed value is an error (FA_RT_ERROR_MANIFEST, see faRtGetLastError).
faRtStatus parseManifest(std::string_view text, const std::string &fileName,
                         Manifest &manifest);

/// Reads and parses the manifest file at `path` (FA_RT_ERROR_IO when it
/// cannot be read).
faRtStatus readManifestFile(const std::string &path, Manifest &manifest);

/// Checks that the sizes are >= 0 and match the manifest's static dims, and
/// for a kernel with 32-bit indices that q, k, v and o of `shape` (one
/// launch) hold fewer than 2^31 elements each.
faRtStatus checkLaunchShape(const Manifest &manifest, const LaunchShape &shape);

/// The most batches one launch of `manifest` (a forward manifest or a
/// backward kernel's view) takes: the whole batch when it is static, else
/// 65535 (CUDA's grid y limit) and, for a kernel with 32-bit indices, few
/// enough that q, k, v and o (and the backward's do, dq, dk, dv and f32
/// scratch, none larger) each stay below 2^31 elements; at least 1.
/// faRtKernelLaunch and faRtBackwardLaunch launch larger batches in chunks
/// of it, each with its tensors' pointers advanced to its first batch.
int64_t batchChunk(const Manifest &manifest, const LaunchShape &shape);

/// checkLaunchShape for the launches that faRtKernelLaunch and
/// faRtBackwardLaunch make of `shape`: the batch's first chunk (of
/// batchChunk batches), the largest one, stands for them all.
faRtStatus checkChunkedLaunchShape(const Manifest &manifest,
                                   const LaunchShape &shape);

/// Evaluates the manifest's grid expressions for `shape`. `residentBlocks`
/// is the value of `resident_blocks`: the blocks of the kernel that the
/// device holds at once (multiprocessors x blocks per multiprocessor, from
/// the occupancy API); 0 when unknown, and then an expression naming it is
/// an error (FA_RT_ERROR_MANIFEST).
faRtStatus computeGrid(const Manifest &manifest, const LaunchShape &shape,
                       std::array<uint32_t, 3> &grid,
                       int64_t residentBlocks = 0);

/// Whether a grid expression of `manifest` names `resident_blocks` (a
/// persistent kernel), so that its launcher must query the occupancy.
bool gridUsesResidentBlocks(const Manifest &manifest);

/// Appends one rank-R memref descriptor as 2 + 1 + 2R 64-bit kernel
/// arguments: allocated ptr, aligned ptr, offset, sizes, strides.
void appendMemRefParams(std::vector<uint64_t> &params, uint64_t ptr,
                        int64_t offset, const std::vector<int64_t> &sizes,
                        const std::vector<int64_t> &strides);

/// Row-major strides of `sizes`, in elements.
std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &sizes);

/// The kernel's argument values, in order, for contiguous tensors: q, k, v, o
/// and (if the kernel has one) lse, each as a memref descriptor.
std::vector<uint64_t> buildKernelParams(const Manifest &manifest,
                                        const LaunchShape &shape,
                                        const TensorPointers &tensors);

/// The arguments of one cuTensorMapEncodeTiled call (rank 3, innermost dim
/// first), before they are turned into CUDA enums. Interleave none, element
/// strides 1, L2 promotion 128B and OOB fill none (zeros) are fixed.
struct TensorMapEncodeArgs {
  std::string operand;
  faRtDtype dtype = FA_RT_DTYPE_F32;
  uint64_t address = 0;
  std::array<uint64_t, 3> globalDim{};     ///< {D, T, batch}
  std::array<uint64_t, 2> globalStrides{}; ///< bytes: {row, batch}
  std::array<uint32_t, 3> boxDim{};        ///< {BOX_COLS, BOX_ROWS, 1}
  std::array<uint32_t, 3> elementStrides{};
  int64_t swizzleBytes = 0;
};

/// The TMA limits cuTensorMapEncodeTiled enforces.
constexpr uint64_t kTensorMapMaxDim = 0xffffffffull;  ///< 2^32 - 1
constexpr uint64_t kTensorMapStrideLimit = 1ull << 40; ///< strides below it

/// The encode arguments of the manifest's tensor maps for a launch over
/// contiguous row-major tensors (buildKernelParams' shapes), in manifest
/// order. An operand with no element (seqlen_k = 0, say) is never read:
/// its dims are clamped to >= 1 and its address is q's, so the encode does
/// not fail. A dim over 2^32 - 1, a stride of 2^40 bytes or more or a row
/// stride that is not a multiple of 16 bytes is FA_RT_ERROR_SHAPE, an
/// address that is not 16-byte aligned FA_RT_ERROR_INVALID_ARGUMENT, each
/// naming the operand.
faRtStatus buildTensorMapArgs(const Manifest &manifest,
                              const LaunchShape &shape,
                              const TensorPointers &tensors,
                              std::vector<TensorMapEncodeArgs> &args);

//===----------------------------------------------------------------------===//
// Backward manifests (version 2, or 4 with tensor maps; `op
// attention_backward`)
//===----------------------------------------------------------------------===//

/// What a manifest file describes.
enum class ManifestKind { Forward, Backward };

/// One kernel of a multi-kernel manifest, in launch order.
struct KernelLaunch {
  std::string kernel;
  int64_t threads = 0;
  int64_t blockM = 0; ///< 0 when the section has none.
  int64_t blockN = 0; ///< 0 when the section has none.
  int64_t sharedBytes = 0;
  std::vector<std::string> params; ///< tensor names, see tensorSizes
  std::array<std::string, 3> grid; ///< x, y, z expressions
  /// The section's `tensor_map` lines (version 4): by-value kernel
  /// parameters after its memref params, in params order.
  std::vector<TensorMapSpec> tensorMaps;
};

/// A buffer the host allocates for the kernels (inside one workspace, see
/// backwardWorkspaceLayout); its contents are produced and consumed by the
/// kernels, it needs no initialization.
struct ScratchBuffer {
  std::string name;
  faRtDtype dtype = FA_RT_DTYPE_F32;
  std::vector<std::string> dims; ///< size names (batch, seqlen_q, ...) or
                                 ///< integers
};

/// The manifest of one fa.attention_backward: dq, dk, dv from q, k, v, o,
/// do and lse through several kernels. Version 2, or version 4 when some
/// kernel section has tensor_map lines.
struct BackwardManifest {
  std::string path, dir;
  int64_t version = 0;
  std::string name; ///< the op's artifact name
  std::string ptx;
  std::string chip;
  faRtDtype dtype = FA_RT_DTYPE_F32; ///< q, k, v
  faRtDtype oDtype = FA_RT_DTYPE_F32, doDtype = FA_RT_DTYPE_F32;
  faRtDtype dqDtype = FA_RT_DTYPE_F32, dkDtype = FA_RT_DTYPE_F32,
            dvDtype = FA_RT_DTYPE_F32;
  faRtCausal causal = FA_RT_CAUSAL_NONE;
  double scale = 0.0;
  int64_t batch = kDynamic;
  std::vector<int64_t> batchShape;
  int64_t seqlenQ = kDynamic, seqlenK = kDynamic;
  int64_t headDim = 0, headDimV = 0;
  bool deterministic = false;
  /// Bytes each q/k/v/o/do/dq/dk/dv row start must be a multiple of
  /// (`row_align`; 0 or absent: element alignment only).
  int64_t rowAlign = 0;
  /// Bits of the kernels' index type (`index_bits`; see Manifest).
  int64_t indexBits = 64;
  std::vector<ScratchBuffer> scratch;
  std::vector<KernelLaunch> kernels;
  std::string ptxPath() const; ///< ptx resolved against dir
  /// The forward-style view of kernel `i` (dims, block sizes, grid), for
  /// checkLaunchShape and computeGrid.
  Manifest kernelView(size_t i) const;
};

/// Forward for `version 1` and `version 3`, Backward for `version 2` or
/// `version 4` with `op attention_backward`; an error for anything else.
faRtStatus manifestKind(std::string_view text, const std::string &fileName,
                        ManifestKind &kind);

/// Reads `path` and tells its kind (see manifestKind).
faRtStatus readManifestKind(const std::string &path, ManifestKind &kind);

/// Parses a backward manifest (docs/ARTIFACTS.md, "Backward").
faRtStatus parseBackwardManifest(std::string_view text,
                                 const std::string &fileName,
                                 BackwardManifest &manifest);

faRtStatus readBackwardManifestFile(const std::string &path,
                                    BackwardManifest &manifest);

/// The sizes of a named kernel tensor (q, k, v, o, do, lse, delta, dq, dk,
/// dv, dq_accum) for `shape`; empty for an unknown name.
std::vector<int64_t> tensorSizes(const std::string &name,
                                 const LaunchShape &shape, int64_t headDim,
                                 int64_t headDimV);

/// The sizes of the backward's tensor `name` for `shape`: tensorSizes for
/// the op's tensors and delta/dq_accum, else the declared dims of the
/// manifest's scratch buffer of that name; empty for an unknown name.
std::vector<int64_t> backwardTensorSizes(const BackwardManifest &manifest,
                                         const std::string &name,
                                         const LaunchShape &shape);

/// batchChunk for a backward launch (its kernels' tensors), also keeping
/// each scratch buffer's chunk below 2^31 elements with 32-bit indices.
int64_t backwardBatchChunk(const BackwardManifest &manifest,
                           const LaunchShape &shape);

/// checkChunkedLaunchShape for a backward launch: also an error when one
/// batch entry of a scratch buffer spans 2^31 elements or more with
/// 32-bit indices.
faRtStatus checkBackwardChunkedLaunchShape(const BackwardManifest &manifest,
                                           const LaunchShape &shape);

/// Byte offsets of the scratch buffers inside one workspace (each aligned to
/// 256 bytes) and the workspace's total size.
struct WorkspaceLayout {
  std::vector<uint64_t> offsets;
  uint64_t bytes = 0;
};
faRtStatus backwardWorkspaceLayout(const BackwardManifest &manifest,
                                   const LaunchShape &shape,
                                   WorkspaceLayout &layout);

/// Kernel `i`'s argument values: one memref descriptor per param, for
/// contiguous row-major tensors; `pointers` maps each param name to its
/// device pointer.
std::vector<uint64_t>
buildBackwardKernelParams(const BackwardManifest &manifest, size_t i,
                          const LaunchShape &shape,
                          const std::vector<std::pair<std::string, uint64_t>>
                              &pointers);

/// The element type of the backward's tensor `name` (q, k, v, o, do, lse,
/// dq, dk, dv or a scratch buffer); f32 for an unknown name.
faRtDtype backwardTensorDtype(const BackwardManifest &manifest,
                              const std::string &name);

/// `pointers` (name -> device pointer of a contiguous tensor of `shape`,
/// batch first) advanced to batch `start`: each by `start` times the bytes
/// of one batch entry of its tensor. The pointers of a launch of batches
/// [start, start + n) (faRtBackwardLaunch's chunks).
std::vector<std::pair<std::string, uint64_t>> backwardChunkPointers(
    const BackwardManifest &manifest,
    const std::vector<std::pair<std::string, uint64_t>> &pointers,
    const LaunchShape &shape, int64_t start);

/// The encode arguments of kernel `i`'s tensor maps (its section's
/// tensor_map lines, in order), as buildTensorMapArgs computes them for
/// the forward: q, k, v in `dtype`, do in `do_dtype`, over contiguous
/// [batch, T, D] tensors. An operand with no element takes the address of
/// the first of the section's map operands that has elements (q's when
/// none has). Empty for a section without tensor_map lines.
faRtStatus buildBackwardTensorMapArgs(
    const BackwardManifest &manifest, size_t i, const LaunchShape &shape,
    const std::vector<std::pair<std::string, uint64_t>> &pointers,
    std::vector<TensorMapEncodeArgs> &args);

/// Manifest spellings: "f16", "bf16", "f32"; "none", "top_left", ...
const char *dtypeName(faRtDtype dtype);
const char *causalName(faRtCausal causal);
/// Bytes per element.
size_t dtypeSize(faRtDtype dtype);

/// The manifest of a loaded kernel.
const Manifest &getManifest(faRtKernel kernel);

/// Loads an already parsed manifest's kernel (see faRtKernelLoad).
faRtStatus loadKernel(const Manifest &manifest, int device, faRtKernel *kernel);

/// The manifest of a loaded backward.
const BackwardManifest &getManifest(faRtBackward backward);

/// Loads an already parsed backward manifest's kernels (see
/// faRtBackwardLoad).
faRtStatus loadBackward(const BackwardManifest &manifest, int device,
                        faRtBackward *backward);

} // namespace fa::rt

#endif // FA_RUNTIME_MANIFEST_H
