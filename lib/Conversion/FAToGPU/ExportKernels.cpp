//===- ExportKernels.cpp - write the PTX + manifest of each kernel ------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// Implements `fa-export-kernels`: the last step of fa-to-ptx, writing
// `<dir>/<kernel>.ptx` and `<dir>/<kernel>.manifest` (docs/ARTIFACTS.md) from
// the gpu.binary ops and the manifests recorded by convert-fa-to-gpu.
//
//===----------------------------------------------------------------------===//

#include "fa/Conversion/FAToGPU/FAToGPU.h"
#include "fa/Dialect/FA/IR/FA.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
namespace fa {
#define GEN_PASS_DEF_FAEXPORTKERNELS
#include "fa/Conversion/Passes.h.inc"
} // namespace fa
} // namespace mlir

using namespace mlir;
using namespace mlir::fa;

/// The manifest keys in the order of docs/ARTIFACTS.md; `version`, `kernel`,
/// `ptx` and `chip` come first and are written separately. Other keys follow
/// in alphabetical order.
static constexpr llvm::StringLiteral kKeyOrder[] = {
    "dtype",       "o_dtype",    "causal",   "scale",      "batch",
    "batch_shape", "seqlen_q",   "seqlen_k", "head_dim",   "head_dim_v",
    "has_lse",     "block_m",    "block_n",  "threads",    "shared_bytes",
    "row_align",   "index_bits", "params",   "tensor_map", "grid"};

/// Keys whose array value is written as one line per element.
static bool isRepeatedKey(StringRef key) { return key == "tensor_map"; }

/// Prints the value of a manifest entry: strings as is, integers in decimal,
/// floats with enough digits to read back the same f32, arrays as
/// space-separated values (an empty array prints nothing).
static void printValue(llvm::raw_ostream &os, Attribute value) {
  if (auto s = dyn_cast<StringAttr>(value)) {
    os << s.getValue();
  } else if (auto i = dyn_cast<IntegerAttr>(value)) {
    os << i.getInt();
  } else if (auto f = dyn_cast<FloatAttr>(value)) {
    os << llvm::format("%.9g", f.getValueAsDouble());
  } else if (auto a = dyn_cast<ArrayAttr>(value)) {
    llvm::interleave(
        a, os, [&](Attribute e) { printValue(os, e); }, " ");
  } else {
    os << value;
  }
}

