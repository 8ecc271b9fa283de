//===- Manifest.cpp - kernel manifests and launch parameters -------------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#include "fa/Runtime/Manifest.h"

#include "Errors.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>

using fa::rt::kDynamic;
using fa::rt::Manifest;
using fa::rt::TensorMapSpec;

namespace {

/// One known key: how many values it takes (-1: one or more) and how to
/// store them. `store` returns an empty string on success, else the message.
struct KeyRule {
  const char *name;
  bool required;
  int arity;
};

const KeyRule kKeyRules[] = {
    {"version", true, 1},       {"kernel", true, 1},      {"ptx", true, 1},
    {"chip", false, 1},         {"dtype", true, 1},       {"o_dtype", false, 1},
    {"causal", true, 1},        {"scale", true, 1},       {"batch", true, 1},
    {"batch_shape", false, -1}, {"seqlen_q", true, 1},    {"seqlen_k", true, 1},
    {"head_dim", true, 1},      {"head_dim_v", true, 1},  {"has_lse", true, 1},
    {"block_m", true, 1},       {"block_n", false, 1},    {"threads", true, 1},
    {"shared_bytes", false, 1}, {"params", false, -1},    {"grid", false, 3},
    {"row_align", false, 1},    {"index_bits", false, 1},
};

const char *const kGridNames[] = {"batch",    "seqlen_q",   "seqlen_k",
                                  "block_m",  "block_n",    "threads",
                                  "head_dim", "head_dim_v", "resident_blocks"};

} // namespace

static std::vector<std::string> splitWords(std::string_view line) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
      ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t')
      ++i;
    if (i > start)
      words.emplace_back(line.substr(start, i - start));
  }
  return words;
}

/// Parses a non-negative decimal integer; `?` gives kDynamic when allowed.
static bool parseCount(const std::string &word, bool allowDynamic,
                       int64_t &out) {
  if (allowDynamic && word == "?") {
    out = kDynamic;
    return true;
  }
  if (word.empty() || word.size() > 18)
    return false;
  int64_t value = 0;
  for (char c : word) {
    if (c < '0' || c > '9')
      return false;
    value = value * 10 + (c - '0');
  }
  out = value;
  return true;
}

/// Parses an `index_bits` value: exactly `32` or `64`.
static bool parseIndexBits(const std::string &word, int64_t &out) {
  if (word != "32" && word != "64")
    return false;
  out = word == "32" ? 32 : 64;
  return true;
}

static bool parseDtype(const std::string &word, faRtDtype &out) {
  if (word == "f16")
    out = FA_RT_DTYPE_F16;
  else if (word == "bf16")
    out = FA_RT_DTYPE_BF16;
  else if (word == "f32")
    out = FA_RT_DTYPE_F32;
  else
    return false;
  return true;
}

static bool parseCausal(const std::string &word, faRtCausal &out) {
  if (word == "none")
    out = FA_RT_CAUSAL_NONE;
  else if (word == "top_left")
    out = FA_RT_CAUSAL_TOP_LEFT;
  else if (word == "bottom_right")
    out = FA_RT_CAUSAL_BOTTOM_RIGHT;
  else
    return false;
  return true;
}

static bool isGridName(std::string_view word) {
  for (const char *name : kGridNames)
    if (word == name)
      return true;
  return false;
}

static bool isGridAtom(std::string_view word) {
  int64_t unused;
  return isGridName(word) || parseCount(std::string(word), false, unused);
}

/// A dim of a scratch buffer after its first (`batch`): a size of the op
/// (seqlen_q, seqlen_k, head_dim, head_dim_v) or a non-negative integer.
static bool isScratchDim(std::string_view word) {
  int64_t unused;
  return word == "seqlen_q" || word == "seqlen_k" || word == "head_dim" ||
         word == "head_dim_v" || parseCount(std::string(word), false, unused);
}

/// A grid expression is an atom (a non-negative integer or one of
/// kGridNames) or f(a,b) of two grid expressions, f one of ceil_div, min
/// and mul. Parses the expression at the start of `rest` and moves `rest`
/// past it; with `atomValue` also evaluates it into `value` (ceil_div by
/// 0 and products over 2^62 are errors, in `error`).
static bool
parseGridExpr(std::string_view &rest,
              const std::function<bool(std::string_view, int64_t &)> *atomValue,
              int64_t &value, std::string &error, int depth = 0) {
  if (depth > 16) {
    error = "nested too deeply";
    return false;
  }
  size_t open = rest.find('(');
  size_t end = rest.find_first_of(",)");
  if (open != std::string_view::npos && open < end) {
    std::string_view name = rest.substr(0, open);
    if (name != "ceil_div" && name != "min" && name != "mul") {
      error = "unknown function '" + std::string(name) + "'";
      return false;
    }
    rest.remove_prefix(open + 1);
    // Two arguments, each followed by its separator.
    int64_t args[2] = {0, 0};
    for (int i = 0; i < 2; ++i) {
      if (!parseGridExpr(rest, atomValue, args[i], error, depth + 1))
        return false;
      const char separator = i == 0 ? ',' : ')';
      if (rest.empty() || rest.front() != separator) {
        error =
            i == 0 ? "expected ',' in " + std::string(name)
                   : "expected ')' after the arguments of " + std::string(name);
        return false;
      }
      rest.remove_prefix(1);
    }
    const int64_t a = args[0], b = args[1];
    if (!atomValue)
      return true;
    if (name == "min") {
      value = std::min(a, b);
    } else if (name == "mul") {
      if (b != 0 && a > (int64_t(1) << 62) / b) {
        error = "product over 2^62";
        return false;
      }
      value = a * b;
    } else {
      if (b <= 0) {
        error = "divides by " + std::to_string(b);
        return false;
      }
      value = (a + b - 1) / b;
    }
    return true;
  }
  std::string_view atom = rest.substr(0, end);
  if (!isGridAtom(atom)) {
    error = atom.empty() ? std::string("expected a term")
                         : "unknown name '" + std::string(atom) + "'";
    return false;
  }
  rest.remove_prefix(atom.size());
  if (atomValue && !(*atomValue)(atom, value)) {
    error = "'" + std::string(atom) + "' has no value here";
    return false;
  }
  return true;
}

static bool isGridExpr(const std::string &word) {
  std::string_view rest(word);
  int64_t unused = 0;
  std::string error;
  return parseGridExpr(rest, nullptr, unused, error) && rest.empty();
}

static std::string dirName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

/// The versions this runtime reads, for the unsupported-version errors.
static const char *const kVersionsRead =
    " (this runtime reads version 1 and 3 forward and version 2 and 4 "
    "attention_backward manifests)";

//===----------------------------------------------------------------------===//
// Tensor maps, forward and backward
//===----------------------------------------------------------------------===//

/// The operands a tensor_map line may name.
static const std::vector<std::string> kForwardMapOperands = {"q", "k", "v",
                                                             "o"};
static const std::vector<std::string> kBackwardMapOperands = {"q", "k", "v",
                                                              "do", "dq_accum"};

