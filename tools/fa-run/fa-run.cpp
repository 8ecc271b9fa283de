//===- fa-run.cpp - run, check and time one fa kernel on the GPU ---------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// fa-run --manifest DIR/<kernel>.manifest [--batch B] [--seqlen-q N]
//        [--seqlen-k N] [--seed S] [--repeat N] [--save DIR] ...
//
// Loads the kernel, fills q/k/v with fresh normal random data rounded to the
// kernel's dtype, poisons o/lse with NaN, runs once and checks that every
// element was written and matches a float64 CPU reference on the same
// rounded inputs, then times --repeat launches with CUDA events. Exit status:
// 0 pass, 1 numerical failure, 2 usage or setup error.
//
// A backward manifest (version 2, or 4 with tensor maps; op
// attention_backward) is detected: q, k, v, do are random, o and lse come
// from a float64 forward on the host (o rounded to its dtype), the kernels
// run in manifest order through faRtBackwardLaunch (which passes a
// version 4 section's tensor maps), and dq, dk, dv are checked against the
// float64 closed form (relative errors);
// --check-deterministic runs twice and compares the gradients bitwise;
// --memory-only skips the O(T^2) host work and reports device memory.
//
//===----------------------------------------------------------------------===//

#include "fa/Runtime/CudaDriver.h"
#include "fa/Runtime/FaRuntime.h"
#include "fa/Runtime/Float16.h"
#include "fa/Runtime/Manifest.h"
#include "fa/Runtime/Random.h"
#include "fa/Runtime/Reference.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace {

constexpr int kExitFail = 1;
constexpr int kExitError = 2;

struct Options {
  std::string manifest;
  int64_t batch = -1, seqlenQ = -1, seqlenK = -1;
  uint64_t seed = 0;
  bool seedGiven = false;
  int repeat = 20;
  int warmup = 3;
  int device = 0;
  unsigned refThreads = 0;
  double tol = -1, lseTol = -1;
  bool check = true;
  bool checkDeterministic = false;
  bool memoryOnly = false;
  std::string saveDir;
};

/// Device memory freed on scope exit.
struct DeviceBuffer {
  CUdeviceptr ptr = 0;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() {
    if (ptr)
      fa::rt::cudaDriver().cuMemFree(ptr);
  }
};

/// Device events and a stream destroyed on scope exit.
struct Timing {
  CUstream stream = nullptr;
  std::vector<CUevent> events;
  ~Timing() {
    for (CUevent event : events)
      fa::rt::cudaDriver().cuEventDestroy(event);
    if (stream)
      fa::rt::cudaDriver().cuStreamDestroy(stream);
  }
};

struct Results {
  std::vector<float> o;   // decoded to float
  std::vector<float> lse; // empty without lse
  std::vector<float> timesMs;
};

} // namespace

static int fail(const std::string &message, int code = kExitError) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return code;
}

static void printUsage(std::FILE *out) {
  std::fputs(
      "usage: fa-run --manifest DIR/<kernel>.manifest [options]\n"
      "  --batch B        flattened batch (default: the manifest's, else 4)\n"
      "  --seqlen-q N     query length (default: the manifest's, else 256)\n"
      "  --seqlen-k N     key length (default: the manifest's, else Tq)\n"
      "  --seed S         input seed (default: random, printed)\n"
      "  --repeat N       timed launches (default 20; 0: no timing)\n"
      "  --warmup N       launches before timing (default 3)\n"
      "  --tol X          max ||o - ref|| / ||ref|| (default by dtype: f32 "
      "1e-5, f16 5e-3, bf16 2e-2)\n"
      "  --lse-tol X      max |lse - ref| / max(1, |ref|) (default f32 1e-5, "
      "else 1e-3)\n"
      "  --no-check       skip the CPU reference (still checks for NaN)\n"
      "  --ref-threads N  threads for the reference (default: all cores)\n"
      "  --device N       CUDA device (default 0)\n"
      "  --save DIR       write q k v o lse (.f32, raw float32) and "
      "meta.json\n"
      "backward manifests (version 2 or 4, op attention_backward) also "
      "take:\n"
      "  --check-deterministic  run the backward twice, fail unless dq is "
      "bitwise identical\n"
      "  --memory-only    no host reference: o and lse are synthetic (o "
      "random, lse = log(visible keys)); reports the device memory of one "
      "run\n"
      "  (--tol is then the max relative error of each of dq, dk, dv; "
      "default f32 1e-5, f16 1e-2, bf16 5e-2)\n",
      out);
}

static bool parseInt64(const char *text, int64_t &out) {
  char *end = nullptr;
  errno = 0;
  long long value = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE)
    return false;
  out = value;
  return true;
}

static bool parseDouble(const char *text, double &out) {
  char *end = nullptr;
  out = std::strtod(text, &end);
  return end != text && *end == '\0' && std::isfinite(out);
}

