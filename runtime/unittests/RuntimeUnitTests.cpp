//===- RuntimeUnitTests.cpp - host-only tests of the fa runtime ----------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// Manifest parsing, launch shapes, grid and kernel parameters, f16/bf16
// conversion and the float64 reference: everything of the runtime that runs
// without a GPU. Prints one "PASS <test>" or "FAIL <test>" line per test
// (test/Runtime/runtime-unit.test checks them) and exits non-zero on failure.
//
//===----------------------------------------------------------------------===//

#include "fa/Runtime/CudaDriver.h"
#include "fa/Runtime/FaRuntime.h"
#include "fa/Runtime/Float16.h"
#include "fa/Runtime/Manifest.h"
#include "fa/Runtime/Random.h"
#include "fa/Runtime/Reference.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

int currentFailures = 0;

void reportCheck(bool ok, const char *what, const char *file, int line) {
  if (ok)
    return;
  ++currentFailures;
  std::printf("  check failed at %s:%d: %s\n", file, line, what);
}

} // namespace

#define EXPECT(cond)                                                           \
  reportCheck(static_cast<bool>(cond), #cond, __FILE__, __LINE__)
#define EXPECT_EQ(a, b)                                                        \
  reportCheck((a) == (b), #a " == " #b, __FILE__, __LINE__)
#define EXPECT_NEAR(a, b, tol)                                                 \
  reportCheck(std::fabs((a) - (b)) <= (tol), #a " ~= " #b, __FILE__, __LINE__)

using fa::rt::kDynamic;
using fa::rt::Manifest;
using fa::rt::TensorMapSpec;

static float bitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

/// The example of docs/ARTIFACTS.md.
static const char *const kGoodManifest = R"(# fa kernel manifest
version 1
kernel main_attention_0
ptx main_attention_0.ptx
chip sm_90a
dtype bf16          # q/k/v element type: f16 | bf16 | f32
o_dtype bf16        # o element type
causal top_left     # none | top_left | bottom_right
scale 0.125         # the scale the kernel applies
batch 16            # product of the batch dims, or ?
batch_shape 2 8     # the batch dims of the source op, each a number or ?
seqlen_q ?
seqlen_k ?
head_dim 64
head_dim_v 64
has_lse 1
block_m 64
block_n 64
threads 64
shared_bytes 0
params q k v o lse
grid ceil_div(seqlen_q,block_m) batch 1
)";

/// kGoodManifest with the line starting "<key> " replaced by `line` (or
/// dropped when `line` is empty).
static std::string withLine(const std::string &key, const std::string &line) {
  std::string out;
  std::string text = kGoodManifest;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    std::string current = text.substr(pos, end - pos);
    pos = end + 1;
    if (current.rfind(key + " ", 0) == 0) {
      if (!line.empty())
        out += line + "\n";
      continue;
    }
    out += current + "\n";
  }
  return out;
}

static std::string parseError(const std::string &text) {
  Manifest m;
  faRtStatus status = fa::rt::parseManifest(text, "dir/x.manifest", m);
  if (status == FA_RT_SUCCESS)
    return "<parsed>";
  return std::string(faRtStatusName(status)) + ": " + faRtGetLastError();
}

static bool contains(const std::string &haystack, const std::string &needle) {
  return haystack.find(needle) != std::string::npos;
}

#define EXPECT_ERROR(text, needle)                                             \
  do {                                                                         \
    std::string error_ = parseError(text);                                     \
    bool ok_ = contains(error_, needle);                                       \
    reportCheck(ok_, "error contains: " needle, __FILE__, __LINE__);           \
    if (!ok_)                                                                  \
      std::printf("    got: %s\n", error_.c_str());                            \
  } while (false)

static void testManifestGood() {
  Manifest m;
  EXPECT_EQ(fa::rt::parseManifest(kGoodManifest, "dir/x.manifest", m),
            FA_RT_SUCCESS);
  EXPECT_EQ(m.version, 1);
  EXPECT_EQ(m.kernel, "main_attention_0");
  EXPECT_EQ(m.ptxPath(), "dir/main_attention_0.ptx");
  EXPECT_EQ(m.chip, "sm_90a");
  EXPECT_EQ(m.dtype, FA_RT_DTYPE_BF16);
  EXPECT_EQ(m.oDtype, FA_RT_DTYPE_BF16);
  EXPECT_EQ(m.causal, FA_RT_CAUSAL_TOP_LEFT);
  EXPECT_EQ(m.scale, 0.125);
  EXPECT_EQ(m.batch, 16);
  EXPECT(m.batchShape == std::vector<int64_t>({2, 8}));
  EXPECT_EQ(m.seqlenQ, kDynamic);
  EXPECT_EQ(m.seqlenK, kDynamic);
  EXPECT_EQ(m.headDim, 64);
  EXPECT_EQ(m.headDimV, 64);
  EXPECT(m.hasLse);
  EXPECT_EQ(m.blockM, 64);
  EXPECT_EQ(m.blockN, 64);
  EXPECT_EQ(m.threads, 64);
  EXPECT_EQ(m.sharedBytes, 0);
  EXPECT(m.params == std::vector<std::string>({"q", "k", "v", "o", "lse"}));
  EXPECT_EQ(m.grid[0], "ceil_div(seqlen_q,block_m)");
  EXPECT_EQ(m.grid[1], "batch");
  EXPECT_EQ(m.grid[2], "1");
}

static void testManifestDefaultsAndForwardCompat() {
  // Optional keys left out, an unknown key, CRLF line ends, no final newline,
  // an absolute ptx path, a static seqlen.
  std::string text =
      "version 1\r\nkernel f_attention_1\r\nptx /abs/f.ptx\r\n"
      "future_key 1 2 3\r\ndtype f16\r\ncausal bottom_right\r\n"
      "scale 1e-1\r\nbatch ?\r\nseqlen_q 128\r\nseqlen_k ?\r\n"
      "head_dim 80\r\nhead_dim_v 96\r\nhas_lse 0\r\nblock_m 16\r\n"
      "threads 128";
  Manifest m;
  EXPECT_EQ(fa::rt::parseManifest(text, "y.manifest", m), FA_RT_SUCCESS);
  EXPECT_EQ(m.ptxPath(), "/abs/f.ptx");
  EXPECT_EQ(m.oDtype, FA_RT_DTYPE_F16);
  EXPECT_EQ(m.causal, FA_RT_CAUSAL_BOTTOM_RIGHT);
  EXPECT_NEAR(m.scale, 0.1, 1e-15);
  EXPECT_EQ(m.batch, kDynamic);
  EXPECT_EQ(m.seqlenQ, 128);
  EXPECT_EQ(m.headDimV, 96);
  EXPECT(!m.hasLse);
  EXPECT(m.params == std::vector<std::string>({"q", "k", "v", "o"}));
  EXPECT_EQ(m.grid[0], "ceil_div(seqlen_q,block_m)");
  EXPECT_EQ(m.sharedBytes, 0);
  EXPECT_EQ(m.blockN, 0);
  EXPECT_EQ(m.rowAlign, 0);
}

static void testManifestRowAlign() {
  // The tensor-core kernels' row alignment.
  Manifest m;
  EXPECT_EQ(fa::rt::parseManifest(std::string(kGoodManifest) +
                                      "row_align 16\n",
                                  "dir/x.manifest", m),
            FA_RT_SUCCESS);
  EXPECT_EQ(m.rowAlign, 16);
  EXPECT_ERROR(std::string(kGoodManifest) + "row_align sixteen\n",
               "invalid value 'sixteen' for 'row_align': expected a "
               "non-negative integer");
}

static void testManifestMalformed() {
  // Each rule, with the file:line the message must name. Line numbers refer
  // to kGoodManifest (line 1 is the comment).
  EXPECT_ERROR(withLine("scale", ""),
               "FA_RT_ERROR_MANIFEST: dir/x.manifest:21: missing required "
               "key 'scale'");
  EXPECT_ERROR(withLine("kernel", ""), "missing required key 'kernel'");
  EXPECT_ERROR(withLine("head_dim", "head_dim abc"),
               "dir/x.manifest:14: invalid value 'abc' for 'head_dim': "
               "expected a positive integer");
  EXPECT_ERROR(withLine("head_dim", "head_dim 0"),
               "invalid value '0' for 'head_dim'");
  EXPECT_ERROR(withLine("head_dim", "head_dim -64"),
               "invalid value '-64' for 'head_dim'");
  EXPECT_ERROR(withLine("head_dim", "head_dim ?"),
               "invalid value '?' for 'head_dim'");
  EXPECT_ERROR(withLine("seqlen_q", "seqlen_q 12x"),
               "dir/x.manifest:12: invalid value '12x' for 'seqlen_q': "
               "expected a non-negative integer or '?'");
  EXPECT_ERROR(withLine("dtype", "dtype fp16"),
               "dir/x.manifest:6: invalid value 'fp16' for 'dtype': expected "
               "f16, bf16 or f32");
  EXPECT_ERROR(withLine("causal", "causal true"),
               "invalid value 'true' for 'causal': expected none, top_left "
               "or bottom_right");
  EXPECT_ERROR(withLine("scale", "scale 0.125x"),
               "invalid value '0.125x' for 'scale': expected a finite number");
  EXPECT_ERROR(withLine("scale", "scale nan"), "invalid value 'nan'");
  EXPECT_ERROR(withLine("scale", "scale 1e999"), "invalid value '1e999'");
  EXPECT_ERROR(withLine("version", "version 2"),
               "dir/x.manifest:2: unsupported manifest version 2");
  EXPECT_ERROR(withLine("has_lse", "has_lse yes"),
               "invalid value 'yes' for 'has_lse': expected 0 or 1");
  EXPECT_ERROR(withLine("block_m", "block_m 64 64"),
               "dir/x.manifest:17: expected 1 value for 'block_m', got 2");
  EXPECT_ERROR(withLine("ptx", "ptx"), "expected 1 value for 'ptx', got 0");
  EXPECT_ERROR(std::string(kGoodManifest) + "head_dim 64\n",
               "dir/x.manifest:23: duplicate key 'head_dim' (first on line "
               "14)");
  EXPECT_ERROR(withLine("params", "params q k v o"),
               "dir/x.manifest:21: expected params 'q k v o lse' (has_lse "
               "1), got 'q k v o'");
  EXPECT_ERROR(withLine("batch_shape", "batch_shape 2 4"),
               "dir/x.manifest:11: batch_shape has product 8, but batch is "
               "16");
  // A product past int64 does not wrap around into a match (2^32 x 2^32
  // once wrapped to 0 and matched batch 0); a 0 dim still makes it 0.
  {
    std::string huge =
        withLine("batch_shape", "batch_shape 4294967296 4294967296");
    EXPECT_ERROR(huge, "dir/x.manifest:11: batch_shape has product over 16, "
                       "but batch is 16");
    auto batch0 = [](std::string text) {
      return text.replace(text.find("\nbatch 16 "), 10, "\nbatch 0 ");
    };
    EXPECT_ERROR(batch0(huge), "dir/x.manifest:11: batch_shape has product "
                               "over 0, but batch is 0");
    EXPECT_EQ(parseError(batch0(withLine(
                  "batch_shape", "batch_shape 4294967296 4294967296 0"))),
              "<parsed>");
    EXPECT_ERROR(withLine("batch_shape", "batch_shape 999999999999999999 "
                                         "999999999999999999 16"),
                 "batch_shape has product over 16");
  }
  EXPECT_ERROR(withLine("grid", "grid ceil_div(seqlen_q,bm) batch 1"),
               "dir/x.manifest:22: invalid value 'ceil_div(seqlen_q,bm)' for "
               "'grid'");
  EXPECT_ERROR(withLine("grid", "grid ceil_div(seqlen_q,block_m) batch"),
               "expected 3 values for 'grid', got 2");
  // Malformed grid expressions: unknown functions, missing parts, text
  // after the expression.
  for (const char *bad :
       {"grid max(seqlen_q,block_m) batch 1", "grid min(seqlen_q) batch 1",
        "grid min(seqlen_q,block_m batch 1", "grid mul(,2) batch 1",
        "grid ceil_div(seqlen_q,block_m)x batch 1",
        "grid min(resident,1) batch 1"})
    EXPECT_ERROR(withLine("grid", bad), "for 'grid'");
  EXPECT_ERROR(withLine("threads", "threads 2048"),
               "expected at most 1024 threads, got 2048");
  EXPECT_ERROR("", "dir/x.manifest:1: missing required key 'version'");
  // Good variants stay good: a '?' batch dim, a comment-only line, an op
  // without batch dims (empty batch_shape, batch 1; fa-opt writes it so).
  EXPECT_EQ(parseError(withLine("batch_shape", "batch_shape 2 ?")), "<parsed>");
  {
    std::string noDims = withLine("batch_shape", "batch_shape");
    noDims.replace(noDims.find("\nbatch 16 "), 10, "\nbatch 1  ");
    EXPECT_EQ(parseError(noDims), "<parsed>");
    EXPECT_ERROR(withLine("batch_shape", "batch_shape"),
                 "batch_shape has product 1, but batch is 16");
  }
  EXPECT_EQ(parseError(std::string("   # only a comment\n") + kGoodManifest),
            "<parsed>");
}

static void testManifestFile() {
  Manifest m;
  EXPECT_EQ(fa::rt::readManifestFile("/nonexistent/k.manifest", m),
            FA_RT_ERROR_IO);
  EXPECT(contains(faRtGetLastError(),
                  "cannot open manifest '/nonexistent/k.manifest'"));
}

static void testLaunchShape() {
  Manifest m;
  fa::rt::parseManifest(withLine("seqlen_k", "seqlen_k 300"), "x.manifest", m);
  EXPECT_EQ(fa::rt::checkLaunchShape(m, {16, 1, 300}), FA_RT_SUCCESS);
  EXPECT_EQ(fa::rt::checkLaunchShape(m, {16, 77, 300}), FA_RT_SUCCESS);
  EXPECT_EQ(fa::rt::checkLaunchShape(m, {16, 77, 301}), FA_RT_ERROR_SHAPE);
  EXPECT(contains(faRtGetLastError(),
                  "kernel 'main_attention_0' (x.manifest) was compiled for "
                  "seqlen_k 300, got 301"));
  EXPECT_EQ(fa::rt::checkLaunchShape(m, {8, 77, 300}), FA_RT_ERROR_SHAPE);
  EXPECT(contains(faRtGetLastError(), "compiled for batch 16, got 8"));
  EXPECT_EQ(fa::rt::checkLaunchShape(m, {16, -1, 300}), FA_RT_ERROR_SHAPE);
  EXPECT(contains(faRtGetLastError(), "expected seqlen_q >= 0, got -1"));

  // index_bits 32: every tensor (batch 16 x T x 64 here) below 2^31
  // elements; a missing key is 64 (no limit but the dims').
  EXPECT_EQ(m.indexBits, 64);
  EXPECT_EQ(fa::rt::checkLaunchShape(m, {16, 1 << 21, 300}), FA_RT_SUCCESS);
  Manifest narrow;
  EXPECT_EQ(fa::rt::parseManifest(
                withLine("shared_bytes", "shared_bytes 0\nindex_bits 32"),
                "n.manifest", narrow),
            FA_RT_SUCCESS);
  EXPECT_EQ(narrow.indexBits, 32);
  EXPECT_EQ(fa::rt::checkLaunchShape(narrow, {16, (1 << 21) - 1, 7}),
            FA_RT_SUCCESS);
  EXPECT_EQ(fa::rt::checkLaunchShape(narrow, {16, 1 << 21, 7}),
            FA_RT_ERROR_SHAPE);
  EXPECT(contains(faRtGetLastError(),
                  "kernel 'main_attention_0' (n.manifest) was compiled with "
                  "32-bit indices (index_bits 32) and takes tensors of fewer "
                  "than 2^31 elements, got q of 16 x 2097152 x 64"));
  EXPECT_EQ(fa::rt::checkLaunchShape(narrow, {16, 7, 1 << 21}),
            FA_RT_ERROR_SHAPE);
  EXPECT(contains(faRtGetLastError(), "got k of 16 x 2097152 x 64"));
  // Products far past 2^64 are rejected, not wrapped around.
  EXPECT_EQ(fa::rt::checkLaunchShape(narrow, {16, int64_t(1) << 62, 7}),
            FA_RT_ERROR_SHAPE);
  // The launch chunks: a static batch whole; a dynamic one in chunks of
  // 65535 (grid y), or of fewer with 32-bit indices.
  EXPECT_EQ(fa::rt::batchChunk(narrow, {16, 1 << 21, 7}), 16);
  Manifest dynamic;
  EXPECT_EQ(fa::rt::parseManifest(withLine("batch", "batch ?"), "d.manifest",
                                  dynamic),
            FA_RT_SUCCESS);
  EXPECT_EQ(fa::rt::batchChunk(dynamic, {100000, 1 << 21, 7}), 65535);
  dynamic.indexBits = 32;
  // 2^31 - 1 elements at most: 16383 batches of 2048 x 64.
  EXPECT_EQ(fa::rt::batchChunk(dynamic, {100000, 2048, 7}), 16383);
  EXPECT_EQ(fa::rt::batchChunk(dynamic, {100000, 7, 2048}), 16383);
  EXPECT_EQ(fa::rt::batchChunk(dynamic, {100000, 8, 8}), 65535);
  // One batch entry over the limit: chunks of 1, which checkLaunchShape
  // rejects.
  EXPECT_EQ(fa::rt::batchChunk(dynamic, {3, int64_t(1) << 40, 7}), 1);
  EXPECT_EQ(fa::rt::checkLaunchShape(dynamic, {1, int64_t(1) << 25, 7}),
            FA_RT_ERROR_SHAPE);
  EXPECT_EQ(fa::rt::checkLaunchShape(dynamic, {1, (int64_t(1) << 25) - 1, 7}),
            FA_RT_SUCCESS);
  Manifest bad;
  EXPECT_EQ(fa::rt::parseManifest(
                withLine("shared_bytes", "shared_bytes 0\nindex_bits 16"),
                "b.manifest", bad),
            FA_RT_ERROR_MANIFEST);
  EXPECT(contains(faRtGetLastError(), "32 or 64"));
}

static void testGrid() {
  Manifest m;
  fa::rt::parseManifest(kGoodManifest, "x.manifest", m);
  std::array<uint32_t, 3> grid{};
  EXPECT_EQ(fa::rt::computeGrid(m, {16, 300, 5}, grid), FA_RT_SUCCESS);
  EXPECT(grid == (std::array<uint32_t, 3>{5, 16, 1}));
  EXPECT_EQ(fa::rt::computeGrid(m, {16, 64, 5}, grid), FA_RT_SUCCESS);
  EXPECT_EQ(grid[0], 1u);
  EXPECT_EQ(fa::rt::computeGrid(m, {16, 0, 5}, grid), FA_RT_SUCCESS);
  EXPECT_EQ(grid[0], 0u);
  EXPECT_EQ(fa::rt::computeGrid(m, {70000, 1, 5}, grid), FA_RT_ERROR_SHAPE);
  EXPECT(contains(faRtGetLastError(), "grid dim y = batch = 70000 exceeds"));

  // Another grid the format allows: batch on x, query blocks on y.
  fa::rt::parseManifest(
      withLine("grid", "grid batch ceil_div(seqlen_q,block_n) 2"), "x.manifest",
      m);
  EXPECT_EQ(fa::rt::computeGrid(m, {3, 129, 5}, grid), FA_RT_SUCCESS);
  EXPECT(grid == (std::array<uint32_t, 3>{3, 3, 2}));

  // The persistent forward's grid: min(query tiles x batch, resident
  // blocks), resident_blocks given by the launcher.
  const char *persistent =
      "grid min(mul(ceil_div(seqlen_q,block_m),batch),resident_blocks) 1 1";
  EXPECT_EQ(
      fa::rt::parseManifest(withLine("grid", persistent), "x.manifest", m),
      FA_RT_SUCCESS);
  EXPECT(fa::rt::gridUsesResidentBlocks(m));
  // 16 x ceil(300 / 64) = 80 tiles, fewer than 132 resident blocks.
  EXPECT_EQ(fa::rt::computeGrid(m, {16, 300, 5}, grid, 132), FA_RT_SUCCESS);
  EXPECT(grid == (std::array<uint32_t, 3>{80, 1, 1}));
  EXPECT_EQ(fa::rt::computeGrid(m, {16, 4096, 5}, grid, 132), FA_RT_SUCCESS);
  EXPECT(grid == (std::array<uint32_t, 3>{132, 1, 1}));
  EXPECT_EQ(fa::rt::computeGrid(m, {16, 0, 5}, grid, 132), FA_RT_SUCCESS);
  EXPECT_EQ(grid[0], 0u);
  // Without the launcher's count the expression has no value.
  EXPECT_EQ(fa::rt::computeGrid(m, {16, 300, 5}, grid), FA_RT_ERROR_MANIFEST);
  EXPECT(contains(faRtGetLastError(), "'resident_blocks' has no value here"));
  fa::rt::parseManifest(kGoodManifest, "x.manifest", m);
  EXPECT(!fa::rt::gridUsesResidentBlocks(m));
  // Nested functions; a zero divisor found when evaluated.
  fa::rt::parseManifest(
      withLine("grid", "grid ceil_div(mul(seqlen_q,2),min(block_m,48)) "
                       "min(batch,4) mul(2,3)"),
      "x.manifest", m);
  EXPECT_EQ(fa::rt::computeGrid(m, {16, 100, 5}, grid), FA_RT_SUCCESS);
  EXPECT(grid == (std::array<uint32_t, 3>{5, 4, 6}));
  fa::rt::parseManifest(
      withLine("grid", "grid ceil_div(seqlen_q,seqlen_k) 1 1"), "x.manifest",
      m);
  EXPECT_EQ(fa::rt::computeGrid(m, {1, 100, 0}, grid), FA_RT_ERROR_MANIFEST);
  EXPECT(contains(faRtGetLastError(), "divides by 0"));
}

static void testKernelParams() {
  Manifest m;
  fa::rt::parseManifest(withLine("head_dim_v", "head_dim_v 32"), "x.manifest",
                        m);
  fa::rt::TensorPointers t{0x1000, 0x2000, 0x3000, 0x4000, 0x5000};
  std::vector<uint64_t> p = fa::rt::buildKernelParams(m, {16, 100, 7}, t);
  // q, k, v, o: 2 + 1 + 2 * 3 each; lse: 2 + 1 + 2 * 2.
  std::vector<uint64_t> expected = {
      0x1000, 0x1000, 0, 16, 100, 64,  6400, 64, 1, // q [B, Tq, D]
      0x2000, 0x2000, 0, 16, 7,   64,  448,  64, 1, // k [B, Tk, D]
      0x3000, 0x3000, 0, 16, 7,   32,  224,  32, 1, // v [B, Tk, Dv]
      0x4000, 0x4000, 0, 16, 100, 32,  3200, 32, 1, // o [B, Tq, Dv]
      0x5000, 0x5000, 0, 16, 100, 100, 1,           // lse [B, Tq]
  };
  EXPECT_EQ(p.size(), 43u);
  EXPECT(p == expected);

  fa::rt::parseManifest(
      withLine("params", "")
          .replace(withLine("params", "").find("has_lse 1"), 9, "has_lse 0"),
      "x.manifest", m);
  EXPECT(!m.hasLse);
  p = fa::rt::buildKernelParams(m, {16, 100, 7}, t);
  EXPECT_EQ(p.size(), 36u);
  EXPECT(std::vector<uint64_t>(p.begin(), p.begin() + 9) ==
         std::vector<uint64_t>(expected.begin(), expected.begin() + 9));

  std::vector<uint64_t> general;
  fa::rt::appendMemRefParams(general, 0xabc, 5, {2, 3}, {1, 2});
  EXPECT(general == (std::vector<uint64_t>{0xabc, 0xabc, 5, 2, 3, 1, 2}));
  EXPECT(fa::rt::rowMajorStrides({4, 5, 6}) ==
         (std::vector<int64_t>{30, 6, 1}));
}

/// `text` with its `version 1` line made `version 3`: the version of a
/// forward manifest with tensor_map lines.
static std::string version3(std::string text) {
  size_t pos = text.find("\nversion 1\n");
  if (pos != std::string::npos)
    text.replace(pos, 11, "\nversion 3\n");
  return text;
}

/// kGoodManifest (bf16, head_dim 64, head_dim_v 64) as version 3 with
/// `extra` lines appended (from line 23 on).
static std::string withTensorMaps(const std::string &extra) {
  return version3(kGoodManifest) + extra;
}

static void testManifestTensorMaps() {
  Manifest m;
  // In parameter order; a line may come before the keys it is checked
  // against (dtype, head_dim).
  EXPECT_EQ(fa::rt::parseManifest(withTensorMaps("tensor_map q 64 128 128\n"
                                                 "tensor_map k 8 64 none  # x\n"
                                                 "tensor_map v 16 64 32\n"
                                                 "tensor_map o 32 1 64\n"),
                                  "dir/x.manifest", m),
            FA_RT_SUCCESS);
  EXPECT_EQ(m.tensorMaps.size(), 4u);
  if (m.tensorMaps.size() == 4) {
    EXPECT_EQ(m.tensorMaps[0].operand, "q");
    EXPECT_EQ(m.tensorMaps[0].boxCols, 64);
    EXPECT_EQ(m.tensorMaps[0].boxRows, 128);
    EXPECT_EQ(m.tensorMaps[0].swizzleBytes, 128);
    EXPECT_EQ(m.tensorMaps[0].line, 23);
    EXPECT_EQ(m.tensorMaps[1].operand, "k");
    EXPECT_EQ(m.tensorMaps[1].swizzleBytes, 0);
    EXPECT_EQ(m.tensorMaps[2].swizzleBytes, 32);
    EXPECT_EQ(m.tensorMaps[3].operand, "o");
    EXPECT_EQ(m.tensorMaps[3].boxRows, 1);
  }
  EXPECT(m.params == std::vector<std::string>({"q", "k", "v", "o", "lse"}));
  EXPECT_EQ(fa::rt::parseManifest(kGoodManifest, "x.manifest", m),
            FA_RT_SUCCESS);
  EXPECT(m.tensorMaps.empty());
  EXPECT_EQ(parseError("tensor_map k 256 256 none\n" +
                       version3(withLine("head_dim", "head_dim 256"))),
            "<parsed>");
  // f32 rows: 4 columns are 16 bytes; o takes o_dtype and head_dim_v.
  EXPECT_EQ(parseError(version3(withLine("dtype", "dtype f32")) +
                       "tensor_map q 32 64 128\ntensor_map k 4 64 none\n"),
            "<parsed>");

  // Each rule, naming the file and the tensor_map's line.
  EXPECT_ERROR(withTensorMaps("tensor_map q 8 128\n"),
               "dir/x.manifest:23: expected 4 values for 'tensor_map' "
               "(OPERAND BOX_COLS BOX_ROWS SWIZZLE), got 3");
  EXPECT_ERROR(withTensorMaps("tensor_map lse 8 128 none\n"),
               "dir/x.manifest:23: invalid value 'lse' for 'tensor_map' "
               "OPERAND: expected q, k, v or o");
  EXPECT_ERROR(withTensorMaps("tensor_map k 8 128 none\n"
                              "tensor_map q 8 128 none\n"
                              "tensor_map k 8 64 none\n"),
               "dir/x.manifest:25: duplicate tensor_map for 'k' (first on "
               "line 23)");
  EXPECT_ERROR(withTensorMaps("tensor_map q 0 128 none\n"),
               "dir/x.manifest:23: invalid value '0' for 'tensor_map' "
               "BOX_COLS: expected an integer in [1, 256]");
  EXPECT_ERROR(withTensorMaps("tensor_map q 264 128 none\n"),
               "invalid value '264' for 'tensor_map' BOX_COLS");
  EXPECT_ERROR(withTensorMaps("tensor_map q -8 128 none\n"),
               "invalid value '-8' for 'tensor_map' BOX_COLS");
  EXPECT_ERROR(withTensorMaps("tensor_map q +8 128 none\n"),
               "invalid value '+8' for 'tensor_map' BOX_COLS");
  EXPECT_ERROR(withTensorMaps("tensor_map q 8.0 128 none\n"),
               "invalid value '8.0' for 'tensor_map' BOX_COLS");
  EXPECT_ERROR(withTensorMaps("tensor_map q 8 0 none\n"),
               "invalid value '0' for 'tensor_map' BOX_ROWS: expected an "
               "integer in [1, 256]");
  EXPECT_ERROR(withTensorMaps("tensor_map q 8 257 none\n"),
               "invalid value '257' for 'tensor_map' BOX_ROWS");
  EXPECT_ERROR(withTensorMaps("tensor_map q 8 1x none\n"),
               "invalid value '1x' for 'tensor_map' BOX_ROWS");
  EXPECT_ERROR(withTensorMaps("tensor_map q 8 64 16\n"),
               "dir/x.manifest:23: invalid value '16' for 'tensor_map' "
               "SWIZZLE: expected none, 32, 64 or 128");
  EXPECT_ERROR(withTensorMaps("tensor_map q 8 64 128B\n"),
               "invalid value '128B' for 'tensor_map' SWIZZLE");
  EXPECT_ERROR(withTensorMaps("tensor_map q 8 64 NONE\n"),
               "invalid value 'NONE' for 'tensor_map' SWIZZLE");
  EXPECT_ERROR(withTensorMaps("tensor_map q 8 64 none\n"
                              "tensor_map k 12 64 none\n"),
               "dir/x.manifest:24: tensor_map 'k': BOX_COLS 12 x 2 bytes "
               "(bf16) = 24 bytes is not a multiple of 16 bytes");
  EXPECT_ERROR(version3(withLine("dtype", "dtype f32")) +
                   "tensor_map q 2 64 none\n",
               "tensor_map 'q': BOX_COLS 2 x 4 bytes (f32) = 8 bytes is not "
               "a multiple of 16 bytes");
  EXPECT_ERROR(withTensorMaps("tensor_map q 72 64 none\n"),
               "dir/x.manifest:23: tensor_map 'q': BOX_COLS 72 exceeds "
               "head_dim 64");
  EXPECT_ERROR(version3(withLine("head_dim_v", "head_dim_v 32")) +
                   "tensor_map v 64 64 none\n",
               "tensor_map 'v': BOX_COLS 64 exceeds head_dim_v 32");
  EXPECT_ERROR(version3(withLine("head_dim_v", "head_dim_v 32")) +
                   "tensor_map o 64 64 none\n",
               "tensor_map 'o': BOX_COLS 64 exceeds head_dim_v 32");
  EXPECT_ERROR(version3(withLine("head_dim", "head_dim 32")) +
                   "tensor_map k 64 64 none\n",
               "tensor_map 'k': BOX_COLS 64 exceeds head_dim 32");
  EXPECT_ERROR(withTensorMaps("tensor_map k 64 64 64\n"),
               "dir/x.manifest:23: tensor_map 'k': BOX_COLS 64 x 2 bytes "
               "(bf16) = 128 bytes exceeds the 64-byte swizzle span");
  EXPECT_ERROR(withTensorMaps("tensor_map v 24 64 32\n"),
               "tensor_map 'v': BOX_COLS 24 x 2 bytes (bf16) = 48 bytes "
               "exceeds the 32-byte swizzle span");
  EXPECT_ERROR(version3(withLine("o_dtype", "o_dtype f32")) +
                   "tensor_map o 64 64 128\n",
               "tensor_map 'o': BOX_COLS 64 x 4 bytes (f32) = 256 bytes "
               "exceeds the 128-byte swizzle span");
  EXPECT_ERROR(withTensorMaps("tensor_map q 128 64 none\n"),
               "BOX_COLS 128 exceeds head_dim 64");
  // Errors met while reading the lines come before the checks against
  // other keys.
  EXPECT_ERROR(withTensorMaps("tensor_map q 72 64 none\nhead_dim 32\n"),
               "duplicate key 'head_dim'");
}

/// Forward manifest versions: 1 without tensor_map lines, 3 with them (so a
/// reader that predates tensor maps rejects a TMA kernel by its version
/// instead of launching it without its maps); the maps in params order.
static void testManifestVersions() {
  Manifest m;
  EXPECT_EQ(fa::rt::parseManifest(withTensorMaps("tensor_map q 64 128 128\n"
                                                 "tensor_map k 64 64 128\n"
                                                 "tensor_map v 64 64 128\n"),
                                  "dir/x.manifest", m),
            FA_RT_SUCCESS);
  EXPECT_EQ(m.version, 3);
  EXPECT_EQ(m.tensorMaps.size(), 3u);
  fa::rt::ManifestKind kind = fa::rt::ManifestKind::Backward;
  EXPECT_EQ(fa::rt::manifestKind(withTensorMaps("tensor_map q 64 128 128\n"),
                                 "x.manifest", kind),
            FA_RT_SUCCESS);
  EXPECT(kind == fa::rt::ManifestKind::Forward);
  // Any subset in order: k alone, q and v, v and o.
  EXPECT_EQ(parseError(withTensorMaps("tensor_map k 64 64 none\n")),
            "<parsed>");
  EXPECT_EQ(parseError(withTensorMaps("tensor_map q 64 64 none\n"
                                      "tensor_map v 64 64 none\n")),
            "<parsed>");
  EXPECT_EQ(parseError(withTensorMaps("tensor_map v 64 64 none\n"
                                      "tensor_map o 64 64 none\n")),
            "<parsed>");

  // A tensor_map in a version 1 manifest, at the first map's line.
  EXPECT_ERROR(std::string(kGoodManifest) + "tensor_map q 64 128 128\n"
                                            "tensor_map k 64 64 128\n",
               "FA_RT_ERROR_MANIFEST: dir/x.manifest:23: tensor_map needs "
               "manifest version 3 (this manifest is version 1)");
  // Version 3 without one, at the version line.
  EXPECT_ERROR(version3(kGoodManifest),
               "FA_RT_ERROR_MANIFEST: dir/x.manifest:2: manifest version 3 "
               "needs at least one 'tensor_map' line (version 1 is the format "
               "without tensor maps)");
  // Out of params order, naming both operands, at the later line.
  EXPECT_ERROR(withTensorMaps("tensor_map k 64 64 none\n"
                              "tensor_map q 64 128 none\n"),
               "dir/x.manifest:24: tensor_map for 'q' after the one for 'k' "
               "(line 23): tensor_map lines must be in the order of params "
               "(q, k, v, o)");
  EXPECT_ERROR(withTensorMaps("tensor_map q 64 128 none\n"
                              "tensor_map v 64 64 none\n"
                              "tensor_map k 64 64 none\n"),
               "dir/x.manifest:25: tensor_map for 'k' after the one for 'v' "
               "(line 24)");
  EXPECT_ERROR(withTensorMaps("tensor_map o 64 64 none\n"
                              "tensor_map v 64 64 none\n"),
               "tensor_map for 'v' after the one for 'o'");
  // A duplicate is reported as such, not as an order error.
  EXPECT_ERROR(withTensorMaps("tensor_map q 64 64 none\n"
                              "tensor_map q 64 64 none\n"),
               "dir/x.manifest:24: duplicate tensor_map for 'q'");
  // Other versions stay rejected, listing the ones this runtime reads.
  for (const char *version : {"0", "2", "4"})
    EXPECT_ERROR(withLine("version", std::string("version ") + version),
                 "dir/x.manifest:2: unsupported manifest version ");
  EXPECT_ERROR(withLine("version", "version 4"),
               "dir/x.manifest:2: unsupported manifest version 4 (this "
               "runtime reads version 1 and 3 forward and version 2 and 4 "
               "attention_backward manifests)");
}

/// Compares one map's encode arguments.
static void expectMapArgs(const fa::rt::TensorMapEncodeArgs &a,
                          const std::string &operand, faRtDtype dtype,
                          uint64_t address, std::array<uint64_t, 3> dims,
                          std::array<uint64_t, 2> strides,
                          std::array<uint32_t, 3> box, int64_t swizzle,
                          int line) {
  auto check = [&](bool ok, const char *what) {
    reportCheck(ok, what, __FILE__, line);
  };
  check(a.operand == operand, "operand");
  check(a.dtype == dtype, "dtype");
  check(a.address == address, "address");
  check(a.globalDim == dims, "globalDim");
  check(a.globalStrides == strides, "globalStrides");
  check(a.boxDim == box, "boxDim");
  check(a.elementStrides == (std::array<uint32_t, 3>{1, 1, 1}),
        "elementStrides");
  check(a.swizzleBytes == swizzle, "swizzleBytes");
}

static void testTensorMapArgs() {
  // q/k bf16 [B, T, 64], v [B, Tk, 32] bf16, o [B, Tq, 32] f32.
  std::string text = version3(withLine("head_dim_v", "head_dim_v 32"));
  text.replace(text.find("o_dtype bf16"), 12, "o_dtype f32");
  Manifest m;
  EXPECT_EQ(fa::rt::parseManifest(text + "tensor_map q 64 128 128\n"
                                         "tensor_map k 64 64 none\n"
                                         "tensor_map v 32 64 64\n"
                                         "tensor_map o 8 32 none\n",
                                  "x.manifest", m),
            FA_RT_SUCCESS);
  EXPECT_EQ(m.oDtype, FA_RT_DTYPE_F32);
  fa::rt::TensorPointers t{0x1000, 0x2000, 0x3000, 0x4000, 0x5000};
  std::vector<fa::rt::TensorMapEncodeArgs> args;
  EXPECT_EQ(fa::rt::buildTensorMapArgs(m, {16, 100, 7}, t, args),
            FA_RT_SUCCESS);
  EXPECT_EQ(args.size(), 4u);
  if (args.size() == 4) {
    // globalDim {D, T, batch}, strides {D * esize, T * D * esize}.
    expectMapArgs(args[0], "q", FA_RT_DTYPE_BF16, 0x1000, {64, 100, 16},
                  {128, 12800}, {64, 128, 1}, 128, __LINE__);
    expectMapArgs(args[1], "k", FA_RT_DTYPE_BF16, 0x2000, {64, 7, 16},
                  {128, 896}, {64, 64, 1}, 0, __LINE__);
    expectMapArgs(args[2], "v", FA_RT_DTYPE_BF16, 0x3000, {32, 7, 16},
                  {64, 448}, {32, 64, 1}, 64, __LINE__);
    expectMapArgs(args[3], "o", FA_RT_DTYPE_F32, 0x4000, {32, 100, 16},
                  {128, 12800}, {8, 32, 1}, 0, __LINE__);
  }

  // seqlen_k = 0: k and v have no element (their pointers may be null);
  // every dim clamped to >= 1, q's address.
  EXPECT_EQ(fa::rt::buildTensorMapArgs(m, {16, 100, 0}, {0x1000, 0, 0, 0x4000},
                                       args),
            FA_RT_SUCCESS);
  if (args.size() == 4) {
    expectMapArgs(args[1], "k", FA_RT_DTYPE_BF16, 0x1000, {64, 1, 16},
                  {128, 128}, {64, 64, 1}, 0, __LINE__);
    expectMapArgs(args[2], "v", FA_RT_DTYPE_BF16, 0x1000, {32, 1, 16},
                  {64, 64}, {32, 64, 1}, 64, __LINE__);
    expectMapArgs(args[0], "q", FA_RT_DTYPE_BF16, 0x1000, {64, 100, 16},
                  {128, 12800}, {64, 128, 1}, 128, __LINE__);
  }
  // batch = 0: nothing is read; all clamped.
  EXPECT_EQ(fa::rt::buildTensorMapArgs(m, {0, 0, 0}, {}, args), FA_RT_SUCCESS);
  if (args.size() == 4)
    expectMapArgs(args[3], "o", FA_RT_DTYPE_F32, 0, {32, 1, 1}, {128, 128},
                  {8, 32, 1}, 0, __LINE__);

  // The TMA limits: a dim over 2^32 - 1, a stride of 2^40 bytes.
  const int64_t big = int64_t(1) << 32;
  EXPECT_EQ(fa::rt::buildTensorMapArgs(m, {1, big, 7}, t, args),
            FA_RT_ERROR_SHAPE);
  EXPECT(contains(faRtGetLastError(),
                  "tensor map for 'q' (kernel 'main_attention_0'): seqlen_q "
                  "= 4294967296 exceeds the TMA limit of 2^32 - 1"));
  EXPECT_EQ(fa::rt::buildTensorMapArgs(m, {big, 1, 1}, t, args),
            FA_RT_ERROR_SHAPE);
  EXPECT(contains(faRtGetLastError(), "batch = 4294967296 exceeds"));
  EXPECT_EQ(fa::rt::buildTensorMapArgs(m, {1, big - 1, 7}, t, args),
            FA_RT_SUCCESS); // 2^32 - 1 rows of 128 bytes: under 2^39
  // head_dim 256 bf16: 512-byte rows, 2^31 of them are 2^40 bytes.
  Manifest wide;
  EXPECT_EQ(fa::rt::parseManifest(version3(withLine("head_dim",
                                                   "head_dim 256")) +
                                      "tensor_map q 64 64 none\n",
                                  "x.manifest", wide),
            FA_RT_SUCCESS);
  EXPECT_EQ(fa::rt::buildTensorMapArgs(wide, {1, big / 2, 1}, t, args),
            FA_RT_ERROR_SHAPE);
  EXPECT(contains(faRtGetLastError(),
                  "tensor map for 'q' (kernel 'main_attention_0'): a stride "
                  "of 2147483648 x 512 bytes reaches the TMA limit of 2^40 "
                  "bytes"));
  EXPECT_EQ(fa::rt::buildTensorMapArgs(wide, {1, big / 2 - 1, 1}, t, args),
            FA_RT_SUCCESS);
  if (args.size() == 1)
    EXPECT_EQ(args[0].globalStrides[1], (uint64_t(1) << 40) - 512);
  // TMA's own rules, checked before the driver: 16-byte addresses and row
  // strides.
  EXPECT_EQ(fa::rt::buildTensorMapArgs(m, {16, 100, 7},
                                       {0x1000, 0x2008, 0x3000, 0x4000}, args),
            FA_RT_ERROR_INVALID_ARGUMENT);
  EXPECT(contains(faRtGetLastError(), "tensor map for 'k' (kernel "
                                      "'main_attention_0'): the address of k "
                                      "must be 16-byte aligned"));
  Manifest narrow;
  EXPECT_EQ(fa::rt::parseManifest(version3(withLine("head_dim",
                                                   "head_dim 20")) +
                                      "tensor_map q 8 64 none\n",
                                  "x.manifest", narrow),
            FA_RT_SUCCESS);
  EXPECT_EQ(fa::rt::buildTensorMapArgs(narrow, {1, 10, 10}, t, args),
            FA_RT_ERROR_SHAPE);
  EXPECT(contains(faRtGetLastError(),
                  "the row stride 40 bytes (head_dim 20 x 2) is not a "
                  "multiple of 16 bytes"));
  // No tensor_map line: no map.
  EXPECT_EQ(fa::rt::parseManifest(kGoodManifest, "x.manifest", m),
            FA_RT_SUCCESS);
  EXPECT_EQ(fa::rt::buildTensorMapArgs(m, {16, 100, 7}, t, args),
            FA_RT_SUCCESS);
  EXPECT(args.empty());

  // The CUDA enums the launch passes.
  EXPECT_EQ(fa::rt::tensorMapDataType(FA_RT_DTYPE_BF16),
            CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  EXPECT_EQ(fa::rt::tensorMapDataType(FA_RT_DTYPE_F16),
            CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  EXPECT_EQ(fa::rt::tensorMapDataType(FA_RT_DTYPE_F32),
            CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
  EXPECT_EQ(fa::rt::tensorMapSwizzle(0), CU_TENSOR_MAP_SWIZZLE_NONE);
  EXPECT_EQ(fa::rt::tensorMapSwizzle(32), CU_TENSOR_MAP_SWIZZLE_32B);
  EXPECT_EQ(fa::rt::tensorMapSwizzle(64), CU_TENSOR_MAP_SWIZZLE_64B);
  EXPECT_EQ(fa::rt::tensorMapSwizzle(128), CU_TENSOR_MAP_SWIZZLE_128B);
  EXPECT_EQ(sizeof(CUtensorMap), 128u);
  EXPECT_EQ(alignof(CUtensorMap) % 64, 0u);
}

static void testHalfConversion() {
  using fa::rt::floatToHalf;
  using fa::rt::halfToFloat;
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65519.99f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00); // tie goes to even: infinity
  EXPECT_EQ(floatToHalf(1e10f), 0x7c00);
  EXPECT_EQ(floatToHalf(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -14)), 0x0400); // smallest normal
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001); // smallest subnormal
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000); // tie to even: 0
  EXPECT_EQ(floatToHalf(std::ldexp(1.5f, -24)), 0x0002); // tie to even: 2
  EXPECT_EQ(floatToHalf(std::ldexp(2.5f, -24)), 0x0002); // tie to even: 2
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -26)), 0x0000);
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);     // tie
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02); // tie
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)),
            0x3c01);
  EXPECT(std::isnan(halfToFloat(floatToHalf(std::nanf("")))));
  EXPECT(std::isnan(halfToFloat(0x7c01)));
  EXPECT_EQ(halfToFloat(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(halfToFloat(0x3555), 0.333251953125f);

  // Every half: exact round trip, and the rounding boundaries to its upper
  // neighbour: the midpoint goes to the even one, one float ulp either side
  // to the nearer one.
  int failures = 0;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint16_t bits = static_cast<uint16_t>(h);
    float value = halfToFloat(bits);
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) { // NaN
      failures +=
          std::isnan(value) && (floatToHalf(value) & 0x7c00) == 0x7c00 ? 0 : 1;
      continue;
    }
    failures += floatToHalf(value) == bits ? 0 : 1;
    if ((h & 0x7fff) >= 0x7bff)
      continue; // No finite upper neighbour (max finite handled above).
    uint16_t upBits = static_cast<uint16_t>(h + 1);
    float up = halfToFloat(upBits);
    float mid = static_cast<float>((static_cast<double>(value) + up) / 2);
    uint16_t even = (h & 1) ? upBits : bits;
    failures += floatToHalf(mid) == even ? 0 : 1;
    float below = std::nextafter(mid, value), above = std::nextafter(mid, up);
    failures += floatToHalf(below) == bits ? 0 : 1;
    failures += floatToHalf(above) == upBits ? 0 : 1;
  }
  EXPECT_EQ(failures, 0);