/// Reads the values of one `tensor_map` line (`line`) into `spec`.
/// `operands` are the names it may take, `seen` the lines read before it
/// (of the same manifest or kernel section, named by `where` in the
/// duplicate message). Returns the message of the first error, empty when
/// the line is good.
static std::string parseTensorMapLine(const std::vector<std::string> &values,
                                      const std::vector<std::string> &operands,
                                      const std::vector<TensorMapSpec> &seen,
                                      const std::string &where, int line,
                                      TensorMapSpec &spec) {
  if (values.size() != 4)
    return "expected 4 values for 'tensor_map' (OPERAND BOX_COLS BOX_ROWS "
           "SWIZZLE), got " +
           std::to_string(values.size());
  spec = TensorMapSpec();
  spec.operand = values[0];
  spec.line = line;
  if (std::find(operands.begin(), operands.end(), spec.operand) ==
      operands.end()) {
    std::string expected;
    for (size_t i = 0; i < operands.size(); ++i)
      expected += (i == 0                     ? ""
                   : i + 1 == operands.size() ? " or "
                                              : ", ") +
                  operands[i];
    return "invalid value '" + spec.operand +
           "' for 'tensor_map' OPERAND: expected " + expected;
  }
  for (const TensorMapSpec &other : seen)
    if (other.operand == spec.operand)
      return "duplicate tensor_map for '" + spec.operand + "'" + where +
             " (first on line " + std::to_string(other.line) + ")";
  const char *boxNames[] = {"BOX_COLS", "BOX_ROWS"};
  int64_t *boxes[] = {&spec.boxCols, &spec.boxRows};
  for (int i = 0; i < 2; ++i)
    if (!parseCount(values[1 + i], false, *boxes[i]) || *boxes[i] < 1 ||
        *boxes[i] > 256)
      return "invalid value '" + values[1 + i] + "' for 'tensor_map' " +
             boxNames[i] + ": expected an integer in [1, 256]";
  const std::string &swizzle = values[3];
  if (swizzle == "none")
    spec.swizzleBytes = 0;
  else if (swizzle == "32" || swizzle == "64" || swizzle == "128")
    spec.swizzleBytes = std::stoi(swizzle);
  else
    return "invalid value '" + swizzle +
           "' for 'tensor_map' SWIZZLE: expected none, 32, 64 or 128";
  return "";
}

namespace {
/// A tensor map's operand, a contiguous [batch, T, D] tensor: its element
/// type (f32 for the dq_accum scratch), its T (seqlen_q for q, o, do and
/// dq_accum, seqlen_k for k and v) and its D (head_dim for q, k and
/// dq_accum, head_dim_v for v, o and do).
struct MapOperand {
  faRtDtype dtype = FA_RT_DTYPE_F32;
  bool queryRows = false; ///< T = seqlen_q
  bool valueCols = false; ///< D = head_dim_v
};

/// The manifest values a tensor map depends on: element types and head dims.
struct MapTypes {
  faRtDtype dtype, oDtype, doDtype; ///< q/k/v, o, do
  int64_t headDim, headDimV;

  MapOperand operand(const std::string &name) const {
    bool isOut = name == "o" || name == "do";
    MapOperand op;
    op.dtype = name == "o"          ? oDtype
               : name == "do"       ? doDtype
               : name == "dq_accum" ? FA_RT_DTYPE_F32
                                    : dtype;
    op.queryRows = name == "q" || name == "dq_accum" || isOut;
    op.valueCols = name == "v" || isOut;
    return op;
  }
  int64_t cols(const MapOperand &op) const {
    return op.valueCols ? headDimV : headDim;
  }
};

/// A tensor_map rule broken: the line and the message.
struct MapError {
  int line = 0; ///< 0: no error
  std::string message;
};
} // namespace

/// The rules between tensor_map lines and the other keys: each operand in
/// `params` (`paramsWhat` names them in messages: "params", "the params of
/// kernel 'X'"), the lines in params order, and each box against its
/// operand's element type and D.
static MapError checkTensorMapSpecs(const std::vector<TensorMapSpec> &maps,
                                    const std::vector<std::string> &params,
                                    const std::string &paramsWhat,
                                    const MapTypes &types) {
  auto paramIndex = [&](const std::string &name) {
    return std::find(params.begin(), params.end(), name) - params.begin();
  };
  for (const TensorMapSpec &spec : maps)
    if (paramIndex(spec.operand) == static_cast<ptrdiff_t>(params.size()))
      return {spec.line, "tensor_map for '" + spec.operand +
                             "', which is not in " + paramsWhat};
  for (size_t i = 1; i < maps.size(); ++i) {
    const TensorMapSpec &prev = maps[i - 1];
    const TensorMapSpec &spec = maps[i];
    if (paramIndex(spec.operand) < paramIndex(prev.operand))
      return {spec.line, "tensor_map for '" + spec.operand +
                             "' after the one for '" + prev.operand +
                             "' (line " + std::to_string(prev.line) +
                             "): tensor_map lines must be in the order of " +
                             paramsWhat};
  }
  for (const TensorMapSpec &spec : maps) {
    const std::string &name = spec.operand;
    const MapOperand op = types.operand(name);
    int64_t esize = static_cast<int64_t>(fa::rt::dtypeSize(op.dtype));
    int64_t rowBytes = spec.boxCols * esize;
    std::string boxText = "BOX_COLS " + std::to_string(spec.boxCols) + " x " +
                          std::to_string(esize) + " bytes (" +
                          fa::rt::dtypeName(op.dtype) + ") = " +
                          std::to_string(rowBytes) + " bytes";
    if (rowBytes % 16 != 0)
      return {spec.line, "tensor_map '" + name + "': " + boxText +
                             " is not a multiple of 16 bytes"};
    int64_t dim = types.cols(op);
    if (spec.boxCols > dim)
      return {spec.line, "tensor_map '" + name + "': BOX_COLS " +
                             std::to_string(spec.boxCols) + " exceeds " +
                             (op.valueCols ? "head_dim_v " : "head_dim ") +
                             std::to_string(dim)};
    if (spec.swizzleBytes > 0 && rowBytes > spec.swizzleBytes)
      return {spec.line, "tensor_map '" + name + "': " + boxText +
                             " exceeds the " +
                             std::to_string(spec.swizzleBytes) +
                             "-byte swizzle span"};
  }
  return {};
}

/// The cuTensorMapEncodeTiled arguments of one map of kernel `kernel` over
/// its operand's contiguous [batch, T, D] tensor at `address`. An operand
/// with no element is never read: its dims are clamped to >= 1 and it
/// takes `emptyAddress` (the pointer of `emptyName`), so the encode does
/// not fail.
static faRtStatus tensorMapEncodeArgs(const TensorMapSpec &spec,
                                      const MapTypes &types,
                                      const fa::rt::LaunchShape &shape,
                                      uint64_t address, uint64_t emptyAddress,
                                      const std::string &emptyName,
                                      const std::string &kernel,
                                      fa::rt::TensorMapEncodeArgs &a) {
  using fa::rt::reportError;
  const std::string &name = spec.operand;
  const MapOperand op = types.operand(name);
  a = fa::rt::TensorMapEncodeArgs();
  a.operand = name;
  a.dtype = op.dtype;
  const uint64_t esize = fa::rt::dtypeSize(a.dtype);
  struct Dim {
    const char *what;
    int64_t value;
  } dims[3] = {{op.valueCols ? "head_dim_v" : "head_dim", types.cols(op)},
               {op.queryRows ? "seqlen_q" : "seqlen_k",
                op.queryRows ? shape.seqlenQ : shape.seqlenK},
               {"batch", shape.batch}};
  bool empty = false;
  for (const Dim &dim : dims)
    empty |= dim.value <= 0;
  std::string where =
      "tensor map for '" + name + "' (kernel '" + kernel + "'): ";
  for (int i = 0; i < 3; ++i) {
    // Never read when empty: any dims >= 1 do.
    uint64_t value =
        static_cast<uint64_t>(std::max<int64_t>(dims[i].value, 1));
    if (value > fa::rt::kTensorMapMaxDim)
      return reportError(FA_RT_ERROR_SHAPE,
                         where + dims[i].what + " = " + std::to_string(value) +
                             " exceeds the TMA limit of 2^32 - 1 (" +
                             std::to_string(fa::rt::kTensorMapMaxDim) + ")");
    a.globalDim[i] = value;
  }
  // Row stride D * esize (D < 2^32, so no overflow), then batch stride
  // T * row; checked against 2^40 before the multiplication.
  const uint64_t row = a.globalDim[0] * esize;
  if (row >= fa::rt::kTensorMapStrideLimit ||
      a.globalDim[1] > (fa::rt::kTensorMapStrideLimit - 1) / row)
    return reportError(FA_RT_ERROR_SHAPE,
                       where + "a stride of " + std::to_string(a.globalDim[1]) +
                           " x " + std::to_string(row) +
                           " bytes reaches the TMA limit of 2^40 bytes");
  a.globalStrides = {row, a.globalDim[1] * row};
  if (row % 16 != 0)
    return reportError(FA_RT_ERROR_SHAPE,
                       where + "the row stride " + std::to_string(row) +
                           " bytes (" + dims[0].what + " " +
                           std::to_string(a.globalDim[0]) + " x " +
                           std::to_string(esize) +
                           ") is not a multiple of 16 bytes, as TMA needs");
  a.address = empty ? emptyAddress : address;
  if (a.address % 16 != 0)
    return reportError(FA_RT_ERROR_INVALID_ARGUMENT,
                       where + "the address of " + (empty ? emptyName : name) +
                           " must be 16-byte aligned (TMA)");
  a.boxDim = {static_cast<uint32_t>(spec.boxCols),
              static_cast<uint32_t>(spec.boxRows), 1u};
  a.elementStrides = {1u, 1u, 1u};
  a.swizzleBytes = spec.swizzleBytes;
  return FA_RT_SUCCESS;
}