/// Returns -1 on success, else the exit code.
static int parseOptions(int argc, char **argv, Options &options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool hasInlineValue = false;
    if (size_t eq = arg.find('=');
        arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      hasInlineValue = true;
    }
    auto next = [&](const char *&out) {
      if (hasInlineValue) {
        out = value.c_str();
        return true;
      }
      if (i + 1 >= argc)
        return false;
      out = argv[++i];
      return true;
    };
    const char *text = nullptr;
    auto needValue = [&]() {
      if (!next(text)) {
        fail("option " + arg + " needs a value");
        return false;
      }
      return true;
    };
    auto intOption = [&](int64_t &out, int64_t min) {
      if (!needValue())
        return false;
      if (!parseInt64(text, out) || out < min) {
        fail("invalid value '" + std::string(text) + "' for " + arg +
             ": expected an integer >= " + std::to_string(min));
        return false;
      }
      return true;
    };
    auto doubleOption = [&](double &out) {
      if (!needValue())
        return false;
      if (!parseDouble(text, out) || out < 0) {
        fail("invalid value '" + std::string(text) + "' for " + arg +
             ": expected a number >= 0");
        return false;
      }
      return true;
    };
    int64_t number = 0;
    if (arg == "-h" || arg == "--help") {
      printUsage(stdout);
      return 0;
    } else if (arg == "--manifest") {
      if (!needValue())
        return kExitError;
      options.manifest = text;
    } else if (arg == "--batch") {
      if (!intOption(options.batch, 0))
        return kExitError;
    } else if (arg == "--seqlen-q") {
      if (!intOption(options.seqlenQ, 0))
        return kExitError;
    } else if (arg == "--seqlen-k") {
      if (!intOption(options.seqlenK, 0))
        return kExitError;
    } else if (arg == "--seed") {
      if (!intOption(number, 0))
        return kExitError;
      options.seed = static_cast<uint64_t>(number);
      options.seedGiven = true;
    } else if (arg == "--repeat" || arg == "--warmup" || arg == "--device" ||
               arg == "--ref-threads") {
      if (!intOption(number, 0) || number > 1000000)
        return kExitError;
      if (arg == "--repeat")
        options.repeat = static_cast<int>(number);
      else if (arg == "--warmup")
        options.warmup = static_cast<int>(number);
      else if (arg == "--device")
        options.device = static_cast<int>(number);
      else
        options.refThreads = static_cast<unsigned>(number);
    } else if (arg == "--tol") {
      if (!doubleOption(options.tol))
        return kExitError;
    } else if (arg == "--lse-tol") {
      if (!doubleOption(options.lseTol))
        return kExitError;
    } else if (arg == "--no-check") {
      options.check = false;
    } else if (arg == "--check-deterministic") {
      options.checkDeterministic = true;
    } else if (arg == "--memory-only") {
      options.memoryOnly = true;
      options.check = false;
    } else if (arg == "--save") {
      if (!needValue())
        return kExitError;
      options.saveDir = text;
    } else {
      printUsage(stderr);
      return fail("unknown argument '" + std::string(argv[i]) + "'");
    }
  }
  if (options.manifest.empty()) {
    printUsage(stderr);
    return fail("--manifest is required");
  }
  return -1;
}

/// Default tolerances on ||o - ref|| / ||ref||. Rounding o alone to the
/// output type costs up to half an ulp per element (2^-9 relative for bf16,
/// 2^-12 for f16 — RMS about 1/sqrt(3) of that), and the flash algorithm
/// rounds P to the input type before the PV product, about as much again;
/// what SDPA's flash kernel measures on random data is 2e-3..4e-3 (bf16) and
/// 3e-4..6e-4 (f16). The defaults leave 5-10x room above that, which still
/// catches every indexing or masking bug (those give errors near 1). f32
/// accumulates in f32 over D and Tk terms: ~1e-6, so 1e-5.
static double defaultTolerance(faRtDtype dtype, faRtDtype oDtype) {
  faRtDtype coarsest =
      dtype == FA_RT_DTYPE_BF16 || oDtype == FA_RT_DTYPE_BF16 ? FA_RT_DTYPE_BF16
      : dtype == FA_RT_DTYPE_F16 || oDtype == FA_RT_DTYPE_F16 ? FA_RT_DTYPE_F16
                                                              : FA_RT_DTYPE_F32;
  switch (coarsest) {
  case FA_RT_DTYPE_BF16:
    return 2e-2;
  case FA_RT_DTYPE_F16:
    return 5e-3;
  case FA_RT_DTYPE_F32:
    break;
  }
  return 1e-5;
}

/// lse is f32 whatever the input type and its scores use exact products of
/// the rounded inputs, but the kernel may round P or use exp2 with a folded
/// log2(e): 1e-3 of max(1, |lse|) for 16-bit inputs, 1e-5 for f32.
static double defaultLseTolerance(faRtDtype dtype) {
  return dtype == FA_RT_DTYPE_F32 ? 1e-5 : 1e-3;
}

static faRtStatus uploadEncoded(const std::vector<float> &values,
                                faRtDtype dtype, DeviceBuffer &buffer) {
  size_t bytes = std::max<size_t>(1, values.size() * fa::rt::dtypeSize(dtype));
  FA_RT_CUDA_CHECK(cuMemAlloc, &buffer.ptr, bytes);
  if (values.empty())
    return FA_RT_SUCCESS;
  std::vector<unsigned char> encoded(values.size() * fa::rt::dtypeSize(dtype));
  fa::rt::encodeFloats(values.data(), values.size(), dtype, encoded.data());
  FA_RT_CUDA_CHECK(cuMemcpyHtoD, buffer.ptr, encoded.data(), encoded.size());
  return FA_RT_SUCCESS;
}

/// Allocates `count` elements of `dtype`, all bytes 0xff: NaN in f32, f16
/// and bf16 alike, so an element the kernel never writes stays NaN.
static faRtStatus allocPoisoned(size_t count, faRtDtype dtype,
                                DeviceBuffer &buffer) {
  size_t bytes = std::max<size_t>(1, count * fa::rt::dtypeSize(dtype));
  FA_RT_CUDA_CHECK(cuMemAlloc, &buffer.ptr, bytes);
  FA_RT_CUDA_CHECK(cuMemsetD8, buffer.ptr, 0xff, bytes);
  // cuMemsetD8 runs on the legacy stream, asynchronously to the host and
  // unordered with the kernels' non-blocking stream: wait for it, or a
  // large poison fill may land after the kernel wrote (seen on the H200
  // for lse of 4M-8M rows).
  FA_RT_CUDA_CHECK(cuCtxSynchronize);
  return FA_RT_SUCCESS;
}