#ifdef __FLT16_MAX__
  // The compiler's own float -> _Float16 conversion (IEEE round to nearest
  // even) on a spread of float bit patterns.
  int mismatches = 0;
  for (uint64_t bits = 0; bits < 0x100000000ull; bits += 1031) {
    float value = bitsFloat(static_cast<uint32_t>(bits));
    if (std::isnan(value))
      continue;
    _Float16 native = static_cast<_Float16>(value);
    uint16_t nativeBits;
    std::memcpy(&nativeBits, &native, sizeof(nativeBits));
    mismatches += floatToHalf(value) == nativeBits ? 0 : 1;
  }
  EXPECT_EQ(mismatches, 0);
#endif
}

static void testBFloat16Conversion() {
  using fa::rt::bfloat16ToFloat;
  using fa::rt::floatToBFloat16;
  EXPECT_EQ(floatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBFloat16(-0.0f), 0x8000);
  EXPECT_EQ(floatToBFloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80); // tie
  EXPECT_EQ(floatToBFloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(floatToBFloat16(bitsFloat(0x7f7f7fff)), 0x7f7f);
  EXPECT_EQ(floatToBFloat16(bitsFloat(0x7f7f8000)), 0x7f80); // tie: inf
  EXPECT_EQ(floatToBFloat16(bitsFloat(0x00010000)), 0x0001); // subnormal
  EXPECT_EQ(floatToBFloat16(bitsFloat(0x00008000)), 0x0000); // tie to even
  EXPECT(std::isnan(bfloat16ToFloat(floatToBFloat16(bitsFloat(0x7f800001)))));
  EXPECT(std::isnan(bfloat16ToFloat(floatToBFloat16(bitsFloat(0xffc00000)))));
  EXPECT_EQ(bfloat16ToFloat(0x3fc0), 1.5f);

  int failures = 0;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint16_t bits = static_cast<uint16_t>(h);
    float value = bfloat16ToFloat(bits);
    if (std::isnan(value)) {
      failures += std::isnan(bfloat16ToFloat(floatToBFloat16(value))) ? 0 : 1;
      continue;
    }
    failures += floatToBFloat16(value) == bits ? 0 : 1;
    if ((h & 0x7fff) >= 0x7f7f)
      continue;
    uint16_t upBits = static_cast<uint16_t>(h + 1);
    uint32_t midBits = (static_cast<uint32_t>(h) << 16) | 0x8000u;
    uint16_t even = (h & 1) ? upBits : bits;
    failures += floatToBFloat16(bitsFloat(midBits)) == even ? 0 : 1;
    failures += floatToBFloat16(bitsFloat(midBits - 1)) == bits ? 0 : 1;
    failures += floatToBFloat16(bitsFloat(midBits + 1)) == upBits ? 0 : 1;
  }
  EXPECT_EQ(failures, 0);

  float in[3] = {1.0f, 0.1f, -3.0f};
  uint16_t encoded[3];
  float decoded[3];
  fa::rt::encodeFloats(in, 3, FA_RT_DTYPE_BF16, encoded);
  fa::rt::decodeFloats(encoded, 3, FA_RT_DTYPE_BF16, decoded);
  EXPECT_EQ(decoded[1], fa::rt::roundToDtype(0.1f, FA_RT_DTYPE_BF16));
  EXPECT_EQ(decoded[1], 0.10009765625f);
}