std::string Manifest::ptxPath() const {
  if (!ptx.empty() && ptx[0] == '/')
    return ptx;
  return dir + "/" + ptx;
}

/// Calls fn(lineNo, words) for every non-empty line of `text` (comments
/// stripped); stops at and returns the first non-success status. With
/// `lineCount`, stores the number of lines read.
template <typename Fn>
static faRtStatus forEachLine(std::string_view text, Fn fn,
                              int *lineCount = nullptr) {
  int lineNo = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos)
      end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (end == text.size() && line.empty())
      break;
    ++lineNo;
    if (lineCount)
      *lineCount = lineNo;
    if (size_t hash = line.find('#'); hash != std::string_view::npos)
      line = line.substr(0, hash);
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    std::vector<std::string> words = splitWords(line);
    if (words.empty())
      continue;
    if (faRtStatus status = fn(lineNo, words))
      return status;
  }
  return FA_RT_SUCCESS;
}

faRtStatus fa::rt::parseManifest(std::string_view text,
                                 const std::string &fileName,
                                 Manifest &manifest) {
  manifest = Manifest();
  manifest.path = fileName;
  manifest.dir = dirName(fileName);

  std::map<std::string, int> seenAt; // key -> line
  int lineNo = 0;
  auto fail = [&](int line, const std::string &message) {
    return reportError(FA_RT_ERROR_MANIFEST,
                       fileName + ":" + std::to_string(line) + ": " + message);
  };

  faRtStatus lineStatus = forEachLine(
      text,
      [&](int line, const std::vector<std::string> &words) -> faRtStatus {
        lineNo = line;
        const std::string &key = words[0];
        std::vector<std::string> values(words.begin() + 1, words.end());

        if (key == "tensor_map") {
          // One line per map, so not a KeyRule (those are once per file);
          // the rules that need other keys are checked after the last line.
          TensorMapSpec spec;
          std::string error = parseTensorMapLine(
              values, kForwardMapOperands, manifest.tensorMaps, "", lineNo,
              spec);
          if (!error.empty())
            return fail(lineNo, error);
          manifest.tensorMaps.push_back(std::move(spec));
          return FA_RT_SUCCESS;
        }

        // A backward manifest with a forward version (before its repeated
        // 'kernel' keys get a less helpful message).
        if (key == "op" &&
            values == std::vector<std::string>{"attention_backward"})
          return fail(lineNo,
                      "'op attention_backward' needs manifest version 2 or "
                      "4 (the backward format); versions 1 and 3 are forward "
                      "manifests, which have no 'op' key");
        const KeyRule *rule = nullptr;
        for (const KeyRule &candidate : kKeyRules)
          if (key == candidate.name)
            rule = &candidate;
        if (!rule)
          return FA_RT_SUCCESS; // Unknown keys are for newer readers.
        if (auto it = seenAt.find(key); it != seenAt.end())
          return fail(lineNo, "duplicate key '" + key + "' (first on line " +
                                  std::to_string(it->second) + ")");
        seenAt[key] = lineNo;
        if (rule->arity >= 0 && static_cast<int>(values.size()) != rule->arity)
          return fail(lineNo, "expected " + std::to_string(rule->arity) +
                                  " value" + (rule->arity == 1 ? "" : "s") +
                                  " for '" + key + "', got " +
                                  std::to_string(values.size()));
        // An empty batch_shape is an op without batch dims (batch 1).
        if (rule->arity < 0 && values.empty() && key != "batch_shape")
          return fail(lineNo, "expected at least one value for '" + key + "'");

        auto invalid = [&](const std::string &value, const char *expected) {
          return fail(lineNo, "invalid value '" + value + "' for '" + key +
                                  "': expected " + expected);
        };
        auto count = [&](bool allowDynamic, int64_t &out) {
          return parseCount(values[0], allowDynamic, out);
        };
        const std::string &value = values[0];

        if (key == "version") {
          if (!count(false, manifest.version))
            return invalid(value, "a non-negative integer");
          // 1: no tensor maps; 3: the same format with tensor_map lines,
          // so that a reader that predates them (and ignores unknown keys)
          // rejects the kernel instead of launching it without its maps.
          if (manifest.version != 1 && manifest.version != 3)
            return fail(lineNo,
                        "unsupported manifest version " + value + kVersionsRead);
        } else if (key == "kernel") {
          manifest.kernel = value;
        } else if (key == "ptx") {
          manifest.ptx = value;
        } else if (key == "chip") {
          manifest.chip = value;
        } else if (key == "dtype") {
          if (!parseDtype(value, manifest.dtype))
            return invalid(value, "f16, bf16 or f32");
        } else if (key == "o_dtype") {
          if (!parseDtype(value, manifest.oDtype))
            return invalid(value, "f16, bf16 or f32");
        } else if (key == "causal") {
          if (!parseCausal(value, manifest.causal))
            return invalid(value, "none, top_left or bottom_right");
        } else if (key == "scale") {
          const char *begin = value.c_str();
          char *stop = nullptr;
          errno = 0;
          manifest.scale = std::strtod(begin, &stop);
          if (stop == begin || *stop != '\0' || errno == ERANGE ||
              !std::isfinite(manifest.scale))
            return invalid(value, "a finite number");
        } else if (key == "batch") {
          if (!count(true, manifest.batch))
            return invalid(value, "a non-negative integer or '?'");
        } else if (key == "batch_shape") {
          for (const std::string &dim : values) {
            int64_t parsed;
            if (!parseCount(dim, true, parsed))
              return invalid(dim, "a non-negative integer or '?'");
            manifest.batchShape.push_back(parsed);
          }
        } else if (key == "seqlen_q") {
          if (!count(true, manifest.seqlenQ))
            return invalid(value, "a non-negative integer or '?'");
        } else if (key == "seqlen_k") {
          if (!count(true, manifest.seqlenK))
            return invalid(value, "a non-negative integer or '?'");
        } else if (key == "head_dim" || key == "head_dim_v" ||
                   key == "block_m" || key == "threads") {
          int64_t parsed;
          if (!count(false, parsed) || parsed == 0)
            return invalid(value, "a positive integer");
          if (key == "head_dim")
            manifest.headDim = parsed;
          else if (key == "head_dim_v")
            manifest.headDimV = parsed;
          else if (key == "block_m")
            manifest.blockM = parsed;
          else
            manifest.threads = parsed;
        } else if (key == "block_n") {
          if (!count(false, manifest.blockN))
            return invalid(value, "a non-negative integer");
        } else if (key == "shared_bytes") {
          if (!count(false, manifest.sharedBytes))
            return invalid(value, "a non-negative integer");
        } else if (key == "row_align") {
          if (!count(false, manifest.rowAlign))
            return invalid(value, "a non-negative integer");
        } else if (key == "index_bits") {
          if (!parseIndexBits(value, manifest.indexBits))
            return invalid(value, "32 or 64");
        } else if (key == "has_lse") {
          if (value != "0" && value != "1")
            return invalid(value, "0 or 1");
          manifest.hasLse = value == "1";
        } else if (key == "params") {
          manifest.params = values;
        } else if (key == "grid") {
          for (int i = 0; i < 3; ++i) {
            if (!isGridExpr(values[i]))
              return invalid(values[i],
                             "an integer, a size name (batch, seqlen_q, "
                             "block_m, resident_blocks, ...) or "
                             "ceil_div(a,b), min(a,b) or mul(a,b) of such");
            manifest.grid[i] = values[i];
          }
        }
        return FA_RT_SUCCESS;
      },
      &lineNo);
  if (lineStatus)
    return lineStatus;

  int lastLine = lineNo > 0 ? lineNo : 1;
  for (const KeyRule &rule : kKeyRules)
    if (rule.required && !seenAt.count(rule.name))
      return fail(lastLine,
                  std::string("missing required key '") + rule.name + "'");

  // Defaults for optional keys, then the rules between keys.
  if (!seenAt.count("o_dtype"))
    manifest.oDtype = manifest.dtype;
  if (!seenAt.count("grid"))
    manifest.grid = {"ceil_div(seqlen_q,block_m)", "batch", "1"};

  std::vector<std::string> expectedParams = {"q", "k", "v", "o"};
  if (manifest.hasLse)
    expectedParams.push_back("lse");
  if (auto it = seenAt.find("params"); it != seenAt.end()) {
    if (manifest.params != expectedParams) {
      std::string want;
      for (const std::string &p : expectedParams)
        want += (want.empty() ? "" : " ") + p;
      std::string got;
      for (const std::string &p : manifest.params)
        got += (got.empty() ? "" : " ") + p;
      return fail(it->second, "expected params '" + want + "' (has_lse " +
                                  (manifest.hasLse ? "1" : "0") + "), got '" +
                                  got + "'");
    }
  }
  manifest.params = expectedParams;

  if (manifest.threads > 1024)
    return fail(seenAt["threads"], "expected at most 1024 threads, got " +
                                       std::to_string(manifest.threads));

  // Tensor maps: version 3 exactly when there are any, in params order
  // (the kernel takes them in that order), then the box against the
  // operand's element type and row.
  if (manifest.version == 1 && !manifest.tensorMaps.empty())
    return fail(manifest.tensorMaps.front().line,
                "tensor_map needs manifest version 3 (this manifest is "
                "version 1)");
  if (manifest.version == 3 && manifest.tensorMaps.empty())
    return fail(seenAt["version"],
                "manifest version 3 needs at least one 'tensor_map' line "
                "(version 1 is the format without tensor maps)");
  MapError mapError = checkTensorMapSpecs(
      manifest.tensorMaps, manifest.params, "params (q, k, v, o)",
      {manifest.dtype, manifest.oDtype, manifest.oDtype, manifest.headDim,
       manifest.headDimV});
  if (mapError.line)
    return fail(mapError.line, mapError.message);

  if (auto it = seenAt.find("batch_shape");
      it != seenAt.end() && manifest.batch != kDynamic) {
    // Dims have up to 18 digits, so the product may not fit int64: once it
    // exceeds batch it is only marked `over` (a mismatch), unless a later
    // 0 dim makes it 0.
    int64_t product = 1;
    bool allStatic = true, over = false;
    for (int64_t dim : manifest.batchShape) {
      allStatic &= dim != kDynamic;
      if (dim == kDynamic)
        continue;
      if (dim == 0) {
        product = 0;
        over = false;
      } else if (!over && product > manifest.batch / dim) {
        over = product != 0;
      } else if (!over) {
        product *= dim;
      }
    }
    if (allStatic && (over || product != manifest.batch))
      return fail(it->second,
                  "batch_shape has product " +
                      (over ? std::string("over ") +
                                  std::to_string(manifest.batch)
                            : std::to_string(product)) +
                      ", but batch is " + std::to_string(manifest.batch));
  }
  return FA_RT_SUCCESS;
}