static faRtStatus download(const DeviceBuffer &buffer, size_t count,
                           faRtDtype dtype, std::vector<float> &out) {
  out.assign(count, 0.0f);
  if (count == 0)
    return FA_RT_SUCCESS;
  std::vector<unsigned char> raw(count * fa::rt::dtypeSize(dtype));
  FA_RT_CUDA_CHECK(cuMemcpyDtoH, raw.data(), buffer.ptr, raw.size());
  fa::rt::decodeFloats(raw.data(), count, dtype, out.data());
  return FA_RT_SUCCESS;
}

/// Uploads the inputs, runs once for the check, then times the kernel.
static faRtStatus runKernel(faRtKernel kernel, const fa::rt::Manifest &m,
                            const fa::rt::LaunchShape &shape,
                            const std::vector<float> &q,
                            const std::vector<float> &k,
                            const std::vector<float> &v, const Options &options,
                            Results &results) {
  const size_t oCount = shape.batch * shape.seqlenQ * m.headDimV;
  const size_t lseCount = m.hasLse ? shape.batch * shape.seqlenQ : 0;
  DeviceBuffer dq, dk, dv, dO, dLse;
  if (faRtStatus s = uploadEncoded(q, m.dtype, dq))
    return s;
  if (faRtStatus s = uploadEncoded(k, m.dtype, dk))
    return s;
  if (faRtStatus s = uploadEncoded(v, m.dtype, dv))
    return s;
  if (faRtStatus s = allocPoisoned(oCount, m.oDtype, dO))
    return s;
  if (m.hasLse)
    if (faRtStatus s = allocPoisoned(lseCount, FA_RT_DTYPE_F32, dLse))
      return s;

  Timing timing;
  FA_RT_CUDA_CHECK(cuStreamCreate, &timing.stream, CU_STREAM_NON_BLOCKING);
  auto launch = [&]() {
    return faRtKernelLaunch(kernel, dq.ptr, dk.ptr, dv.ptr, dO.ptr, dLse.ptr,
                            shape.batch, shape.seqlenQ, shape.seqlenK,
                            timing.stream);
  };
  if (faRtStatus s = launch())
    return s;
  FA_RT_CUDA_CHECK(cuStreamSynchronize, timing.stream);
  if (faRtStatus s = download(dO, oCount, m.oDtype, results.o))
    return s;
  if (faRtStatus s = download(dLse, lseCount, FA_RT_DTYPE_F32, results.lse))
    return s;

  if (options.repeat == 0)
    return FA_RT_SUCCESS;
  for (int i = 0; i < options.warmup; ++i)
    if (faRtStatus s = launch())
      return s;
  timing.events.resize(2 * options.repeat, nullptr);
  for (CUevent &event : timing.events)
    FA_RT_CUDA_CHECK(cuEventCreate, &event, CU_EVENT_DEFAULT);
  for (int i = 0; i < options.repeat; ++i) {
    FA_RT_CUDA_CHECK(cuEventRecord, timing.events[2 * i], timing.stream);
    if (faRtStatus s = launch())
      return s;
    FA_RT_CUDA_CHECK(cuEventRecord, timing.events[2 * i + 1], timing.stream);
  }
  FA_RT_CUDA_CHECK(cuStreamSynchronize, timing.stream);
  for (int i = 0; i < options.repeat; ++i) {
    float ms = 0;
    FA_RT_CUDA_CHECK(cuEventElapsedTime, &ms, timing.events[2 * i],
                     timing.events[2 * i + 1]);
    results.timesMs.push_back(ms);
  }
  return FA_RT_SUCCESS;
}

static bool writeRaw(const std::string &path, const std::vector<float> &data) {
  std::ofstream file(path, std::ios::binary);
  file.write(reinterpret_cast<const char *>(data.data()),
             static_cast<std::streamsize>(data.size() * sizeof(float)));
  return static_cast<bool>(file);
}

static std::string jsonNumber(double value) {
  if (std::isnan(value))
    return "NaN";
  if (std::isinf(value))
    return value > 0 ? "Infinity" : "-Infinity";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.17g", value);
  return buffer;
}

//===----------------------------------------------------------------------===//
// Backward manifests
//===----------------------------------------------------------------------===//

/// Default tolerance on each of ||g - ref|| / ||ref|| for g in dq, dk, dv.
/// The kernels see o rounded to its dtype, so delta = rowsum(do * o) is off
/// by that rounding, and dS = P (dP - delta) cancels: for 16-bit inputs the
/// gradients' errors are several times the forward's (SDPA's flash backward
/// measures about 5e-3 bf16, 7e-4 f16 on random data). The defaults leave
/// room above that while catching indexing or masking bugs (errors near 1).
static double defaultGradTolerance(faRtDtype coarsest) {
  switch (coarsest) {
  case FA_RT_DTYPE_BF16:
    return 5e-2;
  case FA_RT_DTYPE_F16:
    return 1e-2;
  case FA_RT_DTYPE_F32:
    break;
  }
  return 1e-5;
}

static faRtDtype coarsestDtype(std::initializer_list<faRtDtype> dtypes) {
  faRtDtype result = FA_RT_DTYPE_F32;
  for (faRtDtype dtype : dtypes) {
    if (dtype == FA_RT_DTYPE_BF16)
      return FA_RT_DTYPE_BF16;
    if (dtype == FA_RT_DTYPE_F16)
      result = FA_RT_DTYPE_F16;
  }
  return result;
}

/// ||out - ref|| / ||ref|| (||out|| when ref is all zero).
static double relativeError(const std::vector<float> &out,
                            const std::vector<double> &ref) {
  double diff2 = 0, ref2 = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double d = static_cast<double>(out[i]) - ref[i];
    diff2 += d * d;
    ref2 += ref[i] * ref[i];
  }
  return ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
}

static faRtStatus downloadRaw(const DeviceBuffer &buffer, size_t bytes,
                              std::vector<unsigned char> &out) {
  out.assign(bytes, 0);
  if (bytes)
    FA_RT_CUDA_CHECK(cuMemcpyDtoH, out.data(), buffer.ptr, bytes);
  return FA_RT_SUCCESS;
}