static void testReferenceHandComputed() {
  // One query, two keys: scores scale * q.k = 0.5 * 2 * [0, 1] = [0, 1], so
  // p = [1, e] / (1 + e), o = (v0 + e v1) / (1 + e), lse = log(1 + e).
  fa::rt::AttentionShape s{1, 1, 2, 1, 2, 0.5, FA_RT_CAUSAL_NONE};
  float q[] = {2}, k[] = {0, 1}, v[] = {1, -1, 3, 5};
  double o[2], lse;
  fa::rt::referenceAttention(s, q, k, v, o, &lse, 1);
  const double e = std::exp(1.0);
  EXPECT_NEAR(o[0], (1 + 3 * e) / (1 + e), 1e-15);
  EXPECT_NEAR(o[1], (-1 + 5 * e) / (1 + e), 1e-15);
  EXPECT_NEAR(lse, std::log(1 + e), 1e-15);

  // Huge logits (1e4): no overflow, the max key wins.
  float qBig[] = {100}, kBig[] = {100, 99};
  fa::rt::AttentionShape big{1, 1, 2, 1, 2, 1.0, FA_RT_CAUSAL_NONE};
  fa::rt::referenceAttention(big, qBig, kBig, v, o, &lse, 1);
  EXPECT_NEAR(o[0], (1 + 3 * std::exp(-100.0)) / (1 + std::exp(-100.0)), 1e-15);
  EXPECT_NEAR(lse, 1e4 + std::log1p(std::exp(-100.0)), 1e-9);
}