/// The first key of `value` (a manifest entry, searched through arrays and
/// nested dictionaries) whose name or string value holds a control
/// character (a newline would start a line of its own in the manifest), or
/// std::nullopt.
static std::optional<std::string> keyWithControlChar(StringRef key,
                                                     Attribute value) {
  auto bad = [](StringRef text) {
    return llvm::any_of(text, [](char c) {
      return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
  };
  if (bad(key))
    return key.str();
  if (auto s = dyn_cast<StringAttr>(value))
    return bad(s.getValue()) ? std::optional<std::string>(key.str())
                             : std::nullopt;
  if (auto a = dyn_cast<ArrayAttr>(value)) {
    for (Attribute e : a)
      if (auto found = keyWithControlChar(key, e))
        return found;
    return std::nullopt;
  }
  if (auto d = dyn_cast<DictionaryAttr>(value))
    for (NamedAttribute e : d)
      if (auto found = keyWithControlChar(e.getName().getValue(), e.getValue()))
        return found;
  return std::nullopt;
}

/// Prints one manifest line `key value` (`key` alone for an empty array;
/// one line per element for a repeated key).
static void printLine(llvm::raw_ostream &os, StringRef key, Attribute value) {
  if (auto a = dyn_cast<ArrayAttr>(value); a && isRepeatedKey(key)) {
    for (Attribute element : a) {
      os << key << " ";
      printValue(os, element);
      os << "\n";
    }
    return;
  }
  os << key;
  if (auto a = dyn_cast<ArrayAttr>(value); !a || !a.empty()) {
    os << " ";
    printValue(os, value);
  }
  os << "\n";
}

/// The header keys of a backward manifest (versions 2 and 4) in the order of
/// docs/ARTIFACTS.md, after `version`, `op`, `name`, `ptx` and `chip`.
static constexpr llvm::StringLiteral kBackwardKeyOrder[] = {
    "dtype",     "o_dtype",   "do_dtype", "dq_dtype",   "dk_dtype",
    "dv_dtype",  "causal",    "scale",    "batch",      "batch_shape",
    "seqlen_q",  "seqlen_k",  "head_dim", "head_dim_v", "deterministic",
    "row_align", "index_bits"};

/// The keys of one kernel section of a backward manifest, in order.
static constexpr llvm::StringLiteral kKernelKeyOrder[] = {
    "kernel", "threads",    "block_m", "block_n",
    "shared_bytes", "params", "tensor_map", "grid"};

/// A backward manifest (version 2; 4 with tensor maps): the op's header, one `scratch` line per
/// scratch buffer, then one section per kernel in launch order, each opened
/// by its `kernel` line.
static std::string renderBackwardManifest(DictionaryAttr manifest,
                                          StringRef name, StringRef chip) {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto line = [&](StringRef key, Attribute value) {
    printLine(os, key, value);
  };
  // Version 4: a backward manifest with TMA tensor maps in some kernel
  // section (a reader without them must refuse it, as for version 3).
  bool tensorMaps = false;
  if (auto kernels = manifest.getAs<ArrayAttr>("kernels"))
    for (Attribute kernel : kernels)
      if (auto dict = dyn_cast<DictionaryAttr>(kernel))
        tensorMaps |= static_cast<bool>(dict.get("tensor_map"));
  os << "# fa backward manifest\n";
  os << "version " << (tensorMaps ? 4 : 2) << "\n";
  os << "op attention_backward\n";
  os << "name " << name << "\n";
  os << "ptx " << name << ".ptx\n";
  os << "chip " << chip << "\n";
  for (StringRef key : kBackwardKeyOrder)
    if (Attribute value = manifest.get(key))
      line(key, value);
  if (auto scratch = manifest.getAs<ArrayAttr>("scratch"))
    for (Attribute buffer : scratch)
      line("scratch", buffer);
  if (auto kernels = manifest.getAs<ArrayAttr>("kernels"))
    for (Attribute kernel : kernels)
      if (auto dict = dyn_cast<DictionaryAttr>(kernel))
        for (StringRef key : kKernelKeyOrder)
          if (Attribute value = dict.get(key))
            line(key, value);
  return text;
}

std::string mlir::fa::renderManifest(DictionaryAttr manifest,
                                     StringRef kernelName, StringRef chip) {
  if (manifest.get("op"))
    return renderBackwardManifest(manifest, kernelName, chip);
  std::string text;
  llvm::raw_string_ostream os(text);
  auto line = [&](StringRef key, Attribute value) {
    printLine(os, key, value);
  };
  // Version 3: a forward kernel that takes TMA tensor maps (readers without
  // tensor-map support must refuse it rather than launch it without them).
  os << "# fa kernel manifest\n";
  os << "version " << (manifest.get("tensor_map") ? 3 : 1) << "\n";
  os << "kernel " << kernelName << "\n";
  os << "ptx " << kernelName << ".ptx\n";
  os << "chip " << chip << "\n";
  for (StringRef key : kKeyOrder)
    if (Attribute value = manifest.get(key))
      line(key, value);
  for (NamedAttribute entry : manifest) {
    StringRef key = entry.getName().getValue();
    if (key == "kernel" || llvm::is_contained(kKeyOrder, key))
      continue;
    line(key, entry.getValue());
  }
  return text;
}

/// Writes `contents` to `path`, or emits an error on `loc`.
static LogicalResult writeFile(Location loc, StringRef path,
                               StringRef contents) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Text);
  if (!ec) {
    os << contents;
    os.close();
    ec = os.error();
  }
  if (ec)
    return emitError(loc) << "fa-export-kernels: cannot write '" << path
                          << "': " << ec.message();
  return success();
}

/// The kernels of `manifest` that take tensor maps, with the number of
/// maps each takes: the forward kernel `kernel`, or the backward's kernel
/// sections with `tensor_map` lines.
static SmallVector<std::pair<std::string, size_t>>
kernelsWithTensorMaps(DictionaryAttr manifest, StringRef kernel) {
  SmallVector<std::pair<std::string, size_t>> result;
  auto add = [&](StringRef name, DictionaryAttr dict) {
    if (auto maps = dict.getAs<ArrayAttr>("tensor_map"); maps && !maps.empty())
      result.emplace_back(name.str(), maps.size());
  };
  if (!manifest.get("op")) {
    add(kernel, manifest);
    return result;
  }
  if (auto kernels = manifest.getAs<ArrayAttr>("kernels"))
    for (Attribute k : kernels)
      if (auto dict = dyn_cast<DictionaryAttr>(k))
        if (auto name = dict.getAs<StringAttr>("kernel"))
          add(name.getValue(), dict);
  return result;
}