namespace {
struct BackwardResults {
  std::vector<float> dq, dk, dv;
  std::vector<float> timesMs;
  uint64_t tensorBytes = 0, inputBytes = 0, outputBytes = 0,
           workspaceBytes = 0;
  int64_t freeDelta = 0; ///< cuMemGetInfo free before - after the first run
  int determinismMismatches = -1; ///< -1: not checked
};
} // namespace

static faRtStatus runBackward(faRtBackward backward,
                              const fa::rt::BackwardManifest &m,
                              const fa::rt::LaunchShape &shape,
                              const std::vector<std::vector<float>> &inputs,
                              const Options &options,
                              BackwardResults &results) {
  const int64_t b = shape.batch, tq = shape.seqlenQ, tk = shape.seqlenK;
  const int64_t d = m.headDim, dv = m.headDimV;
  size_t freeBefore = 0, freeAfter = 0, total = 0;
  FA_RT_CUDA_CHECK(cuMemGetInfo, &freeBefore, &total);

  // q k v o do lse, in their dtypes.
  const faRtDtype inputTypes[] = {m.dtype,   m.dtype,   m.dtype,
                                  m.oDtype,  m.doDtype, FA_RT_DTYPE_F32};
  DeviceBuffer in[6];
  for (int i = 0; i < 6; ++i) {
    if (faRtStatus s = uploadEncoded(inputs[i], inputTypes[i], in[i]))
      return s;
    results.inputBytes += inputs[i].size() * fa::rt::dtypeSize(inputTypes[i]);
  }
  const size_t dqCount = b * tq * d, dkCount = b * tk * d,
               dvCount = b * tk * dv;
  DeviceBuffer dqBuf, dkBuf, dvBuf, workspace;
  if (faRtStatus s = allocPoisoned(dqCount, m.dqDtype, dqBuf))
    return s;
  if (faRtStatus s = allocPoisoned(dkCount, m.dkDtype, dkBuf))
    return s;
  if (faRtStatus s = allocPoisoned(dvCount, m.dvDtype, dvBuf))
    return s;
  results.outputBytes = dqCount * fa::rt::dtypeSize(m.dqDtype) +
                        dkCount * fa::rt::dtypeSize(m.dkDtype) +
                        dvCount * fa::rt::dtypeSize(m.dvDtype);
  uint64_t workspaceBytes = 0;
  if (faRtStatus s = faRtBackwardWorkspaceSize(backward, b, tq, tk,
                                               &workspaceBytes))
    return s;
  results.workspaceBytes = workspaceBytes;
  if (workspaceBytes)
    FA_RT_CUDA_CHECK(cuMemAlloc, &workspace.ptr, workspaceBytes);
  results.tensorBytes =
      results.inputBytes + results.outputBytes + results.workspaceBytes;

  Timing timing;
  FA_RT_CUDA_CHECK(cuStreamCreate, &timing.stream, CU_STREAM_NON_BLOCKING);
  faRtBackwardTensors tensors{in[0].ptr, in[1].ptr, in[2].ptr, in[3].ptr,
                              in[4].ptr, in[5].ptr, dqBuf.ptr, dkBuf.ptr,
                              dvBuf.ptr, workspace.ptr};
  auto launch = [&]() {
    return faRtBackwardLaunch(backward, &tensors, b, tq, tk, timing.stream);
  };
  if (faRtStatus s = launch())
    return s;
  FA_RT_CUDA_CHECK(cuStreamSynchronize, timing.stream);
  FA_RT_CUDA_CHECK(cuMemGetInfo, &freeAfter, &total);
  results.freeDelta =
      static_cast<int64_t>(freeBefore) - static_cast<int64_t>(freeAfter);
  if (faRtStatus s = download(dqBuf, dqCount, m.dqDtype, results.dq))
    return s;
  if (faRtStatus s = download(dkBuf, dkCount, m.dkDtype, results.dk))
    return s;
  if (faRtStatus s = download(dvBuf, dvCount, m.dvDtype, results.dv))
    return s;

  if (options.checkDeterministic) {
    // A second run into re-poisoned outputs; dq (and dk, dv) must match
    // bit for bit.
    const size_t bytes[3] = {dqCount * fa::rt::dtypeSize(m.dqDtype),
                             dkCount * fa::rt::dtypeSize(m.dkDtype),
                             dvCount * fa::rt::dtypeSize(m.dvDtype)};
    DeviceBuffer *bufs[3] = {&dqBuf, &dkBuf, &dvBuf};
    std::vector<unsigned char> first[3], second[3];
    for (int i = 0; i < 3; ++i)
      if (faRtStatus s = downloadRaw(*bufs[i], bytes[i], first[i]))
        return s;
    for (int i = 0; i < 3; ++i)
      FA_RT_CUDA_CHECK(cuMemsetD8, bufs[i]->ptr, 0xff, bytes[i]);
    FA_RT_CUDA_CHECK(cuCtxSynchronize); // see allocPoisoned
    if (faRtStatus s = launch())
      return s;
    FA_RT_CUDA_CHECK(cuStreamSynchronize, timing.stream);
    results.determinismMismatches = 0;
    for (int i = 0; i < 3; ++i) {
      if (faRtStatus s = downloadRaw(*bufs[i], bytes[i], second[i]))
        return s;
      size_t differing = 0;
      for (size_t j = 0; j < bytes[i]; ++j)
        differing += first[i][j] != second[i][j] ? 1 : 0;
      std::printf("deterministic: %s %s across 2 runs (%zu of %zu bytes "
                  "differ)\n",
                  i == 0 ? "dq" : i == 1 ? "dk" : "dv",
                  differing ? "DIFFERS" : "bitwise identical", differing,
                  bytes[i]);
      results.determinismMismatches += differing ? 1 : 0;
    }
  }

  if (options.repeat == 0)
    return FA_RT_SUCCESS;
  for (int i = 0; i < options.warmup; ++i)
    if (faRtStatus s = launch())
      return s;
  timing.events.resize(2 * options.repeat, nullptr);
  for (CUevent &event : timing.events)
    FA_RT_CUDA_CHECK(cuEventCreate, &event, CU_EVENT_DEFAULT);
  for (int i = 0; i < options.repeat; ++i) {
    FA_RT_CUDA_CHECK(cuEventRecord, timing.events[2 * i], timing.stream);
    if (faRtStatus s = launch())
      return s;
    FA_RT_CUDA_CHECK(cuEventRecord, timing.events[2 * i + 1], timing.stream);
  }
  FA_RT_CUDA_CHECK(cuStreamSynchronize, timing.stream);
  for (int i = 0; i < options.repeat; ++i) {
    float ms = 0;
    FA_RT_CUDA_CHECK(cuEventElapsedTime, &ms, timing.events[2 * i],
                     timing.events[2 * i + 1]);
    results.timesMs.push_back(ms);
  }
  return FA_RT_SUCCESS;
}