/// q = 0 makes every visible score 0: each o row is the mean of the visible
/// v rows and lse = log(count).
static void checkMeanRows(faRtCausal causal, int64_t tq, int64_t tk,
                          const std::vector<double> &expectedO) {
  fa::rt::AttentionShape s{1, tq, tk, 1, 1, 1.0, causal};
  std::vector<float> q(tq, 0.0f), k(tk, 1.0f), v;
  for (int64_t j = 0; j < tk; ++j)
    v.push_back(static_cast<float>(std::pow(10.0, j)));
  std::vector<double> o(tq), lse(tq);
  fa::rt::referenceAttention(s, q.data(), k.data(), v.data(), o.data(),
                             lse.data(), 2);
  for (int64_t i = 0; i < tq; ++i) {
    EXPECT_NEAR(o[i], expectedO[i], 1e-12);
    int64_t count = fa::rt::visibleKeys(causal, i, tq, tk);
    if (count == 0) {
      EXPECT(std::isinf(lse[i]) && lse[i] < 0);
      EXPECT_EQ(o[i], 0.0);
    } else {
      EXPECT_NEAR(lse[i], std::log(static_cast<double>(count)), 1e-12);
    }
  }
}

static void testReferenceCausal() {
  using fa::rt::visibleKeys;
  // Tq = 2, Tk = 3. top_left: row i sees keys 0..i.
  EXPECT_EQ(visibleKeys(FA_RT_CAUSAL_TOP_LEFT, 0, 2, 3), 1);
  EXPECT_EQ(visibleKeys(FA_RT_CAUSAL_TOP_LEFT, 1, 2, 3), 2);
  // bottom_right: row i sees keys 0..i + Tk - Tq.
  EXPECT_EQ(visibleKeys(FA_RT_CAUSAL_BOTTOM_RIGHT, 0, 2, 3), 2);
  EXPECT_EQ(visibleKeys(FA_RT_CAUSAL_BOTTOM_RIGHT, 1, 2, 3), 3);
  EXPECT_EQ(visibleKeys(FA_RT_CAUSAL_NONE, 0, 2, 3), 3);
  // Tq = 3 > Tk = 2, bottom_right: row 0 sees nothing.
  EXPECT_EQ(visibleKeys(FA_RT_CAUSAL_BOTTOM_RIGHT, 0, 3, 2), 0);
  EXPECT_EQ(visibleKeys(FA_RT_CAUSAL_BOTTOM_RIGHT, 2, 3, 2), 2);
  // top_left with Tq > Tk: the last rows see every key.
  EXPECT_EQ(visibleKeys(FA_RT_CAUSAL_TOP_LEFT, 2, 3, 2), 2);

  checkMeanRows(FA_RT_CAUSAL_NONE, 2, 3, {37, 37});
  checkMeanRows(FA_RT_CAUSAL_TOP_LEFT, 2, 3, {1, 5.5});
  checkMeanRows(FA_RT_CAUSAL_BOTTOM_RIGHT, 2, 3, {5.5, 37});
  checkMeanRows(FA_RT_CAUSAL_BOTTOM_RIGHT, 3, 2, {0, 1, 5.5});
  checkMeanRows(FA_RT_CAUSAL_TOP_LEFT, 3, 2, {1, 5.5, 5.5});
  // Tq = 1 decode: bottom_right sees the whole cache, top_left one key.
  checkMeanRows(FA_RT_CAUSAL_BOTTOM_RIGHT, 1, 3, {37});
  checkMeanRows(FA_RT_CAUSAL_TOP_LEFT, 1, 3, {1});
}