faRtStatus fa::rt::readManifestFile(const std::string &path,
                                    Manifest &manifest) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return reportError(FA_RT_ERROR_IO, "cannot open manifest '" + path + "'");
  std::ostringstream contents;
  contents << file.rdbuf();
  if (file.bad())
    return reportError(FA_RT_ERROR_IO, "cannot read manifest '" + path + "'");
  return parseManifest(contents.str(), path, manifest);
}

faRtStatus fa::rt::checkLaunchShape(const Manifest &manifest,
                                    const LaunchShape &shape) {
  struct Dim {
    const char *name;
    int64_t given;
    int64_t expected;
  } dims[] = {{"batch", shape.batch, manifest.batch},
              {"seqlen_q", shape.seqlenQ, manifest.seqlenQ},
              {"seqlen_k", shape.seqlenK, manifest.seqlenK}};
  for (const Dim &dim : dims) {
    if (dim.given < 0)
      return reportError(FA_RT_ERROR_SHAPE, std::string("expected ") +
                                                dim.name + " >= 0, got " +
                                                std::to_string(dim.given));
    if (dim.expected != kDynamic && dim.given != dim.expected)
      return reportError(FA_RT_ERROR_SHAPE,
                         "kernel '" + manifest.kernel + "' (" + manifest.path +
                             ") was compiled for " + dim.name + " " +
                             std::to_string(dim.expected) + ", got " +
                             std::to_string(dim.given));
  }
  // 32-bit indices: each element offset the kernel computes must fit in an
  // i32, so every tensor (q, k, v, o, lse, and the backward's do, dq, dk,
  // dv and scratch, none larger than these) must have fewer than 2^31
  // elements.
  if (manifest.indexBits == 32) {
    struct Tensor {
      const char *name;
      int64_t rows, cols;
    } tensors[] = {{"q", shape.seqlenQ, manifest.headDim},
                   {"k", shape.seqlenK, manifest.headDim},
                   {"v", shape.seqlenK, manifest.headDimV},
                   {"o", shape.seqlenQ, manifest.headDimV}};
    for (const Tensor &t : tensors) {
      // Non-negative (checked above); below 2^126 and then 2^94: no
      // overflow.
      const unsigned __int128 limit = static_cast<unsigned __int128>(1) << 31;
      unsigned __int128 elements =
          static_cast<unsigned __int128>(shape.batch) * t.rows;
      if (elements < limit)
        elements *= static_cast<unsigned __int128>(t.cols);
      if (elements >= limit)
        return reportError(
            FA_RT_ERROR_SHAPE,
            "kernel '" + manifest.kernel + "' (" + manifest.path +
                ") was compiled with 32-bit indices (index_bits 32) and "
                "takes tensors of fewer than 2^31 elements, got " +
                t.name + " of " + std::to_string(shape.batch) + " x " +
                std::to_string(t.rows) + " x " + std::to_string(t.cols) +
                " (compile with index-bitwidth=64)");
    }
  }
  return FA_RT_SUCCESS;
}

int64_t fa::rt::batchChunk(const Manifest &manifest, const LaunchShape &shape) {
  if (manifest.batch != kDynamic)
    return std::max<int64_t>(shape.batch, 1);
  int64_t step = 65535;
  if (manifest.indexBits == 32) {
    // Elements of one batch entry of the largest of q, k, v and o.
    int64_t rows = std::max<int64_t>({shape.seqlenQ, shape.seqlenK, 1});
    int64_t cols = std::max<int64_t>({manifest.headDim, manifest.headDimV, 1});
    const int64_t limit = (int64_t(1) << 31) - 1;
    if (rows <= limit / cols)
      step = std::min(step, limit / (rows * cols));
    else
      step = 1; // one batch entry is too large: checkLaunchShape says so
  }
  return std::max<int64_t>(step, 1);
}

