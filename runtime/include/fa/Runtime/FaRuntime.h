/*===- FaRuntime.h - C API of the fa kernel runtime -------------*- C -*-===*\
|*                                                                          *|
|* Part of the fa-opt project.                                              *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/
/*
 * Loads a kernel that fa-opt --fa-to-ptx wrote (DIR/<kernel>.manifest and
 * DIR/<kernel>.ptx, see docs/ARTIFACTS.md) and launches it with the CUDA
 * driver API. Needs no LLVM/MLIR, and no libcuda at link time: the driver is
 * opened on first use, so errors on a machine without one are reported, not
 * fatal.
 *
 * Every function returns a faRtStatus; on failure faRtGetLastError() returns
 * a message (per thread) that names the file and line, or the failed CUDA
 * call and the CUDA error.
 */

#ifndef FA_RUNTIME_FARUNTIME_H
#define FA_RUNTIME_FARUNTIME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum faRtStatus {
  FA_RT_SUCCESS = 0,
  FA_RT_ERROR_INVALID_ARGUMENT = 1, /* null pointer, negative size, ...   */
  FA_RT_ERROR_IO = 2,               /* a file could not be read          */
  FA_RT_ERROR_MANIFEST = 3,         /* malformed manifest                */
  FA_RT_ERROR_SHAPE = 4,            /* shape does not match the manifest */
  FA_RT_ERROR_NO_DRIVER = 5,        /* libcuda could not be loaded       */
  FA_RT_ERROR_NO_DEVICE = 6,        /* no (such) CUDA device             */
  FA_RT_ERROR_PTX_LOAD = 7,         /* the PTX did not JIT / link        */
  FA_RT_ERROR_CUDA = 8              /* any other failed CUDA call        */
} faRtStatus;

/* A loaded kernel: its manifest, its CUmodule/CUfunction and the device's
 * primary context, retained until faRtKernelUnload. */
typedef struct faRtKernel_st *faRtKernel;

typedef enum faRtDtype {
  FA_RT_DTYPE_F16 = 0,
  FA_RT_DTYPE_BF16 = 1,
  FA_RT_DTYPE_F32 = 2
} faRtDtype;

typedef enum faRtCausal {
  FA_RT_CAUSAL_NONE = 0,
  FA_RT_CAUSAL_TOP_LEFT = 1,    /* query i sees keys j <= i            */
  FA_RT_CAUSAL_BOTTOM_RIGHT = 2 /* query i sees keys j <= i + Tk - Tq  */
} faRtCausal;

/* What a launcher needs to know about a kernel. Dims that the manifest marks
 * dynamic (`?`) are -1. */
typedef struct faRtKernelInfo {
  const char *name;
  faRtDtype dtype;  /* q, k, v */
  faRtDtype oDtype; /* o */
  faRtCausal causal;
  double scale;
  int64_t batch, seqlenQ, seqlenK, headDim, headDimV;
  int hasLse;
} faRtKernelInfo;

/* The message of the last failure on the calling thread ("" if none). */
const char *faRtGetLastError(void);

/* A short name for a status, e.g. "FA_RT_ERROR_MANIFEST". */
const char *faRtStatusName(faRtStatus status);

/* Loads the CUDA driver, calls cuInit, retains device `device`'s primary
 * context and makes it current on the calling thread. Idempotent. */
faRtStatus faRtInit(int device);

/* Parses `manifestPath`, loads the PTX it names (relative paths are relative
 * to the manifest's folder) on device `device` (faRtInit is implied) and
 * looks the kernel up. On failure *kernel is NULL. */
faRtStatus faRtKernelLoad(const char *manifestPath, int device,
                          faRtKernel *kernel);

/* Unloads the module and releases the context. NULL is ignored. */
void faRtKernelUnload(faRtKernel kernel);

faRtStatus faRtKernelGetInfo(faRtKernel kernel, faRtKernelInfo *info);