static void testReferenceEmptyKeys() {
  // Tk = 0: every row o = 0, lse = -inf, never NaN.
  fa::rt::AttentionShape s{2, 3, 0, 4, 5, 0.5, FA_RT_CAUSAL_NONE};
  std::vector<float> q(2 * 3 * 4, 1.0f);
  std::vector<double> o(2 * 3 * 5, 42.0), lse(6, 42.0);
  fa::rt::referenceAttention(s, q.data(), nullptr, nullptr, o.data(),
                             lse.data(), 3);
  for (double value : o)
    EXPECT_EQ(value, 0.0);
  for (double value : lse)
    EXPECT(std::isinf(value) && value < 0);
  // Empty batch or Tq = 0: nothing to do, nothing touched.
  fa::rt::AttentionShape none{0, 3, 4, 4, 5, 0.5, FA_RT_CAUSAL_NONE};
  fa::rt::referenceAttention(none, nullptr, nullptr, nullptr, nullptr, nullptr);
}

static void testReferenceInvariants() {
  // Random data: joint K/V row permutation leaves non-causal o unchanged,
  // and the thread count does not change a bit of the result.
  const int64_t b = 3, tq = 37, tk = 29, d = 13, dv = 7;
  std::mt19937_64 rng(1234);
  std::normal_distribution<float> normal;
  auto fill = [&](size_t n) {
    std::vector<float> x(n);
    for (float &value : x)
      value = normal(rng);
    return x;
  };
  std::vector<float> q = fill(b * tq * d), k = fill(b * tk * d),
                     v = fill(b * tk * dv);
  fa::rt::AttentionShape s{
      b, tq, tk, d, dv, 1 / std::sqrt(13.0), FA_RT_CAUSAL_NONE};
  std::vector<double> o1(b * tq * dv), l1(b * tq), o4(o1.size()), l4(l1.size());
  fa::rt::referenceAttention(s, q.data(), k.data(), v.data(), o1.data(),
                             l1.data(), 1);
  fa::rt::referenceAttention(s, q.data(), k.data(), v.data(), o4.data(),
                             l4.data(), 4);
  EXPECT(o1 == o4);
  EXPECT(l1 == l4);

  std::vector<float> kp(k.size()), vp(v.size());
  for (int64_t bb = 0; bb < b; ++bb)
    for (int64_t j = 0; j < tk; ++j) {
      int64_t from = (j * 7 + 3) % tk; // 7 is coprime to 29
      std::copy_n(&k[(bb * tk + from) * d], d, &kp[(bb * tk + j) * d]);
      std::copy_n(&v[(bb * tk + from) * dv], dv, &vp[(bb * tk + j) * dv]);
    }
  std::vector<double> op(o1.size()), lp(l1.size());
  fa::rt::referenceAttention(s, q.data(), kp.data(), vp.data(), op.data(),
                             lp.data(), 2);
  double maxDiff = 0;
  for (size_t i = 0; i < o1.size(); ++i)
    maxDiff = std::max(maxDiff, std::fabs(o1[i] - op[i]));
  for (size_t i = 0; i < l1.size(); ++i)
    maxDiff = std::max(maxDiff, std::fabs(l1[i] - lp[i]));
  EXPECT(maxDiff < 1e-12);
}

static void testFlops() {
  fa::rt::AttentionShape s{2, 8, 8, 64, 64, 1.0, FA_RT_CAUSAL_NONE};
  EXPECT_EQ(fa::rt::attentionFlops(s), 4.0 * 2 * 8 * 8 * 64);
  s.causal = FA_RT_CAUSAL_TOP_LEFT; // 8 * 9 / 2 visible pairs
  EXPECT_EQ(fa::rt::attentionFlops(s), 2.0 * 128 * 36 * 2);
  s.headDimV = 32;
  s.causal = FA_RT_CAUSAL_NONE;
  EXPECT_EQ(fa::rt::attentionFlops(s), 2.0 * (64 + 32) * 64 * 2);
}

static void testNoDriver() {
  // An explicit driver library that does not exist: a clean error, no
  // crash, no fallback. (Set before any other driver use in this process.)
  setenv("FA_RT_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
  EXPECT_EQ(faRtInit(0), FA_RT_ERROR_NO_DRIVER);
  EXPECT(contains(faRtGetLastError(), "cannot load the CUDA driver library"));
  faRtKernel kernel = reinterpret_cast<faRtKernel>(1);
  EXPECT_EQ(faRtKernelLoad("/nonexistent/k.manifest", 0, &kernel),
            FA_RT_ERROR_IO);
  EXPECT(kernel == nullptr);
  EXPECT_EQ(faRtKernelLaunch(nullptr, 0, 0, 0, 0, 0, 1, 1, 1, nullptr),
            FA_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(faRtStatusName(FA_RT_ERROR_PTX_LOAD)),
            "FA_RT_ERROR_PTX_LOAD");
}

/// The backward example of docs/ARTIFACTS.md (atomic dq).
static const char *const kBackwardManifest = R"(# fa backward manifest
version 2
op attention_backward
name main_attention_backward_0
ptx main_attention_backward_0.ptx
chip sm_90a
dtype bf16
o_dtype bf16
do_dtype bf16
dq_dtype bf16
dk_dtype bf16
dv_dtype f32
causal top_left
scale 0.125
batch 16
batch_shape 2 8
seqlen_q ?
seqlen_k ?
head_dim 64
head_dim_v 64
deterministic 0
scratch delta f32 batch seqlen_q
scratch dq_accum f32 batch seqlen_q head_dim
kernel main_attention_backward_0_delta
threads 128
shared_bytes 0
params o do delta dq_accum
grid ceil_div(seqlen_q,threads) batch 1
kernel main_attention_backward_0_dkdv
threads 64
block_m 64
block_n 64
shared_bytes 0
params q k v do lse delta dk dv dq_accum
grid ceil_div(seqlen_k,block_n) batch 1
kernel main_attention_backward_0_dq_convert
threads 128
shared_bytes 0
params dq_accum dq
grid ceil_div(seqlen_q,threads) batch 1
)";

static std::string backwardParseError(const std::string &text) {
  fa::rt::BackwardManifest m;
  faRtStatus status = fa::rt::parseBackwardManifest(text, "dir/b.manifest", m);
  if (status == FA_RT_SUCCESS)
    return "<parsed>";
  return std::string(faRtStatusName(status)) + ": " + faRtGetLastError();
}

/// kBackwardManifest with the first occurrence of `from` replaced by `to`.
static std::string backwardWith(const std::string &from,
                                const std::string &to) {
  std::string text = kBackwardManifest;
  size_t pos = text.find(from);
  if (pos != std::string::npos)
    text.replace(pos, from.size(), to);
  return text;
}

#define EXPECT_BACKWARD_ERROR(text, needle)                                    \
  do {                                                                         \
    std::string error_ = backwardParseError(text);                             \
    bool ok_ = contains(error_, needle);                                       \
    reportCheck(ok_, "error contains: " needle, __FILE__, __LINE__);           \
    if (!ok_)                                                                  \
      std::printf("    got: %s\n", error_.c_str());                            \
  } while (false)