faRtStatus fa::rt::checkChunkedLaunchShape(const Manifest &manifest,
                                           const LaunchShape &shape) {
  LaunchShape first = shape;
  first.batch = std::min(shape.batch, batchChunk(manifest, shape));
  return checkLaunchShape(manifest, first);
}

static int64_t gridAtomValue(std::string_view atom, const Manifest &manifest,
                             const fa::rt::LaunchShape &shape) {
  if (atom == "batch")
    return shape.batch;
  if (atom == "seqlen_q")
    return shape.seqlenQ;
  if (atom == "seqlen_k")
    return shape.seqlenK;
  if (atom == "block_m")
    return manifest.blockM;
  if (atom == "block_n")
    return manifest.blockN;
  if (atom == "threads")
    return manifest.threads;
  if (atom == "head_dim")
    return manifest.headDim;
  if (atom == "head_dim_v")
    return manifest.headDimV;
  int64_t value = 0;
  parseCount(std::string(atom), false, value); // Checked when parsed.
  return value;
}

bool fa::rt::gridUsesResidentBlocks(const Manifest &manifest) {
  for (const std::string &expr : manifest.grid)
    if (expr.find("resident_blocks") != std::string::npos)
      return true;
  return false;
}

faRtStatus fa::rt::computeGrid(const Manifest &manifest,
                               const LaunchShape &shape,
                               std::array<uint32_t, 3> &grid,
                               int64_t residentBlocks) {
  static const uint32_t kLimits[3] = {2147483647u, 65535u, 65535u};
  const std::function<bool(std::string_view, int64_t &)> atomValue =
      [&](std::string_view atom, int64_t &value) {
        if (atom == "resident_blocks") {
          value = residentBlocks;
          return residentBlocks > 0;
        }
        value = gridAtomValue(atom, manifest, shape);
        return true;
      };
  for (int i = 0; i < 3; ++i) {
    const std::string &expr = manifest.grid[i];
    std::string_view rest(expr);
    int64_t value = 0;
    std::string error;
    if (!parseGridExpr(rest, &atomValue, value, error))
      return reportError(FA_RT_ERROR_MANIFEST, manifest.path +
                                                   ": grid expression '" +
                                                   expr + "': " + error);
    if (value > kLimits[i])
      return reportError(FA_RT_ERROR_SHAPE, std::string("grid dim ") +
                                                "xyz"[i] + " = " + expr +
                                                " = " + std::to_string(value) +
                                                " exceeds the CUDA limit " +
                                                std::to_string(kLimits[i]));
    grid[i] = static_cast<uint32_t>(value);
  }
  return FA_RT_SUCCESS;
}

std::vector<int64_t>
fa::rt::rowMajorStrides(const std::vector<int64_t> &sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t i = sizes.size(); i > 1; --i)
    strides[i - 2] = strides[i - 1] * sizes[i - 1];
  return strides;
}

void fa::rt::appendMemRefParams(std::vector<uint64_t> &params, uint64_t ptr,
                                int64_t offset,
                                const std::vector<int64_t> &sizes,
                                const std::vector<int64_t> &strides) {
  params.push_back(ptr); // allocated
  params.push_back(ptr); // aligned
  params.push_back(static_cast<uint64_t>(offset));
  for (int64_t size : sizes)
    params.push_back(static_cast<uint64_t>(size));
  for (int64_t stride : strides)
    params.push_back(static_cast<uint64_t>(stride));
}

std::vector<uint64_t> fa::rt::buildKernelParams(const Manifest &manifest,
                                                const LaunchShape &shape,
                                                const TensorPointers &tensors) {
  const int64_t b = shape.batch, tq = shape.seqlenQ, tk = shape.seqlenK;
  const int64_t d = manifest.headDim, dv = manifest.headDimV;
  std::vector<uint64_t> params;
  auto add = [&](uint64_t ptr, std::vector<int64_t> sizes) {
    appendMemRefParams(params, ptr, 0, sizes, rowMajorStrides(sizes));
  };
  add(tensors.q, {b, tq, d});
  add(tensors.k, {b, tk, d});
  add(tensors.v, {b, tk, dv});
  add(tensors.o, {b, tq, dv});
  if (manifest.hasLse)
    add(tensors.lse, {b, tq});
  return params;
}

faRtStatus fa::rt::buildTensorMapArgs(const Manifest &manifest,
                                      const LaunchShape &shape,
                                      const TensorPointers &tensors,
                                      std::vector<TensorMapEncodeArgs> &args) {
  args.clear();
  const MapTypes types{manifest.dtype, manifest.oDtype, manifest.oDtype,
                       manifest.headDim, manifest.headDimV};
  for (const TensorMapSpec &spec : manifest.tensorMaps) {
    const std::string &name = spec.operand;
    const uint64_t ptr = name == "q"   ? tensors.q
                         : name == "k" ? tensors.k
                         : name == "v" ? tensors.v
                                       : tensors.o;
    TensorMapEncodeArgs a;
    if (faRtStatus status = tensorMapEncodeArgs(
            spec, types, shape, ptr, tensors.q, "q", manifest.kernel, a))
      return status;
    args.push_back(std::move(a));
  }
  return FA_RT_SUCCESS;
}

const char *fa::rt::dtypeName(faRtDtype dtype) {
  switch (dtype) {
  case FA_RT_DTYPE_F16:
    return "f16";
  case FA_RT_DTYPE_BF16:
    return "bf16";
  case FA_RT_DTYPE_F32:
    return "f32";
  }
  return "?";
}

const char *fa::rt::causalName(faRtCausal causal) {
  switch (causal) {
  case FA_RT_CAUSAL_NONE:
    return "none";
  case FA_RT_CAUSAL_TOP_LEFT:
    return "top_left";
  case FA_RT_CAUSAL_BOTTOM_RIGHT:
    return "bottom_right";
  }
  return "?";
}

size_t fa::rt::dtypeSize(faRtDtype dtype) {
  return dtype == FA_RT_DTYPE_F32 ? 4 : 2;
}

//===----------------------------------------------------------------------===//
// Backward manifests
//===----------------------------------------------------------------------===//

faRtStatus fa::rt::manifestKind(std::string_view text,
                                const std::string &fileName,
                                ManifestKind &kind) {
  std::string version, op;
  forEachLine(text, [&](int, const std::vector<std::string> &words) {
    if (words.size() == 2 && words[0] == "version" && version.empty())
      version = words[1];
    if (words.size() == 2 && words[0] == "op" && op.empty())
      op = words[1];
    return FA_RT_SUCCESS;
  });
  if (version == "1" || version == "3") {
    kind = ManifestKind::Forward;
    return FA_RT_SUCCESS;
  }
  if ((version == "2" || version == "4") && op == "attention_backward") {
    kind = ManifestKind::Backward;
    return FA_RT_SUCCESS;
  }
  if (version.empty())
    return reportError(FA_RT_ERROR_MANIFEST,
                       fileName + ": missing required key 'version'");
  if ((version == "2" || version == "4") && op.empty())
    return reportError(FA_RT_ERROR_MANIFEST,
                       fileName + ": version " + version +
                           " is an attention_backward manifest version, "
                           "but the manifest has no 'op attention_backward' "
                           "line");
  return reportError(FA_RT_ERROR_MANIFEST,
                     fileName + ": unsupported manifest version " + version +
                         (op.empty() ? std::string() : " op " + op) +
                         kVersionsRead);
}

faRtStatus fa::rt::readManifestKind(const std::string &path,
                                    ManifestKind &kind) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return reportError(FA_RT_ERROR_IO, "cannot open manifest '" + path + "'");
  std::ostringstream contents;
  contents << file.rdbuf();
  return manifestKind(contents.str(), path, kind);
}