/* Launches the kernel on `stream` (a CUstream; NULL is the legacy default
 * stream) over contiguous row-major tensors, see docs/ARTIFACTS.md:
 * q [batch, seqlenQ, D], k [batch, seqlenK, D], v [batch, seqlenK, Dv],
 * o [batch, seqlenQ, Dv], lse [batch, seqlenQ] (f32; ignored, may be 0, when
 * the kernel has no lse). Checks the shapes against the manifest's static
 * dims. Asynchronous: it does not synchronize the stream. An empty grid
 * (batch == 0 or seqlenQ == 0) launches nothing and succeeds. A dynamic
 * batch over 65535 (CUDA's grid y limit), or one whose tensors reach 2^31
 * elements with a kernel of 32-bit indices (`index_bits 32`), goes in
 * several launches of fewer batches each; a static one must fit one launch,
 * and so must one batch entry (FA_RT_ERROR_SHAPE otherwise). */
faRtStatus faRtKernelLaunch(faRtKernel kernel, uint64_t q, uint64_t k,
                            uint64_t v, uint64_t o, uint64_t lse, int64_t batch,
                            int64_t seqlenQ, int64_t seqlenK, void *stream);

/* ---- Backward (fa.attention_backward): several kernels, one manifest ---- */

/* A loaded backward: its manifest (version 2 or 4, docs/ARTIFACTS.md
 * "Backward"), the CUmodule with all its kernels, the primary context. */
typedef struct faRtBackward_st *faRtBackward;

/* Device pointers of one backward launch, contiguous row-major:
 * q [B, Tq, D], k [B, Tk, D], v [B, Tk, Dv], o and dout [B, Tq, Dv],
 * lse [B, Tq] (f32), results dq, dk, dv with the shapes of q, k, v, in the
 * manifest's dtypes; workspace: faRtBackwardWorkspaceSize bytes of device
 * memory holding the scratch buffers (delta, dq accumulator), needing no
 * initialization. */
typedef struct faRtBackwardTensors {
  uint64_t q, k, v, o, dout, lse;
  uint64_t dq, dk, dv;
  uint64_t workspace;
} faRtBackwardTensors;

/* Parses a backward manifest, loads its PTX on `device` and looks up every
 * kernel it names. On failure *backward is NULL. */
faRtStatus faRtBackwardLoad(const char *manifestPath, int device,
                            faRtBackward *backward);

/* Unloads the module and releases the context. NULL is ignored. */
void faRtBackwardUnload(faRtBackward backward);

/* The bytes of workspace a launch with these sizes needs (0 when the
 * manifest lists no scratch buffer). */
faRtStatus faRtBackwardWorkspaceSize(faRtBackward backward, int64_t batch,
                                     int64_t seqlenQ, int64_t seqlenK,
                                     uint64_t *bytes);

/* Launches the manifest's kernels in order on `stream`; asynchronous.
 * Checks the sizes against the manifest's static dims. Kernels with an
 * empty grid are skipped. A dynamic batch over 65535 (grid y), or one whose
 * tensors reach 2^31 elements with kernels of 32-bit indices (`index_bits
 * 32`), goes in chunks of fewer batches, every kernel in order per chunk
 * (each chunk's pointers, the workspace's too, advanced to its first
 * batch); a static one must fit one launch, and so must one batch entry
 * (FA_RT_ERROR_SHAPE otherwise). Every launch is prepared before the
 * first is issued, so a failure launches nothing. A kernel whose section has
 * tensor_map lines (version 4) gets one CUtensorMap by value per line after its
 * memref params; every kernel's maps are encoded before the first launch. */
faRtStatus faRtBackwardLaunch(faRtBackward backward,
                              const faRtBackwardTensors *tensors,
                              int64_t batch, int64_t seqlenQ, int64_t seqlenK,
                              void *stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FA_RUNTIME_FARUNTIME_H */