static void testBackwardManifestGood() {
  fa::rt::ManifestKind kind = fa::rt::ManifestKind::Forward;
  EXPECT_EQ(fa::rt::manifestKind(kBackwardManifest, "b.manifest", kind),
            FA_RT_SUCCESS);
  EXPECT(kind == fa::rt::ManifestKind::Backward);
  EXPECT_EQ(fa::rt::manifestKind(kGoodManifest, "f.manifest", kind),
            FA_RT_SUCCESS);
  EXPECT(kind == fa::rt::ManifestKind::Forward);

  fa::rt::BackwardManifest m;
  EXPECT_EQ(fa::rt::parseBackwardManifest(kBackwardManifest, "dir/b.manifest",
                                          m),
            FA_RT_SUCCESS);
  EXPECT_EQ(m.name, "main_attention_backward_0");
  EXPECT_EQ(m.ptxPath(), "dir/main_attention_backward_0.ptx");
  EXPECT_EQ(m.dtype, FA_RT_DTYPE_BF16);
  EXPECT_EQ(m.dvDtype, FA_RT_DTYPE_F32);
  EXPECT_EQ(m.causal, FA_RT_CAUSAL_TOP_LEFT);
  EXPECT_EQ(m.batch, 16);
  EXPECT_EQ(m.seqlenQ, kDynamic);
  EXPECT_EQ(m.headDim, 64);
  EXPECT(!m.deterministic);
  EXPECT_EQ(m.scratch.size(), 2u);
  EXPECT_EQ(m.scratch[1].name, "dq_accum");
  EXPECT_EQ(m.scratch[1].dims.size(), 3u);
  EXPECT_EQ(m.kernels.size(), 3u);
  // An op without batch dims: empty batch_shape, batch 1.
  {
    fa::rt::BackwardManifest noDims;
    std::string text = backwardWith("batch_shape 2 8", "batch_shape");
    text.replace(text.find("\nbatch 16"), 9, "\nbatch 1");
    EXPECT_EQ(fa::rt::parseBackwardManifest(text, "dir/b.manifest", noDims),
              FA_RT_SUCCESS);
    EXPECT_EQ(noDims.batch, 1);
    EXPECT_EQ(noDims.batchShape.size(), 0u);
  }
  EXPECT_EQ(m.kernels[0].kernel, "main_attention_backward_0_delta");
  EXPECT_EQ(m.kernels[1].threads, 64);
  EXPECT_EQ(m.kernels[1].blockN, 64);
  EXPECT_EQ(m.kernels[2].params.size(), 2u);

  // Grids per kernel, and the workspace: delta (16 * 100 f32 = 6400 bytes,
  // padded to 6400) then dq_accum (16 * 100 * 64 f32).
  fa::rt::LaunchShape shape{16, 100, 300};
  std::array<uint32_t, 3> grid;
  EXPECT_EQ(fa::rt::computeGrid(m.kernelView(0), shape, grid), FA_RT_SUCCESS);
  EXPECT(grid == (std::array<uint32_t, 3>{1, 16, 1}));
  EXPECT_EQ(fa::rt::computeGrid(m.kernelView(1), shape, grid), FA_RT_SUCCESS);
  EXPECT(grid == (std::array<uint32_t, 3>{5, 16, 1}));
  fa::rt::WorkspaceLayout layout;
  EXPECT_EQ(fa::rt::backwardWorkspaceLayout(m, shape, layout), FA_RT_SUCCESS);
  EXPECT_EQ(layout.offsets.size(), 2u);
  EXPECT_EQ(layout.offsets[1], 6400u);
  EXPECT_EQ(layout.bytes, 6400u + 16u * 100u * 64u * 4u);
  EXPECT_EQ(fa::rt::checkLaunchShape(m.kernelView(0), {8, 100, 300}),
            FA_RT_ERROR_SHAPE);

  // Batch chunks (faRtBackwardLaunch): each tensor's pointer advanced by
  // `start` batch entries of its own dims and element type (dv is f32 in
  // this manifest, the scratch f32, lse f32), null pointers kept.
  EXPECT_EQ(fa::rt::backwardTensorDtype(m, "do"), FA_RT_DTYPE_BF16);
  EXPECT_EQ(fa::rt::backwardTensorDtype(m, "dv"), FA_RT_DTYPE_F32);
  EXPECT_EQ(fa::rt::backwardTensorDtype(m, "dq_accum"), FA_RT_DTYPE_F32);
  {
    std::vector<std::pair<std::string, uint64_t>> chunk =
        fa::rt::backwardChunkPointers(m,
                                      {{"q", 0x1000},
                                       {"k", 0x2000},
                                       {"dv", 0x3000},
                                       {"lse", 0x4000},
                                       {"dq_accum", 0x5000},
                                       {"dq", 0}},
                                      shape, 3);
    EXPECT_EQ(chunk.size(), 6u);
    EXPECT_EQ(chunk[0].second, 0x1000u + 3u * 100u * 64u * 2u);
    EXPECT_EQ(chunk[1].second, 0x2000u + 3u * 300u * 64u * 2u);
    EXPECT_EQ(chunk[2].second, 0x3000u + 3u * 300u * 64u * 4u);
    EXPECT_EQ(chunk[3].second, 0x4000u + 3u * 100u * 4u);
    EXPECT_EQ(chunk[4].second, 0x5000u + 3u * 100u * 64u * 4u);
    EXPECT_EQ(chunk[5].second, 0u);
  }
  // A scratch buffer other than delta and dq_accum (the wgmma _dkdv's
  // dkdv_ends counter): the declared dims, batch first, as its memref
  // params and its chunk offsets.
  {
    fa::rt::BackwardManifest withEnds;
    std::string text =
        backwardWith("params dq_accum dq", "params dq_accum dq ends");
    text.insert(text.find("scratch delta"), "scratch ends f32 batch 2\n");
    EXPECT_EQ(fa::rt::parseBackwardManifest(text, "b.manifest", withEnds),
              FA_RT_SUCCESS);
    EXPECT_EQ(fa::rt::backwardTensorSizes(withEnds, "ends", shape),
              (std::vector<int64_t>{16, 2}));
    EXPECT_EQ(fa::rt::backwardTensorSizes(withEnds, "scores", shape),
              std::vector<int64_t>{});
    std::vector<std::pair<std::string, uint64_t>> chunk =
        fa::rt::backwardChunkPointers(withEnds, {{"ends", 0x6000}}, shape, 3);
    EXPECT_EQ(chunk[0].second, 0x6000u + 3u * 2u * 4u);
    // The workspace: ends (16 x 2 f32, padded to 256 bytes), then delta and
    // dq_accum as above.
    fa::rt::WorkspaceLayout endsLayout;
    EXPECT_EQ(fa::rt::backwardWorkspaceLayout(withEnds, shape, endsLayout),
              FA_RT_SUCCESS);
    EXPECT(endsLayout.offsets ==
           (std::vector<uint64_t>{0u, 256u, 256u + 6400u}));

    std::vector<uint64_t> params = fa::rt::buildBackwardKernelParams(
        withEnds, withEnds.kernels.size() - 1, shape,
        {{"dq_accum", 0x5000}, {"dq", 0x7000}, {"ends", 0x6000}});
    // dq_accum (3 + 2 x 3), dq (3 + 2 x 3), then ends: 0x6000 twice, offset
    // 0, sizes 16 2, strides 2 1.
    EXPECT_EQ(params.size(), 9u + 9u + 7u);
    if (params.size() == 25u) {
      EXPECT_EQ(params[18], 0x6000u);
      EXPECT_EQ(params[21], 16u);
      EXPECT_EQ(params[22], 2u);
      EXPECT_EQ(params[23], 2u);
    }
  }
  // 32-bit indices: batch chunks also keep each scratch buffer below 2^31
  // elements (here 100 x 3000 per batch entry, more than q, k, v, o), and
  // one batch entry of a scratch buffer over the limit is an error.
  {
    fa::rt::BackwardManifest big;
    std::string text = backwardWith("batch 16\nbatch_shape 2 8",
                                    "batch ?\nbatch_shape ?\nindex_bits 32");
    text.insert(text.find("scratch delta"),
                "scratch scores f32 batch seqlen_q seqlen_k\n");
    EXPECT_EQ(fa::rt::parseBackwardManifest(text, "b.manifest", big),
              FA_RT_SUCCESS);
    const int64_t limit = (int64_t(1) << 31) - 1;
    EXPECT_EQ(fa::rt::backwardBatchChunk(big, {200000, 100, 3000}),
              limit / (100 * 3000));
    EXPECT_EQ(fa::rt::batchChunk(big.kernelView(0), {200000, 100, 3000}),
              limit / (3000 * 64));
    EXPECT_EQ(fa::rt::checkBackwardChunkedLaunchShape(big, {200000, 100, 3000}),
              FA_RT_SUCCESS);
    EXPECT_EQ(fa::rt::checkBackwardChunkedLaunchShape(big, {2, 50000, 50000}),
              FA_RT_ERROR_SHAPE);
    EXPECT(contains(faRtGetLastError(), "scratch buffer scores of "
                                        "2500000000 elements per batch entry"));
  }
  // 32-bit indices, dynamic batch: chunks of 2^31 - 1 elements of the
  // largest tensor (here k, 3000 x 64 per batch entry); the check is of
  // the first chunk, so a batch that only the whole launch would overflow
  // passes, and one batch entry over the limit does not.
  {
    fa::rt::BackwardManifest narrow;
    EXPECT_EQ(fa::rt::parseBackwardManifest(
                  backwardWith("batch 16\nbatch_shape 2 8",
                               "batch ?\nbatch_shape ?\nindex_bits 32"),
                  "b.manifest", narrow),
              FA_RT_SUCCESS);
    EXPECT_EQ(narrow.indexBits, 32);
    const int64_t step = ((int64_t(1) << 31) - 1) / (3000 * 64);
    EXPECT_EQ(step, 11184);
    EXPECT_EQ(fa::rt::batchChunk(narrow.kernelView(1), {200000, 100, 3000}),
              step);
    EXPECT_EQ(fa::rt::checkChunkedLaunchShape(narrow.kernelView(1),
                                              {200000, 100, 3000}),
              FA_RT_SUCCESS);
    EXPECT_EQ(
        fa::rt::checkLaunchShape(narrow.kernelView(1), {200000, 100, 3000}),
        FA_RT_ERROR_SHAPE);
    EXPECT_EQ(fa::rt::checkChunkedLaunchShape(narrow.kernelView(1),
                                              {2, 100, int64_t(1) << 25}),
              FA_RT_ERROR_SHAPE);
  }

  // Kernel 2 (dq_convert): dq_accum then dq, rank-3 descriptors (9 each).
  std::vector<uint64_t> params = fa::rt::buildBackwardKernelParams(
      m, 2, shape, {{"dq", 0x1000}, {"dq_accum", 0x2000}});
  EXPECT_EQ(params.size(), 18u);
  EXPECT_EQ(params[0], 0x2000u);
  EXPECT_EQ(params[3], 16u);
  EXPECT_EQ(params[6], 6400u); // stride of the batch dim: 100 * 64
  EXPECT_EQ(params[9], 0x1000u);
  // Kernel 0: o, do (rank 3), delta (rank 2), dq_accum (rank 3).
  EXPECT_EQ(fa::rt::buildBackwardKernelParams(m, 0, shape, {}).size(),
            9u * 3 + 7u);

  // Without o_dtype etc. the grads default to dtype; unknown keys pass.
  std::string defaults = backwardWith("dv_dtype f32\n", "future_key 7\n");
  EXPECT_EQ(fa::rt::parseBackwardManifest(defaults, "b.manifest", m),
            FA_RT_SUCCESS);
  EXPECT_EQ(m.dvDtype, FA_RT_DTYPE_BF16);
  EXPECT_EQ(m.rowAlign, 0);

  // The tensor-core kernels' row alignment.
  fa::rt::BackwardManifest aligned;
  EXPECT_EQ(fa::rt::parseBackwardManifest(
                backwardWith("dv_dtype f32\n", "dv_dtype f32\nrow_align 16\n"),
                "b.manifest", aligned),
            FA_RT_SUCCESS);
  EXPECT_EQ(aligned.rowAlign, 16);

  // A version 2 manifest has no tensor map.
  for (const fa::rt::KernelLaunch &kernel : m.kernels)
    EXPECT(kernel.tensorMaps.empty());
}

static void testBackwardManifestMalformed() {
  EXPECT_BACKWARD_ERROR(backwardWith("version 2", "version 1"),
                        "b.manifest:2: expected version 2 or 4 for a backward "
                        "manifest, got 1");
  EXPECT_BACKWARD_ERROR(backwardWith("version 2", "version 3"),
                        "expected version 2 or 4 for a backward manifest, "
                        "got 3");
  EXPECT_BACKWARD_ERROR(backwardWith("name main_attention_backward_0\n", ""),
                        "missing required key 'name'");
  EXPECT_BACKWARD_ERROR(backwardWith("threads 64\n", ""),
                        "kernel 'main_attention_backward_0_dkdv' lacks "
                        "'threads'");
  EXPECT_BACKWARD_ERROR(backwardWith("block_m 64\n", "block_m 64\nblock_m 8\n"),
                        "duplicate key 'block_m' in kernel");
  EXPECT_BACKWARD_ERROR(backwardWith("params dq_accum dq",
                                     "params dq_accum dq scores"),
                        "takes 'scores', which is neither an operand");
  EXPECT_BACKWARD_ERROR(
      backwardWith("scratch dq_accum f32 batch seqlen_q head_dim\n", ""),
      "takes 'dq_accum', which is neither");
  EXPECT_BACKWARD_ERROR(backwardWith("scratch delta f32 batch seqlen_q",
                                     "scratch delta f32 batch seqlen_x"),
                        "invalid value 'seqlen_x' for 'scratch'");
  // delta and dq_accum take one declaration each: the kernels' shape.
  EXPECT_BACKWARD_ERROR(
      backwardWith("scratch dq_accum f32 batch seqlen_q head_dim",
                   "scratch dq_accum f32 batch seqlen_k head_dim"),
      "dir/b.manifest:23: scratch buffer 'dq_accum' must be 'f32 batch "
      "seqlen_q head_dim' (the shape its kernels take), got 'f32 batch "
      "seqlen_k head_dim'");
  EXPECT_BACKWARD_ERROR(
      backwardWith("scratch dq_accum f32 batch seqlen_q head_dim",
                   "scratch dq_accum f16 batch seqlen_q head_dim"),
      "scratch buffer 'dq_accum' must be 'f32 batch seqlen_q head_dim'");
  EXPECT_BACKWARD_ERROR(backwardWith("scratch delta f32 batch seqlen_q",
                                     "scratch delta f32 batch"),
                        "scratch buffer 'delta' must be 'f32 batch "
                        "seqlen_q' (the shape its kernels take), got 'f32 "
                        "batch'");
  // Batch chunks take each scratch buffer's rows of their batches: batch
  // first and only there; sizes of the op or integers after it.
  auto withScratch = [](const std::string &line) {
    return backwardWith("scratch delta f32 batch seqlen_q",
                        "scratch delta f32 batch seqlen_q\n" + line);
  };
  EXPECT_BACKWARD_ERROR(withScratch("scratch ends f32 1"),
                        "dir/b.manifest:23: invalid value '1' for 'scratch': "
                        "expected batch (a scratch buffer's first dim)");
  EXPECT_BACKWARD_ERROR(withScratch("scratch ends f32 batch batch"),
                        "invalid value 'batch' for 'scratch': expected "
                        "seqlen_q, seqlen_k, head_dim, head_dim_v or an "
                        "integer");
  EXPECT_BACKWARD_ERROR(withScratch("scratch ends f32 batch block_m"),
                        "invalid value 'block_m' for 'scratch'");
  EXPECT_BACKWARD_ERROR(withScratch("scratch ends f32"),
                        "scratch buffer 'ends' has no dims (expected batch "
                        "first)");
  EXPECT_BACKWARD_ERROR(backwardWith("threads 128", "threads 2048"),
                        "invalid value '2048' for 'threads'");
  EXPECT_BACKWARD_ERROR(
      std::string(kBackwardManifest) + "causal none\n",
      "header key 'causal' after the first kernel section");
  std::string noKernels = kBackwardManifest;
  noKernels = noKernels.substr(0, noKernels.find("kernel "));
  EXPECT_BACKWARD_ERROR(noKernels, "expected at least one kernel section");

  // The kind of a manifest: version 4, or a version 2 of another op, is not
  // read; a forward reader rejects a backward manifest by its version.
  fa::rt::ManifestKind kind;
  EXPECT_EQ(fa::rt::manifestKind("version 4\n", "x.manifest", kind),
            FA_RT_ERROR_MANIFEST);
  EXPECT(contains(faRtGetLastError(),
                  "x.manifest: version 4 is an attention_backward manifest "
                  "version, but the manifest has no 'op attention_backward' "
                  "line"));
  EXPECT_EQ(fa::rt::manifestKind("version 6\n", "x.manifest", kind),
            FA_RT_ERROR_MANIFEST);
  EXPECT(contains(faRtGetLastError(),
                  "x.manifest: unsupported manifest version 6 (this runtime "
                  "reads version 1 and 3 forward and version 2 and 4 "
                  "attention_backward manifests)"));
  EXPECT_EQ(fa::rt::manifestKind("version 5\nop attention_backward\n",
                                 "x.manifest", kind),
            FA_RT_ERROR_MANIFEST);
  EXPECT(contains(faRtGetLastError(),
                  "unsupported manifest version 5 op attention_backward"));
  EXPECT_EQ(fa::rt::manifestKind("version 2\nop attention\n", "x.manifest",
                                 kind),
            FA_RT_ERROR_MANIFEST);
  EXPECT_ERROR(kBackwardManifest, "unsupported manifest version 2");
  // A backward manifest that says a forward version: the forward reader
  // names the mismatch at the op line, not the second 'kernel' key.
  for (const char *version : {"version 1", "version 3"})
    EXPECT_ERROR(backwardWith("version 2", version),
                 "dir/x.manifest:3: 'op attention_backward' needs manifest "
                 "version 2 or 4 (the backward format); versions 1 and 3 are "
                 "forward manifests, which have no 'op' key");
}

/// A version 4 backward manifest (docs/ARTIFACTS.md): the deterministic
/// kernels, _dkdv and _dq taking tensor maps, _delta none; do in f16 to tell
/// do_dtype from dtype.
static const char *const kBackwardTmaManifest = R"(# fa backward manifest
version 4
op attention_backward
name main_attention_backward_0
ptx main_attention_backward_0.ptx
chip sm_90a
dtype bf16
o_dtype bf16
do_dtype f16
dq_dtype bf16
dk_dtype bf16
dv_dtype bf16
causal top_left
scale 0.125
batch 16
batch_shape 2 8
seqlen_q ?
seqlen_k ?
head_dim 64
head_dim_v 64
deterministic 1
row_align 16
scratch delta f32 batch seqlen_q
kernel main_attention_backward_0_delta
threads 128
block_m 16
shared_bytes 0
params o do delta
grid ceil_div(seqlen_q,block_m) batch 1
kernel main_attention_backward_0_dkdv
threads 256
block_m 64
block_n 128
shared_bytes 99999
params q k v do lse delta dk dv
tensor_map q 64 64 128
tensor_map k 64 128 128
tensor_map v 64 128 128
tensor_map do 64 64 128
grid ceil_div(seqlen_k,block_n) batch 1
kernel main_attention_backward_0_dq
threads 256
block_m 128
block_n 128
shared_bytes 99999
params q k v do lse delta dq
tensor_map q 64 128 128
tensor_map k 64 128 128
tensor_map v 64 128 128
tensor_map do 64 128 128
grid ceil_div(seqlen_q,block_m) batch 1
)";