/// fa-run on a backward manifest: random q, k, v, do; o and lse from a
/// float64 forward on the host (o rounded to its dtype); dq, dk, dv checked
/// against the float64 closed form.
static int runBackwardMain(Options &options) {
  fa::rt::BackwardManifest m;
  if (fa::rt::readBackwardManifestFile(options.manifest, m))
    return fail(faRtGetLastError());
  fa::rt::LaunchShape shape;
  shape.batch = options.batch >= 0            ? options.batch
                : m.batch != fa::rt::kDynamic ? m.batch
                                              : 4;
  shape.seqlenQ = options.seqlenQ >= 0            ? options.seqlenQ
                  : m.seqlenQ != fa::rt::kDynamic ? m.seqlenQ
                                                  : 256;
  shape.seqlenK = options.seqlenK >= 0            ? options.seqlenK
                  : m.seqlenK != fa::rt::kDynamic ? m.seqlenK
                                                  : shape.seqlenQ;
  // As faRtBackwardLaunch checks it: the largest batch chunk it launches.
  if (fa::rt::checkBackwardChunkedLaunchShape(m, shape))
    return fail(faRtGetLastError());
  if (!options.saveDir.empty()) {
    struct stat info;
    if (stat(options.saveDir.c_str(), &info) != 0 &&
        mkdir(options.saveDir.c_str(), 0755) != 0)
      return fail("cannot create --save folder '" + options.saveDir +
                  "': " + std::strerror(errno));
  }
  faRtBackward backward = nullptr;
  if (fa::rt::loadBackward(m, options.device, &backward))
    return fail(faRtGetLastError());

  if (!options.seedGiven)
    options.seed = std::random_device()() ^
                   (static_cast<uint64_t>(std::random_device()()) << 32);
  const double tol =
      options.tol >= 0
          ? options.tol
          : defaultGradTolerance(coarsestDtype(
                {m.dtype, m.oDtype, m.doDtype, m.dqDtype, m.dkDtype,
                 m.dvDtype}));
  const int64_t b = shape.batch, tq = shape.seqlenQ, tk = shape.seqlenK;
  std::string kernels;
  for (const fa::rt::KernelLaunch &kernel : m.kernels) {
    kernels += (kernels.empty() ? "" : ", ") + kernel.kernel;
    std::string maps;
    for (const fa::rt::TensorMapSpec &spec : kernel.tensorMaps)
      maps += " " + spec.operand;
    if (!maps.empty())
      kernels += " (tensor maps" + maps + ")";
  }
  std::printf("backward: %s (%s), kernels: %s\n", m.name.c_str(),
              m.path.c_str(), kernels.c_str());
  std::printf("config: dtype %s o %s do %s dq %s dk %s dv %s causal %s "
              "scale %g batch %lld seqlen_q %lld seqlen_k %lld head_dim %lld "
              "head_dim_v %lld deterministic %d\n",
              fa::rt::dtypeName(m.dtype), fa::rt::dtypeName(m.oDtype),
              fa::rt::dtypeName(m.doDtype), fa::rt::dtypeName(m.dqDtype),
              fa::rt::dtypeName(m.dkDtype), fa::rt::dtypeName(m.dvDtype),
              fa::rt::causalName(m.causal), m.scale,
              static_cast<long long>(b), static_cast<long long>(tq),
              static_cast<long long>(tk), static_cast<long long>(m.headDim),
              static_cast<long long>(m.headDimV), m.deterministic ? 1 : 0);
  std::printf("seed: %llu (q, k, v, do: normal(0, 1) rounded to their "
              "dtypes; o, lse: %s)\n",
              static_cast<unsigned long long>(options.seed),
              options.memoryOnly ? "synthetic (--memory-only)"
                                 : "float64 forward on the host");
  std::fflush(stdout);

  std::vector<std::vector<float>> inputs(6);
  inputs[0] =
      fa::rt::randomNormal(b * tq * m.headDim, options.seed, 0, m.dtype);
  inputs[1] =
      fa::rt::randomNormal(b * tk * m.headDim, options.seed, 1, m.dtype);
  inputs[2] =
      fa::rt::randomNormal(b * tk * m.headDimV, options.seed, 2, m.dtype);
  inputs[4] =
      fa::rt::randomNormal(b * tq * m.headDimV, options.seed, 3, m.doDtype);
  fa::rt::AttentionShape problem{b,          tq,      tk,      m.headDim,
                                 m.headDimV, m.scale, m.causal};
  if (options.memoryOnly) {
    inputs[3] =
        fa::rt::randomNormal(b * tq * m.headDimV, options.seed, 4, m.oDtype);
    inputs[5].resize(b * tq);
    for (int64_t i = 0; i < b * tq; ++i) {
      int64_t visible = fa::rt::visibleKeys(m.causal, i % tq, tq, tk);
      inputs[5][i] = visible ? std::log(static_cast<float>(visible))
                             : -std::numeric_limits<float>::infinity();
    }
  } else {
    std::vector<double> refO(b * tq * m.headDimV), refLse(b * tq);
    fa::rt::referenceAttention(problem, inputs[0].data(), inputs[1].data(),
                               inputs[2].data(), refO.data(), refLse.data(),
                               options.refThreads);
    inputs[3].resize(refO.size());
    for (size_t i = 0; i < refO.size(); ++i)
      inputs[3][i] =
          fa::rt::roundToDtype(static_cast<float>(refO[i]), m.oDtype);
    inputs[5].resize(refLse.size());
    for (size_t i = 0; i < refLse.size(); ++i)
      inputs[5][i] = static_cast<float>(refLse[i]);
  }

  BackwardResults results;
  faRtStatus status =
      runBackward(backward, m, shape, inputs, options, results);
  std::string runError = status ? faRtGetLastError() : "";
  faRtBackwardUnload(backward);
  if (status)
    return fail(runError);

  std::printf("memory: %llu bytes of device tensors (inputs %llu, outputs "
              "%llu, workspace %llu); cuMemGetInfo free-memory drop over "
              "allocation and first run: %lld bytes\n",
              static_cast<unsigned long long>(results.tensorBytes),
              static_cast<unsigned long long>(results.inputBytes),
              static_cast<unsigned long long>(results.outputBytes),
              static_cast<unsigned long long>(results.workspaceBytes),
              static_cast<long long>(results.freeDelta));

  bool passed = true;
  const char *names[3] = {"dq", "dk", "dv"};
  std::vector<float> *grads[3] = {&results.dq, &results.dk, &results.dv};
  for (int i = 0; i < 3; ++i) {
    size_t nan = 0;
    for (float value : *grads[i])
      nan += std::isnan(value) ? 1 : 0;
    if (nan) {
      std::printf("FAIL: NaN (unwritten or computed) in %zu of %zu %s "
                  "elements\n",
                  nan, grads[i]->size(), names[i]);
      passed = false;
    }
  }
  if (results.determinismMismatches > 0) {
    std::printf("FAIL: the two runs differ\n");
    passed = false;
  }

  double errors[3] = {std::numeric_limits<double>::quiet_NaN(),
                      std::numeric_limits<double>::quiet_NaN(),
                      std::numeric_limits<double>::quiet_NaN()};
  if (options.check) {
    std::vector<double> ref[3] = {std::vector<double>(results.dq.size()),
                                  std::vector<double>(results.dk.size()),
                                  std::vector<double>(results.dv.size())};
    fa::rt::referenceAttentionBackward(
        problem, inputs[0].data(), inputs[1].data(), inputs[2].data(),
        inputs[4].data(), ref[0].data(), ref[1].data(), ref[2].data(),
        options.refThreads);
    for (int i = 0; i < 3; ++i) {
      errors[i] = relativeError(*grads[i], ref[i]);
      std::printf("%s: rel_err %.3e (||%s - ref|| / ||ref||; tol %.1e)\n",
                  names[i], errors[i], names[i], tol);
      if (!(errors[i] <= tol)) {
        std::printf("FAIL: %s rel_err %.3e > tol %.1e\n", names[i],
                    errors[i], tol);
        passed = false;
      }
    }
  }

  double medianMs = std::numeric_limits<double>::quiet_NaN();
  double tflops = std::numeric_limits<double>::quiet_NaN();
  if (!results.timesMs.empty()) {
    std::vector<float> sorted = results.timesMs;
    std::sort(sorted.begin(), sorted.end());
    size_t n = sorted.size();
    medianMs =
        n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    // DESIGN.md: the backward counts 2.5x the forward's FLOPs.
    double flops = 2.5 * fa::rt::attentionFlops(problem);
    tflops = medianMs > 0 ? flops / (medianMs * 1e-3) / 1e12 : 0.0;
    std::printf("time: median %.4f ms (min %.4f, max %.4f, %zu runs after %d "
                "warm-up) %.2f TFLOP/s\n",
                medianMs, sorted.front(), sorted.back(), n, options.warmup,
                tflops);
  }

  if (!options.saveDir.empty()) {
    const std::string &dir = options.saveDir;
    const char *inputNames[6] = {"q", "k", "v", "o", "do", "lse"};
    bool ok = true;
    for (int i = 0; i < 6; ++i)
      ok = ok && writeRaw(dir + "/" + inputNames[i] + ".f32", inputs[i]);
    for (int i = 0; i < 3; ++i)
      ok = ok && writeRaw(dir + "/" + names[i] + ".f32", *grads[i]);
    std::ofstream meta(dir + "/meta.json");
    meta << "{\n"
         << "  \"kind\": \"backward\",\n"
         << "  \"kernel\": \"" << m.name << "\",\n"
         << "  \"manifest\": \"" << m.path << "\",\n"
         << "  \"dtype\": \"" << fa::rt::dtypeName(m.dtype) << "\",\n"
         << "  \"o_dtype\": \"" << fa::rt::dtypeName(m.oDtype) << "\",\n"
         << "  \"do_dtype\": \"" << fa::rt::dtypeName(m.doDtype) << "\",\n"
         << "  \"causal\": \"" << fa::rt::causalName(m.causal) << "\",\n"
         << "  \"scale\": " << jsonNumber(m.scale) << ",\n"
         << "  \"batch\": " << b << ",\n"
         << "  \"seqlen_q\": " << tq << ",\n"
         << "  \"seqlen_k\": " << tk << ",\n"
         << "  \"head_dim\": " << m.headDim << ",\n"
         << "  \"head_dim_v\": " << m.headDimV << ",\n"
         << "  \"deterministic\": " << (m.deterministic ? "true" : "false")
         << ",\n"
         << "  \"seed\": " << options.seed << ",\n"
         << "  \"dq_rel_err\": " << jsonNumber(errors[0]) << ",\n"
         << "  \"dk_rel_err\": " << jsonNumber(errors[1]) << ",\n"
         << "  \"dv_rel_err\": " << jsonNumber(errors[2]) << ",\n"
         << "  \"determinism_mismatches\": " << results.determinismMismatches
         << ",\n"
         << "  \"tensor_bytes\": " << results.tensorBytes << ",\n"
         << "  \"workspace_bytes\": " << results.workspaceBytes << ",\n"
         << "  \"free_delta_bytes\": " << results.freeDelta << ",\n"
         << "  \"tol\": " << jsonNumber(tol) << ",\n"
         << "  \"median_ms\": " << jsonNumber(medianMs) << ",\n"
         << "  \"tflops\": " << jsonNumber(tflops) << ",\n"
         << "  \"passed\": " << (passed ? "true" : "false") << "\n"
         << "}\n";
    if (!ok || !meta)
      return fail("cannot write the --save files under '" + dir + "'");
    std::printf("saved: %s/{q,k,v,o,do,lse,dq,dk,dv}.f32 and meta.json\n",
                dir.c_str());
  }
  std::printf("%s\n", passed ? "PASS" : "FAIL");
  return passed ? 0 : kExitFail;
}