std::vector<int64_t> fa::rt::tensorSizes(const std::string &name,
                                         const LaunchShape &shape,
                                         int64_t headDim, int64_t headDimV) {
  const int64_t b = shape.batch, tq = shape.seqlenQ, tk = shape.seqlenK;
  if (name == "q" || name == "dq" || name == "dq_accum")
    return {b, tq, headDim};
  if (name == "k" || name == "dk")
    return {b, tk, headDim};
  if (name == "v" || name == "dv")
    return {b, tk, headDimV};
  if (name == "o" || name == "do")
    return {b, tq, headDimV};
  if (name == "lse" || name == "delta")
    return {b, tq};
  return {};
}

std::vector<int64_t>
fa::rt::backwardTensorSizes(const BackwardManifest &manifest,
                            const std::string &name, const LaunchShape &shape) {
  std::vector<int64_t> sizes =
      tensorSizes(name, shape, manifest.headDim, manifest.headDimV);
  if (!sizes.empty())
    return sizes;
  Manifest view;
  view.headDim = manifest.headDim;
  view.headDimV = manifest.headDimV;
  for (const ScratchBuffer &buffer : manifest.scratch)
    if (buffer.name == name)
      for (const std::string &dim : buffer.dims)
        sizes.push_back(gridAtomValue(dim, view, shape));
  return sizes;
}

/// Elements of one batch entry of each scratch buffer.
static std::vector<std::pair<std::string, int64_t>>
scratchBatchSpans(const fa::rt::BackwardManifest &manifest,
                  const fa::rt::LaunchShape &shape) {
  std::vector<std::pair<std::string, int64_t>> spans;
  for (const fa::rt::ScratchBuffer &buffer : manifest.scratch) {
    std::vector<int64_t> sizes =
        fa::rt::backwardTensorSizes(manifest, buffer.name, shape);
    int64_t span = 1;
    for (size_t d = 1; d < sizes.size(); ++d)
      span = sizes[d] > 0 && span > INT64_MAX / sizes[d] ? INT64_MAX
                                                         : span * sizes[d];
    spans.emplace_back(buffer.name, span);
  }
  return spans;
}

int64_t fa::rt::backwardBatchChunk(const BackwardManifest &manifest,
                                   const LaunchShape &shape) {
  int64_t step = batchChunk(manifest.kernelView(0), shape);
  if (manifest.batch != kDynamic || manifest.indexBits != 32)
    return step;
  const int64_t limit = (int64_t(1) << 31) - 1;
  for (const auto &[name, span] : scratchBatchSpans(manifest, shape))
    if (span > 0)
      step = std::min(step, std::max<int64_t>(limit / span, 1));
  return step;
}

faRtStatus
fa::rt::checkBackwardChunkedLaunchShape(const BackwardManifest &manifest,
                                        const LaunchShape &shape) {
  if (faRtStatus status =
          checkChunkedLaunchShape(manifest.kernelView(0), shape))
    return status;
  if (manifest.indexBits != 32)
    return FA_RT_SUCCESS;
  for (const auto &[name, span] : scratchBatchSpans(manifest, shape))
    if (span > (int64_t(1) << 31) - 1)
      return reportError(
          FA_RT_ERROR_SHAPE,
          "kernel '" + manifest.kernels[0].kernel + "' (" + manifest.path +
              ") was compiled with 32-bit indices (index_bits 32) and "
              "takes tensors of fewer than 2^31 elements, got scratch "
              "buffer " +
              name + " of " + std::to_string(span) +
              " elements per batch entry (compile with index-bitwidth=64)");
  return FA_RT_SUCCESS;
}

std::string fa::rt::BackwardManifest::ptxPath() const {
  if (!ptx.empty() && ptx[0] == '/')
    return ptx;
  return dir + "/" + ptx;
}

Manifest fa::rt::BackwardManifest::kernelView(size_t i) const {
  Manifest view;
  view.path = path;
  view.dir = dir;
  view.version = version;
  view.kernel = kernels[i].kernel;
  view.ptx = ptx;
  view.chip = chip;
  view.dtype = dtype;
  view.oDtype = oDtype;
  view.causal = causal;
  view.scale = scale;
  view.batch = batch;
  view.batchShape = batchShape;
  view.seqlenQ = seqlenQ;
  view.seqlenK = seqlenK;
  view.headDim = headDim;
  view.headDimV = headDimV;
  view.rowAlign = rowAlign;
  view.indexBits = indexBits;
  view.blockM = kernels[i].blockM;
  view.blockN = kernels[i].blockN;
  view.threads = kernels[i].threads;
  view.sharedBytes = kernels[i].sharedBytes;
  view.params = kernels[i].params;
  view.grid = kernels[i].grid;
  return view;
}

