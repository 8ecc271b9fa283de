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

/// One kernel manifest (docs/ARTIFACTS.md, version 1).
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
  std::vector<std::string> params; ///< q k v o [lse]
  std::array<std::string, 3> grid; ///< x, y, z expressions
  std::string ptxPath() const;     ///< ptx resolved against dir
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

/// Checks that the sizes are >= 0 and match the manifest's static dims.
faRtStatus checkLaunchShape(const Manifest &manifest, const LaunchShape &shape);

/// Evaluates the manifest's grid expressions for `shape`.
faRtStatus computeGrid(const Manifest &manifest, const LaunchShape &shape,
                       std::array<uint32_t, 3> &grid);

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

/// Manifest spellings: "f16", "bf16", "f32"; "none", "top_left", ...
const char *dtypeName(faRtDtype dtype);
const char *causalName(faRtCausal causal);
/// Bytes per element.
size_t dtypeSize(faRtDtype dtype);

/// The manifest of a loaded kernel.
const Manifest &getManifest(faRtKernel kernel);

/// Loads an already parsed manifest's kernel (see faRtKernelLoad).
faRtStatus loadKernel(const Manifest &manifest, int device, faRtKernel *kernel);

} // namespace fa::rt

#endif // FA_RUNTIME_MANIFEST_H