/// `text` with the first occurrence of `from` replaced by `to`.
static std::string replaceFirst(std::string text, const std::string &from,
                                const std::string &to) {
  size_t pos = text.find(from);
  if (pos != std::string::npos)
    text.replace(pos, from.size(), to);
  return text;
}

static std::string tmaWith(const std::string &from, const std::string &to) {
  return replaceFirst(kBackwardTmaManifest, from, to);
}

/// Version 4 backward manifests: tensor_map lines per kernel section.
static void testBackwardTensorMaps() {
  fa::rt::ManifestKind kind = fa::rt::ManifestKind::Forward;
  EXPECT_EQ(fa::rt::manifestKind(kBackwardTmaManifest, "b.manifest", kind),
            FA_RT_SUCCESS);
  EXPECT(kind == fa::rt::ManifestKind::Backward);
  fa::rt::BackwardManifest m;
  EXPECT_EQ(fa::rt::parseBackwardManifest(kBackwardTmaManifest,
                                          "dir/b.manifest", m),
            FA_RT_SUCCESS);
  EXPECT_EQ(m.version, 4);
  EXPECT_EQ(m.doDtype, FA_RT_DTYPE_F16);
  EXPECT_EQ(m.kernels.size(), 3u);
  if (m.kernels.size() == 3) {
    EXPECT(m.kernels[0].tensorMaps.empty());
    const std::vector<TensorMapSpec> &dkdv = m.kernels[1].tensorMaps;
    const std::vector<TensorMapSpec> &dq = m.kernels[2].tensorMaps;
    EXPECT_EQ(dkdv.size(), 4u);
    EXPECT_EQ(dq.size(), 4u);
    const char *operands[] = {"q", "k", "v", "do"};
    for (size_t i = 0; i < 4 && i < dkdv.size() && i < dq.size(); ++i) {
      EXPECT_EQ(dkdv[i].operand, operands[i]);
      EXPECT_EQ(dq[i].operand, operands[i]);
      EXPECT_EQ(dkdv[i].boxCols, 64);
      EXPECT_EQ(dq[i].boxRows, 128);
      EXPECT_EQ(dq[i].swizzleBytes, 128);
      EXPECT_EQ(dkdv[i].line, 36 + static_cast<int>(i));
      EXPECT_EQ(dq[i].line, 47 + static_cast<int>(i));
    }
    if (dkdv.size() == 4) {
      EXPECT_EQ(dkdv[0].boxRows, 64);  // q: block_m rows
      EXPECT_EQ(dkdv[1].boxRows, 128); // k: block_n rows
      EXPECT_EQ(dkdv[3].boxRows, 64);  // do
    }
    // The memref params are as in version 2: 6 rank-3, 2 rank-2.
    EXPECT_EQ(fa::rt::buildBackwardKernelParams(m, 1, {16, 100, 300}, {})
                  .size(),
              6u * 9 + 2u * 7);
  }
  // Any subset in params order; a section may have maps another lacks;
  // the lines may stand anywhere in their section (fa-opt writes them
  // between params and grid).
  EXPECT_EQ(backwardParseError(tmaWith("tensor_map q 64 128 128\n"
                                       "tensor_map k 64 128 128\n"
                                       "tensor_map v 64 128 128\n"
                                       "tensor_map do 64 128 128\n",
                                       "")),
            "<parsed>");
  EXPECT_EQ(backwardParseError(tmaWith("tensor_map k 64 128 128\n", "")),
            "<parsed>");
  EXPECT_EQ(backwardParseError(
                tmaWith("params o do delta\n",
                        "tensor_map do 64 16 128\nparams o do delta\n")),
            "<parsed>");
  // A forward reader rejects it by its version.
  EXPECT_ERROR(kBackwardTmaManifest,
               "dir/x.manifest:2: unsupported manifest version 4");
}

static void testBackwardTensorMapErrors() {
  // tensor_map in version 2, at the first map's line; version 4 without a
  // map, at the version line.
  EXPECT_BACKWARD_ERROR(tmaWith("version 4", "version 2"),
                        "FA_RT_ERROR_MANIFEST: dir/b.manifest:36: tensor_map "
                        "needs manifest version 4 (this backward manifest is "
                        "version 2)");
  EXPECT_BACKWARD_ERROR(backwardWith("params q k v do lse delta dk dv dq_accum\n",
                                     "params q k v do lse delta dk dv "
                                     "dq_accum\ntensor_map k 64 64 none\n"),
                        "dir/b.manifest:35: tensor_map needs manifest "
                        "version 4");
  EXPECT_BACKWARD_ERROR(backwardWith("version 2", "version 4"),
                        "FA_RT_ERROR_MANIFEST: dir/b.manifest:2: backward "
                        "manifest version 4 needs at least one 'tensor_map' "
                        "line in a kernel section (version 2 is the format "
                        "without tensor maps)");
  // In the header.
  EXPECT_BACKWARD_ERROR(tmaWith("scratch delta", "tensor_map q 64 64 128\n"
                                                 "scratch delta"),
                        "dir/b.manifest:23: 'tensor_map' outside a kernel "
                        "section");
  // Operands: q, k, v, do only, and in the section's params.
  EXPECT_BACKWARD_ERROR(
      tmaWith("tensor_map do 64 64 128", "tensor_map o 64 64 128"),
      "dir/b.manifest:39: invalid value 'o' for "
      "'tensor_map' OPERAND: expected q, k, v, do or dq_accum");
  EXPECT_BACKWARD_ERROR(tmaWith("tensor_map do 64 64 128",
                                "tensor_map dk 64 64 128"),
                        "invalid value 'dk' for 'tensor_map' OPERAND");
  EXPECT_BACKWARD_ERROR(tmaWith("params o do delta\n",
                                "params o do delta\ntensor_map q 64 16 128\n"),
                        "dir/b.manifest:29: tensor_map for 'q', which is not "
                        "in the params of kernel "
                        "'main_attention_backward_0_delta'");
  // Out of params order, naming both and the kernel, at the later line.
  EXPECT_BACKWARD_ERROR(tmaWith("tensor_map q 64 128 128\n"
                                "tensor_map k 64 128 128\n",
                                "tensor_map k 64 128 128\n"
                                "tensor_map q 64 128 128\n"),
                        "dir/b.manifest:48: tensor_map for 'q' after the one "
                        "for 'k' (line 47): tensor_map lines must be in the "
                        "order of the params of kernel "
                        "'main_attention_backward_0_dq'");
  EXPECT_BACKWARD_ERROR(tmaWith("tensor_map v 64 128 128\n"
                                "tensor_map do 64 64 128\n",
                                "tensor_map do 64 64 128\n"
                                "tensor_map v 64 128 128\n"),
                        "dir/b.manifest:39: tensor_map for 'v' after the one "
                        "for 'do' (line 38)");
  // Duplicate within a section (the same operand in two sections is fine).
  EXPECT_BACKWARD_ERROR(tmaWith("tensor_map v 64 128 128\n",
                                "tensor_map k 64 128 128\n"),
                        "dir/b.manifest:38: duplicate tensor_map for 'k' in "
                        "kernel 'main_attention_backward_0_dkdv' (first on "
                        "line 37)");
  // The forward's line and box rules, do taking do_dtype and head_dim_v.
  EXPECT_BACKWARD_ERROR(tmaWith("tensor_map q 64 64 128", "tensor_map q 64 64"),
                        "dir/b.manifest:36: expected 4 values for "
                        "'tensor_map'");
  EXPECT_BACKWARD_ERROR(tmaWith("tensor_map q 64 64 128",
                                "tensor_map q 64 512 128"),
                        "invalid value '512' for 'tensor_map' BOX_ROWS");
  EXPECT_BACKWARD_ERROR(tmaWith("tensor_map q 64 64 128",
                                "tensor_map q 64 64 16"),
                        "invalid value '16' for 'tensor_map' SWIZZLE");
  EXPECT_BACKWARD_ERROR(tmaWith("do_dtype f16", "do_dtype f32"),
                        "dir/b.manifest:39: tensor_map 'do': BOX_COLS 64 x 4 "
                        "bytes (f32) = 256 bytes exceeds the 128-byte swizzle "
                        "span");
  EXPECT_BACKWARD_ERROR(tmaWith("tensor_map k 64 128 128",
                                "tensor_map k 12 128 none"),
                        "tensor_map 'k': BOX_COLS 12 x 2 bytes (bf16) = 24 "
                        "bytes is not a multiple of 16 bytes");
  EXPECT_BACKWARD_ERROR(tmaWith("head_dim_v 64", "head_dim_v 32"),
                        "dir/b.manifest:38: tensor_map 'v': BOX_COLS 64 "
                        "exceeds head_dim_v 32");
  EXPECT_BACKWARD_ERROR(replaceFirst(tmaWith("head_dim_v 64", "head_dim_v 32"),
                                     "tensor_map v 64 128 128",
                                     "tensor_map v 32 128 64"),
                        "dir/b.manifest:39: tensor_map 'do': BOX_COLS 64 "
                        "exceeds head_dim_v 32");
  EXPECT_BACKWARD_ERROR(tmaWith("head_dim 64", "head_dim 32"),
                        "dir/b.manifest:36: tensor_map 'q': BOX_COLS 64 "
                        "exceeds head_dim 32");
}

/// Operand addresses for the encode-argument tests.
static const std::vector<std::pair<std::string, uint64_t>> kBackwardPointers = {
    {"q", 0x1000},  {"k", 0x2000},       {"v", 0x3000},  {"o", 0x4000},
    {"do", 0x5000}, {"lse", 0x6000},     {"dq", 0x7000}, {"dk", 0x8000},
    {"dv", 0x9000}, {"dq_accum", 0xa000}};

/// Parses `text` into `m`; false (a failed check at `line`) unless it is a
/// good backward manifest of three kernels.
static bool parsesThreeKernels(const std::string &text,
                               fa::rt::BackwardManifest &m, int line) {
  faRtStatus status = fa::rt::parseBackwardManifest(text, "b.manifest", m);
  bool ok = status == FA_RT_SUCCESS && m.kernels.size() == 3;
  reportCheck(ok, "a good manifest of 3 kernels", __FILE__, line);
  return ok;
}

/// The encode arguments of a backward kernel's maps.
static void testBackwardTensorMapArgs() {
  // head_dim 64, head_dim_v 32; q/k/v bf16, do f16.
  std::string text = replaceFirst(tmaWith("head_dim_v 64", "head_dim_v 32"),
                                  "tensor_map v 64 128 128\n"
                                  "tensor_map do 64 64 128\n",
                                  "tensor_map v 32 128 64\n"
                                  "tensor_map do 32 64 64\n");
  text = replaceFirst(text,
                      "tensor_map v 64 128 128\ntensor_map do 64 128 128\n",
                      "tensor_map do 16 128 none\n");
  fa::rt::BackwardManifest m;
  if (!parsesThreeKernels(text, m, __LINE__))
    return;
  const std::vector<std::pair<std::string, uint64_t>> pointers =
      kBackwardPointers;
  std::vector<fa::rt::TensorMapEncodeArgs> args;
  // _dkdv: globalDim {D, T, batch}, strides {D * esize, T * D * esize}.
  EXPECT_EQ(fa::rt::buildBackwardTensorMapArgs(m, 1, {16, 100, 300},
                                               pointers, args),
            FA_RT_SUCCESS);
  EXPECT_EQ(args.size(), 4u);
  if (args.size() == 4) {
    expectMapArgs(args[0], "q", FA_RT_DTYPE_BF16, 0x1000, {64, 100, 16},
                  {128, 12800}, {64, 64, 1}, 128, __LINE__);
    expectMapArgs(args[1], "k", FA_RT_DTYPE_BF16, 0x2000, {64, 300, 16},
                  {128, 38400}, {64, 128, 1}, 128, __LINE__);
    expectMapArgs(args[2], "v", FA_RT_DTYPE_BF16, 0x3000, {32, 300, 16},
                  {64, 19200}, {32, 128, 1}, 64, __LINE__);
    expectMapArgs(args[3], "do", FA_RT_DTYPE_F16, 0x5000, {32, 100, 16},
                  {64, 6400}, {32, 64, 1}, 64, __LINE__);
  }
  // _dq: q, k, then do with no swizzle.
  EXPECT_EQ(fa::rt::buildBackwardTensorMapArgs(m, 2, {16, 100, 300},
                                               pointers, args),
            FA_RT_SUCCESS);
  EXPECT_EQ(args.size(), 3u);
  if (args.size() == 3) {
    expectMapArgs(args[0], "q", FA_RT_DTYPE_BF16, 0x1000, {64, 100, 16},
                  {128, 12800}, {64, 128, 1}, 128, __LINE__);
    expectMapArgs(args[2], "do", FA_RT_DTYPE_F16, 0x5000, {32, 100, 16},
                  {64, 6400}, {16, 128, 1}, 0, __LINE__);
  }
  // _delta: no map.
  EXPECT_EQ(fa::rt::buildBackwardTensorMapArgs(m, 0, {16, 100, 300},
                                               pointers, args),
            FA_RT_SUCCESS);
  EXPECT(args.empty());

  // seqlen_q = 0: _dkdv still runs (one block per key block); q and do have
  // no element (null pointers) and take k's address, dims clamped to >= 1.
  std::vector<std::pair<std::string, uint64_t>> noQueries = pointers;
  for (auto &[name, ptr] : noQueries)
    if (name == "q" || name == "do")
      ptr = 0;
  EXPECT_EQ(fa::rt::buildBackwardTensorMapArgs(m, 1, {16, 0, 300}, noQueries,
                                               args),
            FA_RT_SUCCESS);
  if (args.size() == 4) {
    expectMapArgs(args[0], "q", FA_RT_DTYPE_BF16, 0x2000, {64, 1, 16},
                  {128, 128}, {64, 64, 1}, 128, __LINE__);
    expectMapArgs(args[3], "do", FA_RT_DTYPE_F16, 0x2000, {32, 1, 16},
                  {64, 64}, {32, 64, 1}, 64, __LINE__);
    expectMapArgs(args[1], "k", FA_RT_DTYPE_BF16, 0x2000, {64, 300, 16},
                  {128, 38400}, {64, 128, 1}, 128, __LINE__);
  }
  // seqlen_k = 0 in _dq: k takes q's address.
  EXPECT_EQ(fa::rt::buildBackwardTensorMapArgs(m, 2, {16, 100, 0}, pointers,
                                               args),
            FA_RT_SUCCESS);
  if (args.size() == 3)
    expectMapArgs(args[1], "k", FA_RT_DTYPE_BF16, 0x1000, {64, 1, 16},
                  {128, 128}, {64, 128, 1}, 128, __LINE__);

  // The forward's launch errors, naming the backward kernel.
  std::vector<std::pair<std::string, uint64_t>> misaligned = pointers;
  misaligned[1].second = 0x2008;
  EXPECT_EQ(fa::rt::buildBackwardTensorMapArgs(m, 1, {16, 100, 300},
                                               misaligned, args),
            FA_RT_ERROR_INVALID_ARGUMENT);
  EXPECT(contains(faRtGetLastError(),
                  "tensor map for 'k' (kernel "
                  "'main_attention_backward_0_dkdv'): the address of k must "
                  "be 16-byte aligned"));
  const int64_t big = int64_t(1) << 32;
  EXPECT_EQ(fa::rt::buildBackwardTensorMapArgs(m, 2, {1, big, 7}, pointers,
                                               args),
            FA_RT_ERROR_SHAPE);
  EXPECT(contains(faRtGetLastError(),
                  "tensor map for 'q' (kernel 'main_attention_backward_0_dq'): "
                  "seqlen_q = 4294967296 exceeds the TMA limit"));
}