faRtStatus fa::rt::parseBackwardManifest(std::string_view text,
                                         const std::string &fileName,
                                         BackwardManifest &manifest) {
  manifest = BackwardManifest();
  manifest.path = fileName;
  manifest.dir = dirName(fileName);
  auto fail = [&](int line, const std::string &message) {
    return reportError(FA_RT_ERROR_MANIFEST,
                       fileName + ":" + std::to_string(line) + ": " + message);
  };
  static const char *const headerRequired[] = {
      "version", "op",    "name",     "ptx",      "dtype",    "causal",
      "scale",   "batch", "seqlen_q", "seqlen_k", "head_dim", "head_dim_v"};
  static const char *const headerOptional[] = {
      "chip",     "o_dtype",     "do_dtype",      "dq_dtype",  "dk_dtype",
      "dv_dtype", "batch_shape", "deterministic", "row_align", "index_bits"};
  static const char *const kernelKeys[] = {"threads",      "block_m", "block_n",
                                           "shared_bytes", "params",  "grid"};
  auto isIn = [](const std::string &key, auto &list) {
    for (const char *name : list)
      if (key == name)
        return true;
    return false;
  };

  std::map<std::string, int> seenAt;       // header key -> line
  std::map<std::string, int> kernelSeenAt; // current section key -> line
  int kernelLine = 0, lastLine = 1;
  auto closeKernel = [&]() -> faRtStatus {
    if (manifest.kernels.empty())
      return FA_RT_SUCCESS;
    for (const char *key : {"threads", "params", "grid"})
      if (!kernelSeenAt.count(key))
        return fail(kernelLine, "kernel '" + manifest.kernels.back().kernel +
                                    "' lacks '" + key + "'");
    return FA_RT_SUCCESS;
  };

  faRtStatus status = forEachLine(
      text,
      [&](int lineNo, const std::vector<std::string> &words) -> faRtStatus {
        lastLine = lineNo;
        const std::string &key = words[0];
        std::vector<std::string> values(words.begin() + 1, words.end());
        auto invalid = [&](const std::string &value, const char *expected) {
          return fail(lineNo, "invalid value '" + value + "' for '" + key +
                                  "': expected " + expected);
        };
        auto expectOne = [&]() -> faRtStatus {
          if (values.size() != 1)
            return fail(lineNo, "expected 1 value for '" + key + "', got " +
                                    std::to_string(values.size()));
          return FA_RT_SUCCESS;
        };

        if (key == "kernel") {
          if (faRtStatus s = closeKernel())
            return s;
          if (faRtStatus s = expectOne())
            return s;
          manifest.kernels.emplace_back();
          manifest.kernels.back().kernel = values[0];
          kernelSeenAt.clear();
          kernelLine = lineNo;
          return FA_RT_SUCCESS;
        }
        if (key == "scratch") {
          if (!manifest.kernels.empty())
            return fail(lineNo, "'scratch' after the first kernel section");
          if (values.size() < 2)
            return fail(lineNo, "expected 'scratch NAME DTYPE DIM...', got " +
                                    std::to_string(values.size()) + " values");
          ScratchBuffer buffer;
          buffer.name = values[0];
          if (!parseDtype(values[1], buffer.dtype))
            return invalid(values[1], "f16, bf16 or f32");
          // Launches of batch chunks take each scratch buffer's rows of
          // their batches (backwardChunkPointers): batch first, and only
          // there.
          for (size_t i = 2; i < values.size(); ++i) {
            if (i == 2 && values[i] != "batch")
              return invalid(values[i], "batch (a scratch buffer's first dim)");
            if (i > 2 && !isScratchDim(values[i]))
              return invalid(values[i], "seqlen_q, seqlen_k, head_dim, "
                                        "head_dim_v or an integer");
            buffer.dims.push_back(values[i]);
          }
          if (buffer.dims.empty())
            return fail(lineNo, "scratch buffer '" + buffer.name +
                                    "' has no dims (expected batch first)");
          for (const ScratchBuffer &other : manifest.scratch)
            if (other.name == buffer.name)
              return fail(lineNo,
                          "duplicate scratch buffer '" + buffer.name + "'");
          if (!tensorSizes(buffer.name, LaunchShape(), 1, 1).empty() &&
              buffer.name != "delta" && buffer.name != "dq_accum")
            return fail(lineNo, "scratch buffer '" + buffer.name +
                                    "' shadows an operand of the op");
          // delta and dq_accum have one shape the kernels take them in
          // (their memref params and dq_accum's tensor map).
          if (buffer.name == "delta" || buffer.name == "dq_accum") {
            std::vector<std::string> want = {"batch", "seqlen_q"};
            if (buffer.name == "dq_accum")
              want.push_back("head_dim");
            if (buffer.dtype != FA_RT_DTYPE_F32 || buffer.dims != want) {
              std::string expected = "f32";
              for (const std::string &dim : want)
                expected += " " + dim;
              std::string got = values[1];
              for (size_t i = 2; i < values.size(); ++i)
                got += " " + values[i];
              return fail(lineNo, "scratch buffer '" + buffer.name +
                                      "' must be '" + expected +
                                      "' (the shape its kernels take), got '" +
                                      got + "'");
            }
          }
          manifest.scratch.push_back(std::move(buffer));
          return FA_RT_SUCCESS;
        }

        bool inKernel = !manifest.kernels.empty();
        if (key == "tensor_map") {
          // Per kernel section, once per operand; checked against the
          // section's params and the header after the last line.
          if (!inKernel)
            return fail(lineNo, "'tensor_map' outside a kernel section (a "
                                "tensor map belongs to the kernel that "
                                "takes it: after its 'params' line)");
          KernelLaunch &kernel = manifest.kernels.back();
          TensorMapSpec spec;
          std::string error = parseTensorMapLine(
              values, kBackwardMapOperands, kernel.tensorMaps,
              " in kernel '" + kernel.kernel + "'", lineNo, spec);
          if (!error.empty())
            return fail(lineNo, error);
          kernel.tensorMaps.push_back(std::move(spec));
          return FA_RT_SUCCESS;
        }
        if (inKernel && isIn(key, kernelKeys)) {
          if (auto it = kernelSeenAt.find(key); it != kernelSeenAt.end())
            return fail(lineNo, "duplicate key '" + key + "' in kernel '" +
                                    manifest.kernels.back().kernel +
                                    "' (first on line " +
                                    std::to_string(it->second) + ")");
          kernelSeenAt[key] = lineNo;
          KernelLaunch &kernel = manifest.kernels.back();
          if (key == "params") {
            if (values.empty())
              return fail(lineNo, "expected at least one value for 'params'");
            kernel.params = values;
            return FA_RT_SUCCESS;
          }
          if (key == "grid") {
            if (values.size() != 3)
              return fail(lineNo, "expected 3 values for 'grid', got " +
                                      std::to_string(values.size()));
            for (int i = 0; i < 3; ++i) {
              if (!isGridExpr(values[i]))
                return invalid(values[i],
                               "an integer, a size name (batch, seqlen_q, "
                               "block_m, resident_blocks, ...) or "
                               "ceil_div(a,b), min(a,b) or mul(a,b) of such");
              kernel.grid[i] = values[i];
            }
            return FA_RT_SUCCESS;
          }
          if (faRtStatus s = expectOne())
            return s;
          int64_t parsed;
          if (!parseCount(values[0], false, parsed))
            return invalid(values[0], "a non-negative integer");
          if (key == "threads") {
            if (parsed == 0 || parsed > 1024)
              return invalid(values[0], "an integer in [1, 1024]");
            kernel.threads = parsed;
          } else if (key == "block_m") {
            kernel.blockM = parsed;
          } else if (key == "block_n") {
            kernel.blockN = parsed;
          } else {
            kernel.sharedBytes = parsed;
          }
          return FA_RT_SUCCESS;
        }
        if (!isIn(key, headerRequired) && !isIn(key, headerOptional))
          return FA_RT_SUCCESS; // Unknown keys are for newer readers.
        if (inKernel)
          return fail(lineNo, "header key '" + key +
                                  "' after the first kernel section");
        if (auto it = seenAt.find(key); it != seenAt.end())
          return fail(lineNo, "duplicate key '" + key + "' (first on line " +
                                  std::to_string(it->second) + ")");
        seenAt[key] = lineNo;
        if (key == "batch_shape") { // empty: no batch dims
          for (const std::string &dim : values) {
            int64_t parsed;
            if (!parseCount(dim, true, parsed))
              return invalid(dim, "a non-negative integer or '?'");
            manifest.batchShape.push_back(parsed);
          }
          return FA_RT_SUCCESS;
        }
        if (faRtStatus s = expectOne())
          return s;
        const std::string &value = values[0];
        if (key == "version") {
          // 2: no tensor maps; 4: the same format with tensor_map lines in
          // kernel sections, so that a reader that predates them rejects
          // the manifest instead of launching kernels without their maps.
          if (value != "2" && value != "4")
            return fail(lineNo, "expected version 2 or 4 for a backward "
                                "manifest, got " +
                                    value);
          manifest.version = value == "2" ? 2 : 4;
        } else if (key == "op") {
          if (value != "attention_backward")
            return invalid(value, "attention_backward");
        } else if (key == "name") {
          manifest.name = value;
        } else if (key == "ptx") {
          manifest.ptx = value;
        } else if (key == "chip") {
          manifest.chip = value;
        } else if (key == "causal") {
          if (!parseCausal(value, manifest.causal))
            return invalid(value, "none, top_left or bottom_right");
        } else if (key == "scale") {
          const char *begin = value.c_str();
          char *stop = nullptr;
          errno = 0;
          manifest.scale = std::strtod(begin, &stop);
          if (stop == begin || *stop != '\0' || errno == ERANGE ||
              !std::isfinite(manifest.scale))
            return invalid(value, "a finite number");
        } else if (key == "batch" || key == "seqlen_q" || key == "seqlen_k") {
          int64_t parsed;
          if (!parseCount(value, true, parsed))
            return invalid(value, "a non-negative integer or '?'");
          (key == "batch"      ? manifest.batch
           : key == "seqlen_q" ? manifest.seqlenQ
                               : manifest.seqlenK) = parsed;
        } else if (key == "head_dim" || key == "head_dim_v") {
          int64_t parsed;
          if (!parseCount(value, false, parsed) || parsed == 0)
            return invalid(value, "a positive integer");
          (key == "head_dim" ? manifest.headDim : manifest.headDimV) = parsed;
        } else if (key == "deterministic") {
          if (value != "0" && value != "1")
            return invalid(value, "0 or 1");
          manifest.deterministic = value == "1";
        } else if (key == "row_align") {
          if (!parseCount(value, false, manifest.rowAlign))
            return invalid(value, "a non-negative integer");
        } else if (key == "index_bits") {
          if (!parseIndexBits(value, manifest.indexBits))
            return invalid(value, "32 or 64");
        } else {
          faRtDtype dtype;
          if (!parseDtype(value, dtype))
            return invalid(value, "f16, bf16 or f32");
          if (key == "dtype")
            manifest.dtype = dtype;
          else if (key == "o_dtype")
            manifest.oDtype = dtype;
          else if (key == "do_dtype")
            manifest.doDtype = dtype;
          else if (key == "dq_dtype")
            manifest.dqDtype = dtype;
          else if (key == "dk_dtype")
            manifest.dkDtype = dtype;
          else
            manifest.dvDtype = dtype;
        }
        return FA_RT_SUCCESS;
      });
  if (status)
    return status;
  if (faRtStatus s = closeKernel())
    return s;

  for (const char *key : headerRequired)
    if (!seenAt.count(key))
      return fail(lastLine, std::string("missing required key '") + key + "'");
  for (const char *key :
       {"o_dtype", "do_dtype", "dq_dtype", "dk_dtype", "dv_dtype"})
    if (!seenAt.count(key)) {
      faRtDtype &dtype = std::string(key) == "o_dtype"    ? manifest.oDtype
                         : std::string(key) == "do_dtype" ? manifest.doDtype
                         : std::string(key) == "dq_dtype" ? manifest.dqDtype
                         : std::string(key) == "dk_dtype" ? manifest.dkDtype
                                                          : manifest.dvDtype;
      dtype = manifest.dtype;
    }
  if (manifest.kernels.empty())
    return fail(lastLine, "expected at least one kernel section");

  // Tensor maps: version 4 exactly when some section has any.
  int firstMapLine = 0;
  for (const KernelLaunch &kernel : manifest.kernels)
    if (!kernel.tensorMaps.empty() && !firstMapLine)
      firstMapLine = kernel.tensorMaps.front().line;
  if (manifest.version == 2 && firstMapLine)
    return fail(firstMapLine, "tensor_map needs manifest version 4 (this "
                              "backward manifest is version 2)");
  if (manifest.version == 4 && !firstMapLine)
    return fail(seenAt["version"],
                "backward manifest version 4 needs at least one "
                "'tensor_map' line in a kernel section (version 2 is the "
                "format without tensor maps)");

  // Every param names an operand, a result or a scratch buffer.
  for (const KernelLaunch &kernel : manifest.kernels)
    for (const std::string &param : kernel.params) {
      bool known = false;
      for (const char *name :
           {"q", "k", "v", "o", "do", "lse", "dq", "dk", "dv"})
        known |= param == name;
      for (const ScratchBuffer &buffer : manifest.scratch)
        known |= param == buffer.name;
      if (!known)
        return reportError(FA_RT_ERROR_MANIFEST,
                           fileName + ": kernel '" + kernel.kernel +
                               "' takes '" + param +
                               "', which is neither an operand, a result "
                               "nor a scratch buffer of the manifest");
    }

  // Each section's maps against its params and the header.
  const MapTypes types{manifest.dtype, manifest.oDtype, manifest.doDtype,
                       manifest.headDim, manifest.headDimV};
  for (const KernelLaunch &kernel : manifest.kernels) {
    MapError mapError = checkTensorMapSpecs(
        kernel.tensorMaps, kernel.params,
        "the params of kernel '" + kernel.kernel + "'", types);
    if (mapError.line)
      return fail(mapError.line, mapError.message);
  }
  return FA_RT_SUCCESS;
}