/// The number of by-value 128-byte parameters (`.param .align 64 .b8
/// <name>_param_N[128]`, the tensor maps as fa-lower-tensor-map-params
/// leaves them) of the PTX entry `name`.
static size_t tensorMapParamsInPtx(StringRef ptx, StringRef name) {
  size_t entry = ptx.find((".entry " + name + "(").str());
  if (entry == StringRef::npos)
    return 0;
  StringRef params = ptx.substr(entry).take_until([](char c) { return c == ')'; });
  std::string prefix = (".param .align 64 .b8 " + name + "_param_").str();
  size_t count = 0;
  for (size_t pos = params.find(prefix); pos != StringRef::npos;
       pos = params.find(prefix, pos + prefix.size()))
    if (params.substr(pos).take_until([](char c) { return c == ','; })
            .rtrim()
            .ends_with("[128]"))
      ++count;
  return count;
}

namespace {

struct FAExportKernelsPass
    : fa::impl::FAExportKernelsBase<FAExportKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (outputDir.empty())
      return;
    ModuleOp module = getOperation();
    auto manifests = module->getAttrOfType<DictionaryAttr>(kManifestsAttrName);
    if (!manifests || manifests.empty()) {
      // An fa op that convert-fa-to-gpu has not turned into kernels: name
      // it and the missing step.
      Operation *unconverted = nullptr;
      module.walk([&](Operation *op) {
        if (isa_and_nonnull<FADialect>(op->getDialect())) {
          unconverted = op;
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
      if (unconverted) {
        unconverted->emitOpError()
            << "has no kernels yet: fa-export-kernels writes the kernels "
               "that convert-fa-to-gpu recorded in '"
            << kManifestsAttrName
            << "'; run convert-fa-to-gpu first (fa-to-ptx runs both)";
        return signalPassFailure();
      }
      // A file with no attention: say so at the module, without dumping it.
      mlir::emitError(module.getLoc())
          << "no fa.attention or fa.attention_backward in the input: nothing "
             "to compile (fa-to-ptx turns each into kernels; "
             "fa-export-kernels reads the kernels that convert-fa-to-gpu "
             "recorded in '"
          << kManifestsAttrName << "')";
      return signalPassFailure();
    }
    // Mode 0777 less the umask, as `mkdir -p` (and the files written below)
    // take it; LLVM's default leaves out other users.
    if (std::error_code ec = llvm::sys::fs::create_directories(
            outputDir, /*IgnoreExisting=*/true, llvm::sys::fs::all_all)) {
      mlir::emitError(module.getLoc()) << "fa-export-kernels: cannot create directory '"
                         << outputDir << "': " << ec.message();
      return signalPassFailure();
    }
    // create_directories succeeds on an existing file (e.g. /dev/null).
    if (!llvm::sys::fs::is_directory(outputDir)) {
      mlir::emitError(module.getLoc())
          << "fa-export-kernels: output-dir '" << outputDir
          << "' exists and is not a directory";
      return signalPassFailure();
    }

    for (NamedAttribute entry : manifests) {
      StringRef kernel = entry.getName().getValue();
      // The kernel name becomes a file name in output-dir: only a plain
      // identifier may (no '/', no '..').
      if (kernel.empty() || llvm::isDigit(kernel.front()) ||
          !llvm::all_of(kernel, [](char c) {
            return llvm::isAlnum(c) || c == '_';
          })) {
        mlir::emitError(module.getLoc())
            << "fa-export-kernels: invalid kernel name '" << kernel
            << "': expected letters, digits and '_', not starting with a "
               "digit";
        return signalPassFailure();
      }
      auto manifest = dyn_cast<DictionaryAttr>(entry.getValue());
      if (!manifest) {
        mlir::emitError(module.getLoc())
            << "fa-export-kernels: the 'fa.manifests' entry '" << kernel
            << "' is not a dictionary: " << entry.getValue();
        return signalPassFailure();
      }
      Operation *symbol = SymbolTable::lookupSymbolIn(module, kernel);
      auto binary = dyn_cast_or_null<gpu::BinaryOp>(symbol);
      if (!binary) {
        // A gpu.module of that name is not compiled yet; no symbol at all
        // is a manifest that outlived its kernel (e.g. an edited module).
        InFlightDiagnostic diag = mlir::emitError(module.getLoc())
                                  << "fa-export-kernels: 'fa.manifests' "
                                     "names the kernel '"
                                  << kernel << "', ";
        if (isa_and_nonnull<gpu::GPUModuleOp>(symbol))
          diag << "whose gpu.module is not compiled yet (run "
                  "gpu-module-to-binary first)";
        else if (symbol)
          diag << "but @" << kernel << " is a '" << symbol->getName()
               << "', not a gpu.binary";
        else
          diag << "but the module holds no gpu.binary @" << kernel
               << " (a stale entry: remove it, or rerun convert-fa-to-gpu "
                  "and gpu-module-to-binary)";
        return signalPassFailure();
      }
      // gpu-module-to-binary leaves the binary without a location: report
      // at the module then.
      Location where =
          isa<UnknownLoc>(binary.getLoc()) ? module.getLoc() : binary.getLoc();
      if (auto key = keyWithControlChar(kernel, manifest)) {
        mlir::emitError(module.getLoc())
            << "fa-export-kernels: the manifest of @" << kernel
            << " has a control character (a newline, a tab, NUL, ...) in "
               "key '"
            << llvm::StringRef(*key).take_while([](char c) {
                 return static_cast<unsigned char>(c) >= 0x20 && c != 0x7f;
               })
            << "' or its value: a manifest is one 'key value' per line";
        return signalPassFailure();
      }
      // The PTX of the first NVVM object in assembly format.
      gpu::ObjectAttr ptx;
      for (Attribute attr : binary.getObjects()) {
        auto object = dyn_cast<gpu::ObjectAttr>(attr);
        if (object && object.getFormat() == gpu::CompilationTarget::Assembly &&
            isa<NVVM::NVVMTargetAttr>(object.getTarget())) {
          ptx = object;
          break;
        }
      }
      if (!ptx) {
        mlir::emitError(where)
            << "fa-export-kernels: expected an NVVM object in "
               "assembly (PTX) format, use "
               "gpu-module-to-binary format=isa";
        return signalPassFailure();
      }
      StringRef chip = cast<NVVM::NVVMTargetAttr>(ptx.getTarget()).getChip();
      // Some serializers keep a trailing NUL; PTX is text.
      StringRef text = ptx.getObject().getValue().rtrim('\0');
      // Tensor maps: the manifest promises by-value maps, which only
      // fa-lower-tensor-map-params makes of the kernel's pointer arguments.
      for (auto &[name, maps] : kernelsWithTensorMaps(manifest, kernel)) {
        size_t found = tensorMapParamsInPtx(text, name);
        if (found != maps) {
          mlir::emitError(where)
              << "fa-export-kernels: the manifest of @" << kernel
              << " gives kernel '" << name << "' " << maps
              << " tensor maps, but its PTX takes " << found
              << " by-value 128-byte parameters (run "
                 "fa-lower-tensor-map-params after convert-gpu-to-nvvm, as "
                 "fa-to-ptx does)";
          return signalPassFailure();
        }
      }

      // math.exp/math.log become libdevice calls; a PTX that still declares
      // one as external would not load.
      if (size_t pos = text.find("__nv_");
          pos != StringRef::npos && text.contains(".extern .func")) {
        mlir::emitError(where)
            << "fa-export-kernels: the PTX of @" << kernel
            << " calls the libdevice function '"
            << text.substr(pos).take_while(
                   [](char c) { return llvm::isAlnum(c) || c == '_'; })
            << "', which was not linked; name the CUDA toolkit holding "
               "nvvm/libdevice/libdevice.10.bc (fa-to-ptx cuda-path=..., or "
               "$CUDA_HOME)";
        return signalPassFailure();
      }

      SmallString<256> ptxPath(outputDir), manifestPath(outputDir);
      llvm::sys::path::append(ptxPath, kernel + ".ptx");
      llvm::sys::path::append(manifestPath, kernel + ".manifest");
      if (failed(writeFile(where, ptxPath, text)) ||
          failed(writeFile(where, manifestPath,
                           renderManifest(manifest, kernel, chip))))
        return signalPassFailure();
    }
    markAllAnalysesPreserved();
  }
};

} // namespace