/// dq atomics by TMA reductions: the _dkdv section of the atomic-dq
/// example with tensor maps, dq_accum's last (f32, [batch, seqlen_q,
/// head_dim]).
static void testBackwardDqAccumTensorMap() {
  std::string text = replaceFirst(kBackwardManifest, "version 2", "version 4");
  text = replaceFirst(text, "params q k v do lse delta dk dv dq_accum\n",
                      "params q k v do lse delta dk dv dq_accum\n"
                      "tensor_map q 64 64 128\n"
                      "tensor_map k 64 64 128\n"
                      "tensor_map v 64 64 128\n"
                      "tensor_map do 64 64 128\n"
                      "tensor_map dq_accum 32 16 128\n");
  fa::rt::BackwardManifest m;
  std::vector<fa::rt::TensorMapEncodeArgs> args;
  if (!parsesThreeKernels(text, m, __LINE__))
    return;
  EXPECT_EQ(fa::rt::buildBackwardTensorMapArgs(m, 1, {16, 100, 300},
                                               kBackwardPointers, args),
            FA_RT_SUCCESS);
  EXPECT_EQ(args.size(), 5u);
  // f32 whatever q's type: rows of 64 x 4 bytes, seqlen_q rows.
  if (args.size() == 5)
    expectMapArgs(args[4], "dq_accum", FA_RT_DTYPE_F32, 0xa000, {64, 100, 16},
                  {256, 25600}, {32, 16, 1}, 128, __LINE__);
  // The producer _dkdv's unswizzled boxes: 64 f32 (256 bytes) x 64 rows,
  // one warpgroup's (no swizzle span to exceed).
  {
    fa::rt::BackwardManifest unswizzled;
    std::vector<fa::rt::TensorMapEncodeArgs> wide;
    if (parsesThreeKernels(replaceFirst(text, "tensor_map dq_accum 32 16 128",
                                        "tensor_map dq_accum 64 64 none"),
                           unswizzled, __LINE__)) {
      EXPECT_EQ(fa::rt::buildBackwardTensorMapArgs(
                    unswizzled, 1, {16, 100, 300}, kBackwardPointers, wide),
                FA_RT_SUCCESS);
      EXPECT_EQ(wide.size(), 5u);
      if (wide.size() == 5)
        expectMapArgs(wide[4], "dq_accum", FA_RT_DTYPE_F32, 0xa000,
                      {64, 100, 16}, {256, 25600}, {64, 64, 1}, 0, __LINE__);
    }
  }
  // A box of 64 f32 (256 bytes) exceeds the 128-byte swizzle span.
  EXPECT_BACKWARD_ERROR(replaceFirst(text, "tensor_map dq_accum 32 16 128",
                                     "tensor_map dq_accum 64 16 128"),
                        "tensor_map 'dq_accum': BOX_COLS 64 x 4 bytes (f32) "
                        "= 256 bytes exceeds the 128-byte swizzle span");
  // Maps follow the params order: dq_accum comes after do.
  EXPECT_BACKWARD_ERROR(
      replaceFirst(replaceFirst(text, "tensor_map dq_accum 32 16 128\n", ""),
                   "tensor_map q 64 64 128\n",
                   "tensor_map dq_accum 32 16 128\ntensor_map q 64 64 128\n"),
      "tensor_map for 'q' after the one for 'dq_accum'");
}

/// The closed-form float64 backward against central differences of
/// L = sum(do * o) through referenceAttention, for every causal kind.
static void testReferenceBackwardFiniteDifferences() {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (faRtCausal causal : {FA_RT_CAUSAL_NONE, FA_RT_CAUSAL_TOP_LEFT,
                            FA_RT_CAUSAL_BOTTOM_RIGHT}) {
    fa::rt::AttentionShape shape{2, 5, 7, 3, 4, 0.6, causal};
    if (causal == FA_RT_CAUSAL_BOTTOM_RIGHT)
      shape.seqlenK = 3; // Tq > Tk: rows 0 and 1 see no key.
    auto fill = [&](int64_t n) {
      std::vector<float> x(n);
      for (float &e : x)
        e = normal(rng);
      return x;
    };
    const int64_t b = shape.batch, tq = shape.seqlenQ, tk = shape.seqlenK;
    std::vector<float> q = fill(b * tq * 3), k = fill(b * tk * 3),
                       v = fill(b * tk * 4), dout = fill(b * tq * 4);
    std::vector<double> dq(q.size()), dk(k.size()), dv(v.size());
    fa::rt::referenceAttentionBackward(shape, q.data(), k.data(), v.data(),
                                       dout.data(), dq.data(), dk.data(),
                                       dv.data(), 2);
    auto loss = [&]() {
      std::vector<double> o(b * tq * 4);
      fa::rt::referenceAttention(shape, q.data(), k.data(), v.data(),
                                 o.data(), nullptr, 1);
      double sum = 0;
      for (size_t i = 0; i < o.size(); ++i)
        sum += o[i] * dout[i];
      return sum;
    };
    // The inputs are float: steps of 1/64 are exact, the differences are
    // O(h^2) = 2.4e-4 relative to the curvature.
    const float h = 1.0f / 64;
    double worst = 0;
    auto probe = [&](std::vector<float> &x, const std::vector<double> &g) {
      for (size_t i = 0; i < x.size(); ++i) {
        float saved = x[i];
        x[i] = saved + h;
        double up = loss();
        x[i] = saved - h;
        double down = loss();
        x[i] = saved;
        worst = std::max(worst, std::fabs((up - down) / (2 * h) - g[i]));
      }
    };
    probe(q, dq);
    probe(k, dk);
    probe(v, dv);
    EXPECT(worst < 2e-3);
    if (!(worst < 2e-3))
      std::printf("    causal %d: max |finite difference - closed form| = "
                  "%.3e\n",
                  static_cast<int>(causal), worst);
    // Rows that see no key get dq = 0.
    if (causal == FA_RT_CAUSAL_BOTTOM_RIGHT)
      for (int64_t c = 0; c < 3; ++c)
        EXPECT_EQ(dq[1 * 3 + c], 0.0);
  }
}

/// The parallel normal sampler: the same values for any thread count, a new
/// stream or seed gives other values, every value is representable in the
/// dtype, and the moments are those of normal(0, 1).
static void testRandomNormal() {
  const size_t n = 3 * fa::rt::kRandomChunk + 12345; // a ragged last chunk
  std::vector<float> one =
      fa::rt::randomNormal(n, 42, 0, FA_RT_DTYPE_BF16, /*numThreads=*/1);
  std::vector<float> many =
      fa::rt::randomNormal(n, 42, 0, FA_RT_DTYPE_BF16, /*numThreads=*/7);
  EXPECT_EQ(one.size(), n);
  EXPECT(one == many);
  // A prefix is the same draw: chunks do not depend on the count.
  std::vector<float> prefix =
      fa::rt::randomNormal(1000, 42, 0, FA_RT_DTYPE_BF16, 3);
  EXPECT(std::equal(prefix.begin(), prefix.end(), one.begin()));
  std::vector<float> otherStream =
      fa::rt::randomNormal(n, 42, 1, FA_RT_DTYPE_BF16, 4);
  std::vector<float> otherSeed =
      fa::rt::randomNormal(n, 43, 0, FA_RT_DTYPE_BF16, 4);
  size_t sameStream = 0, sameSeed = 0;
  for (size_t i = 0; i < n; ++i) {
    sameStream += one[i] == otherStream[i];
    sameSeed += one[i] == otherSeed[i];
  }
  // bf16 has 8 bits of mantissa: equal values by chance, but far from all.
  EXPECT(sameStream < n / 10);
  EXPECT(sameSeed < n / 10);
  // Chunk boundaries start new engines, not copies of chunk 0.
  EXPECT(!std::equal(one.begin(), one.begin() + 64,
                     one.begin() + fa::rt::kRandomChunk));
  double sum = 0, sumSq = 0;
  bool representable = true;
  for (float value : one) {
    sum += value;
    sumSq += double(value) * value;
    representable &= fa::rt::roundToDtype(value, FA_RT_DTYPE_BF16) == value;
  }
  EXPECT(representable);
  // n ~ 3.2e6: the mean's standard error is 5.6e-4, the variance's 7.9e-4.
  EXPECT_NEAR(sum / n, 0.0, 5e-3);
  EXPECT_NEAR(sumSq / n - (sum / n) * (sum / n), 1.0, 1e-2);
  // f16 and f32 round to their own grids; f32 keeps the float sample.
  std::vector<float> f16 = fa::rt::randomNormal(5000, 7, 2, FA_RT_DTYPE_F16);
  bool halfOk = true;
  for (float value : f16)
    halfOk &= fa::rt::roundToDtype(value, FA_RT_DTYPE_F16) == value;
  EXPECT(halfOk);
  EXPECT(fa::rt::randomNormal(0, 7, 0, FA_RT_DTYPE_F32).empty());
}

int main() {
  struct Test {
    const char *name;
    std::function<void()> run;
  } tests[] = {
      {"manifest-good", testManifestGood},
      {"manifest-defaults", testManifestDefaultsAndForwardCompat},
      {"manifest-row-align", testManifestRowAlign},
      {"manifest-versions", testManifestVersions},
      // The tensor_map checks run inside existing entries: lit's
      // test/Runtime/runtime-unit.test pins the entry count.
      {"manifest-malformed",
       [] {
         testManifestMalformed();
         testManifestTensorMaps();
       }},
      {"manifest-file", testManifestFile},
      {"launch-shape", testLaunchShape},
      {"grid", testGrid},
      {"kernel-params",
       [] {
         testKernelParams();
         testTensorMapArgs();
       }},
      {"half-conversion", testHalfConversion},
      {"bfloat16-conversion", testBFloat16Conversion},
      {"reference-hand-computed", testReferenceHandComputed},
      {"reference-causal", testReferenceCausal},
      {"reference-empty-keys", testReferenceEmptyKeys},
      {"reference-invariants", testReferenceInvariants},
      {"flops", testFlops},
      {"no-driver", testNoDriver},
      // Version 4 (tensor maps) inside the backward entries, as the
      // forward's tensor_map checks are inside theirs.
      {"backward-manifest-good",
       [] {
         testBackwardManifestGood();
         testBackwardTensorMaps();
         testBackwardTensorMapArgs();
         testBackwardDqAccumTensorMap();
       }},
      {"backward-manifest-malformed",
       [] {
         testBackwardManifestMalformed();
         testBackwardTensorMapErrors();
       }},
      {"reference-backward-finite-differences",
       testReferenceBackwardFiniteDifferences},
      {"random-normal", testRandomNormal},
  };
  int failed = 0, count = 0;
  for (const Test &test : tests) {
    currentFailures = 0;
    test.run();
    ++count;
    failed += currentFailures ? 1 : 0;
    std::printf("%s %s\n", currentFailures ? "FAIL" : "PASS", test.name);
  }
  std::printf("%d tests, %d failed\n", count, failed);
  return failed ? 1 : 0;
}