faRtStatus fa::rt::readBackwardManifestFile(const std::string &path,
                                            BackwardManifest &manifest) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return reportError(FA_RT_ERROR_IO, "cannot open manifest '" + path + "'");
  std::ostringstream contents;
  contents << file.rdbuf();
  return parseBackwardManifest(contents.str(), path, manifest);
}

faRtStatus fa::rt::backwardWorkspaceLayout(const BackwardManifest &manifest,
                                           const LaunchShape &shape,
                                           WorkspaceLayout &layout) {
  layout = WorkspaceLayout();
  Manifest view;
  view.headDim = manifest.headDim;
  view.headDimV = manifest.headDimV;
  for (const ScratchBuffer &buffer : manifest.scratch) {
    uint64_t elements = 1;
    for (const std::string &dim : buffer.dims)
      elements *= static_cast<uint64_t>(gridAtomValue(dim, view, shape));
    layout.offsets.push_back(layout.bytes);
    uint64_t bytes = elements * dtypeSize(buffer.dtype);
    layout.bytes += (bytes + 255) / 256 * 256;
  }
  return FA_RT_SUCCESS;
}

std::vector<uint64_t> fa::rt::buildBackwardKernelParams(
    const BackwardManifest &manifest, size_t i, const LaunchShape &shape,
    const std::vector<std::pair<std::string, uint64_t>> &pointers) {
  std::vector<uint64_t> params;
  for (const std::string &name : manifest.kernels[i].params) {
    uint64_t ptr = 0;
    for (const auto &[key, value] : pointers)
      if (key == name)
        ptr = value;
    std::vector<int64_t> sizes = backwardTensorSizes(manifest, name, shape);
    appendMemRefParams(params, ptr, 0, sizes, rowMajorStrides(sizes));
  }
  return params;
}

faRtDtype fa::rt::backwardTensorDtype(const BackwardManifest &manifest,
                                      const std::string &name) {
  if (name == "q" || name == "k" || name == "v")
    return manifest.dtype;
  if (name == "o")
    return manifest.oDtype;
  if (name == "do")
    return manifest.doDtype;
  if (name == "dq")
    return manifest.dqDtype;
  if (name == "dk")
    return manifest.dkDtype;
  if (name == "dv")
    return manifest.dvDtype;
  for (const ScratchBuffer &buffer : manifest.scratch)
    if (buffer.name == name)
      return buffer.dtype;
  return FA_RT_DTYPE_F32; // lse
}

std::vector<std::pair<std::string, uint64_t>> fa::rt::backwardChunkPointers(
    const BackwardManifest &manifest,
    const std::vector<std::pair<std::string, uint64_t>> &pointers,
    const LaunchShape &shape, int64_t start) {
  std::vector<std::pair<std::string, uint64_t>> advanced = pointers;
  for (auto &[name, ptr] : advanced) {
    uint64_t entry = dtypeSize(backwardTensorDtype(manifest, name));
    std::vector<int64_t> sizes = backwardTensorSizes(manifest, name, shape);
    for (size_t d = 1; d < sizes.size(); ++d)
      entry *= static_cast<uint64_t>(sizes[d]);
    if (ptr)
      ptr += static_cast<uint64_t>(start) * entry;
  }
  return advanced;
}

faRtStatus fa::rt::buildBackwardTensorMapArgs(
    const BackwardManifest &manifest, size_t i, const LaunchShape &shape,
    const std::vector<std::pair<std::string, uint64_t>> &pointers,
    std::vector<TensorMapEncodeArgs> &args) {
  args.clear();
  const KernelLaunch &kernel = manifest.kernels[i];
  const MapTypes types{manifest.dtype, manifest.oDtype, manifest.doDtype,
                       manifest.headDim, manifest.headDimV};
  auto pointerOf = [&](const std::string &name) -> uint64_t {
    for (const auto &[key, value] : pointers)
      if (key == name)
        return value;
    return 0;
  };
  auto hasElements = [&](const std::string &name) {
    for (int64_t size :
         tensorSizes(name, shape, manifest.headDim, manifest.headDimV))
      if (size <= 0)
        return false;
    return true;
  };
  // An empty operand's stand-in address: the first of the section's map
  // operands with elements, else q.
  std::string emptyName = "q";
  for (const TensorMapSpec &spec : kernel.tensorMaps)
    if (hasElements(spec.operand)) {
      emptyName = spec.operand;
      break;
    }
  const uint64_t emptyAddress = pointerOf(emptyName);
  for (const TensorMapSpec &spec : kernel.tensorMaps) {
    TensorMapEncodeArgs a;
    if (faRtStatus status = tensorMapEncodeArgs(
            spec, types, shape, pointerOf(spec.operand), emptyAddress,
            emptyName, kernel.kernel, a))
      return status;
    args.push_back(std::move(a));
  }
  return FA_RT_SUCCESS;
}