int main(int argc, char **argv) {
  Options options;
  if (int code = parseOptions(argc, argv, options); code >= 0)
    return code;

  fa::rt::ManifestKind kind;
  if (fa::rt::readManifestKind(options.manifest, kind))
    return fail(faRtGetLastError());
  if (kind == fa::rt::ManifestKind::Backward)
    return runBackwardMain(options);
  if (options.checkDeterministic || options.memoryOnly)
    return fail("--check-deterministic and --memory-only take a backward "
                "manifest");

  fa::rt::Manifest m;
  if (fa::rt::readManifestFile(options.manifest, m))
    return fail(faRtGetLastError());

  fa::rt::LaunchShape shape;
  shape.batch = options.batch >= 0            ? options.batch
                : m.batch != fa::rt::kDynamic ? m.batch
                                              : 4;
  shape.seqlenQ = options.seqlenQ >= 0            ? options.seqlenQ
                  : m.seqlenQ != fa::rt::kDynamic ? m.seqlenQ
                                                  : 256;
  shape.seqlenK = options.seqlenK >= 0            ? options.seqlenK
                  : m.seqlenK != fa::rt::kDynamic ? m.seqlenK
                                                  : shape.seqlenQ;
  // As faRtKernelLaunch checks it: the largest batch chunk it launches.
  if (fa::rt::checkChunkedLaunchShape(m, shape))
    return fail(faRtGetLastError());
  if (!options.saveDir.empty()) {
    struct stat info;
    if (stat(options.saveDir.c_str(), &info) != 0 &&
        mkdir(options.saveDir.c_str(), 0755) != 0)
      return fail("cannot create --save folder '" + options.saveDir +
                  "': " + std::strerror(errno));
  }

  // The GPU next, so that a machine without one fails before the inputs are
  // made.
  faRtKernel kernel = nullptr;
  if (fa::rt::loadKernel(m, options.device, &kernel))
    return fail(faRtGetLastError());
  char deviceName[256] = "?";
  {
    CUdevice device;
    if (fa::rt::cudaDriver().cuDeviceGet(&device, options.device) ==
        CUDA_SUCCESS)
      fa::rt::cudaDriver().cuDeviceGetName(deviceName, sizeof(deviceName),
                                           device);
  }

  if (!options.seedGiven)
    options.seed = std::random_device()() ^
                   (static_cast<uint64_t>(std::random_device()()) << 32);
  const double tol =
      options.tol >= 0 ? options.tol : defaultTolerance(m.dtype, m.oDtype);
  const double lseTol =
      options.lseTol >= 0 ? options.lseTol : defaultLseTolerance(m.dtype);

  std::printf("kernel: %s (%s)\n", m.kernel.c_str(), m.path.c_str());
  std::printf("device: %s\n", deviceName);
  std::printf("config: dtype %s o_dtype %s causal %s scale %g batch %lld "
              "seqlen_q %lld seqlen_k %lld head_dim %lld head_dim_v %lld "
              "lse %d\n",
              fa::rt::dtypeName(m.dtype), fa::rt::dtypeName(m.oDtype),
              fa::rt::causalName(m.causal), m.scale,
              static_cast<long long>(shape.batch),
              static_cast<long long>(shape.seqlenQ),
              static_cast<long long>(shape.seqlenK),
              static_cast<long long>(m.headDim),
              static_cast<long long>(m.headDimV), m.hasLse ? 1 : 0);
  std::printf("seed: %llu (inputs: normal(0, 1) rounded to %s)\n",
              static_cast<unsigned long long>(options.seed),
              fa::rt::dtypeName(m.dtype));
  std::fflush(stdout);

  const int64_t b = shape.batch, tq = shape.seqlenQ, tk = shape.seqlenK;
  std::vector<float> q =
      fa::rt::randomNormal(b * tq * m.headDim, options.seed, 0, m.dtype);
  std::vector<float> k =
      fa::rt::randomNormal(b * tk * m.headDim, options.seed, 1, m.dtype);
  std::vector<float> v =
      fa::rt::randomNormal(b * tk * m.headDimV, options.seed, 2, m.dtype);

  Results results;
  faRtStatus status = runKernel(kernel, m, shape, q, k, v, options, results);
  std::string runError = status ? faRtGetLastError() : "";
  faRtKernelUnload(kernel);
  if (status)
    return fail(runError);

  bool passed = true;
  // Every element written and finite where the reference is (NaN never
  // passes; lse may be -inf only on rows with no visible key).
  size_t nanO = 0, nanLse = 0;
  for (float value : results.o)
    nanO += std::isnan(value) ? 1 : 0;
  for (float value : results.lse)
    nanLse += std::isnan(value) ? 1 : 0;
  if (nanO || nanLse) {
    std::printf("FAIL: NaN (unwritten or computed) in %zu of %zu o and %zu "
                "of %zu lse elements\n",
                nanO, results.o.size(), nanLse, results.lse.size());
    passed = false;
  }

  double oRelErr = std::numeric_limits<double>::quiet_NaN();
  double lseMaxAbsErr = std::numeric_limits<double>::quiet_NaN();
  if (options.check) {
    fa::rt::AttentionShape problem{b,          tq,      tk,      m.headDim,
                                   m.headDimV, m.scale, m.causal};
    std::vector<double> refO(results.o.size()), refLse(b * tq);
    fa::rt::referenceAttention(problem, q.data(), k.data(), v.data(),
                               refO.data(), refLse.data(), options.refThreads);
    double diff2 = 0, ref2 = 0;
    for (size_t i = 0; i < refO.size(); ++i) {
      double d = static_cast<double>(results.o[i]) - refO[i];
      diff2 += d * d;
      ref2 += refO[i] * refO[i];
    }
    // All rows masked (or Tk = 0): the reference is 0, report ||o||.
    oRelErr = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
    std::printf("o: rel_err %.3e (||o - ref|| / ||ref||%s; tol %.1e)\n",
                oRelErr, ref2 > 0 ? "" : ", reference is all zero: ||o||", tol);
    if (!(oRelErr <= tol)) {
      std::printf("FAIL: o rel_err %.3e > tol %.1e\n", oRelErr, tol);
      passed = false;
    }
    if (m.hasLse) {
      lseMaxAbsErr = 0;
      size_t infMismatch = 0, overTol = 0;
      for (size_t i = 0; i < refLse.size(); ++i) {
        double ours = results.lse[i], ref = refLse[i];
        if (std::isinf(ref) || std::isinf(ours)) {
          infMismatch += ours == ref ? 0 : 1;
          continue;
        }
        double err = std::fabs(ours - ref);
        if (!(err <= lseMaxAbsErr))
          lseMaxAbsErr = err;
        overTol += err <= lseTol * std::max(1.0, std::fabs(ref)) ? 0 : 1;
      }
      std::printf("lse: max_abs_err %.3e (tol %.1e * max(1, |ref|))\n",
                  lseMaxAbsErr, lseTol);
      if (infMismatch) {
        std::printf("FAIL: lse: %zu rows where exactly one of lse and ref is "
                    "-inf\n",
                    infMismatch);
        passed = false;
      }
      if (overTol) {
        std::printf("FAIL: lse: %zu rows over tolerance\n", overTol);
        passed = false;
      }
    }
  }

  double medianMs = std::numeric_limits<double>::quiet_NaN();
  double tflops = std::numeric_limits<double>::quiet_NaN();
  if (!results.timesMs.empty()) {
    std::vector<float> sorted = results.timesMs;
    std::sort(sorted.begin(), sorted.end());
    size_t n = sorted.size();
    medianMs =
        n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    fa::rt::AttentionShape problem{b,          tq,      tk,      m.headDim,
                                   m.headDimV, m.scale, m.causal};
    double flops = fa::rt::attentionFlops(problem);
    tflops = medianMs > 0 ? flops / (medianMs * 1e-3) / 1e12 : 0.0;
    std::printf("time: median %.4f ms (min %.4f, max %.4f, %zu runs after %d "
                "warm-up) %.2f TFLOP/s\n",
                medianMs, sorted.front(), sorted.back(), n, options.warmup,
                tflops);
  }

  if (!options.saveDir.empty()) {
    const std::string &dir = options.saveDir;
    bool ok = writeRaw(dir + "/q.f32", q) && writeRaw(dir + "/k.f32", k) &&
              writeRaw(dir + "/v.f32", v) &&
              writeRaw(dir + "/o.f32", results.o) &&
              (!m.hasLse || writeRaw(dir + "/lse.f32", results.lse));
    std::ofstream meta(dir + "/meta.json");
    meta << "{\n"
         << "  \"kernel\": \"" << m.kernel << "\",\n"
         << "  \"manifest\": \"" << m.path << "\",\n"
         << "  \"dtype\": \"" << fa::rt::dtypeName(m.dtype) << "\",\n"
         << "  \"o_dtype\": \"" << fa::rt::dtypeName(m.oDtype) << "\",\n"
         << "  \"causal\": \"" << fa::rt::causalName(m.causal) << "\",\n"
         << "  \"scale\": " << jsonNumber(m.scale) << ",\n"
         << "  \"batch\": " << b << ",\n"
         << "  \"seqlen_q\": " << tq << ",\n"
         << "  \"seqlen_k\": " << tk << ",\n"
         << "  \"head_dim\": " << m.headDim << ",\n"
         << "  \"head_dim_v\": " << m.headDimV << ",\n"
         << "  \"has_lse\": " << (m.hasLse ? "true" : "false") << ",\n"
         << "  \"seed\": " << options.seed << ",\n"
         << "  \"o_rel_err\": " << jsonNumber(oRelErr) << ",\n"
         << "  \"lse_max_abs_err\": " << jsonNumber(lseMaxAbsErr) << ",\n"
         << "  \"tol\": " << jsonNumber(tol) << ",\n"
         << "  \"median_ms\": " << jsonNumber(medianMs) << ",\n"
         << "  \"tflops\": " << jsonNumber(tflops) << ",\n"
         << "  \"passed\": " << (passed ? "true" : "false") << "\n"
         << "}\n";
    if (!ok || !meta)
      return fail("cannot write the --save files under '" + dir + "'");
    std::printf("saved: %s/{q,k,v,o%s}.f32 and meta.json\n", dir.c_str(),
                m.hasLse ? ",lse" : "");
  }

  std::printf("%s\n", passed ? "PASS" : "FAIL");
  return passed ? 0 : kExitFail;
}
