//===- IndexBitwidth.cpp - 32-bit kernel indices --------------------------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// The `index-bitwidth` option of convert-fa-to-gpu: the static-shape check
// for 32-bit indices and the DLTI data layout (and manifest line) that
// gives a kernel module 32-bit `index` values (docs/ARTIFACTS.md, "Index
// bits").
//
//===----------------------------------------------------------------------===//

#include "KernelUtils.h"

#include "mlir/Dialect/DLTI/DLTI.h"
#include "llvm/Support/MathExtras.h"

#include <limits>
#include <optional>

using namespace mlir;
using namespace mlir::fa;

namespace {
/// A tensor operand or result whose static dims multiply to a limit or more.
struct OversizedTensor {
  StringRef what; // "operand" or "result"
  unsigned number;
  uint64_t elements; // saturated at 2^64 - 1
};
} // namespace

/// The first tensor operand or result of `op` whose static dims multiply to
/// `limit` elements or more (dynamic dims count as 1), if any.
static std::optional<OversizedTensor>
findOversizedTensor(Operation *op, uint64_t limit = uint64_t(1) << 31) {
  auto elementsOf = [](Value value) -> uint64_t {
    auto type = dyn_cast<ShapedType>(value.getType());
    if (!type || !type.hasRank())
      return 0;
    uint64_t elements = 1;
    for (int64_t size : type.getShape())
      if (!ShapedType::isDynamic(size))
        elements =
            llvm::SaturatingMultiply(elements, static_cast<uint64_t>(size));
    return elements;
  };
  for (OpOperand &operand : op->getOpOperands())
    if (uint64_t n = elementsOf(operand.get()); n >= limit)
      return OversizedTensor{"operand", operand.getOperandNumber(), n};
  for (OpResult result : op->getResults())
    if (uint64_t n = elementsOf(result); n >= limit)
      return OversizedTensor{"result", result.getResultNumber(), n};
  return std::nullopt;
}

bool gpukernel::hasOversizedTensor(Operation *op) {
  return findOversizedTensor(op).has_value();
}

/// With 32-bit indices, every element offset a kernel computes must fit in
/// an i32: rejects `op` when a tensor operand or result has static
/// dimensions whose product is 2^31 or more. With 64-bit indices, byte
/// offsets (up to 8 bytes an element) must fit in an i64: 2^60 elements.
/// Dynamic dimensions are the runtime's check.
LogicalResult gpukernel::checkIndexBitwidth(Operation *op,
                                            int64_t indexBitwidth) {
  const bool narrow = indexBitwidth != 64;
  std::optional<OversizedTensor> tensor =
      findOversizedTensor(op, uint64_t(1) << (narrow ? 31 : 60));
  if (!tensor)
    return success();
  InFlightDiagnostic diag = op->emitOpError(
      narrow ? "expected fewer than 2^31 elements in each tensor with "
               "index-bitwidth=32, but "
             : "expected fewer than 2^60 elements in each tensor (byte "
               "offsets in 64 bits), but ");
  diag << tensor->what << " #" << tensor->number << " has ";
  if (tensor->elements == std::numeric_limits<uint64_t>::max())
    diag << "2^64 or more";
  else
    diag << tensor->elements;
  if (narrow)
    diag << " (compile it with index-bitwidth=64)";
  return diag;
}

/// Gives the kernel of `kernels` `index` values of `indexBitwidth` bits
/// (a DLTI data layout on the gpu.module, which upstream's conversions to
/// LLVM follow) and records 32 in the manifest (`index_bits`; runtimes read
/// a missing key as 64).
void gpukernel::setIndexBitwidth(gpu::GPUModuleOp kernels,
                                 DictionaryAttr &manifest,
                                 int64_t indexBitwidth) {
  if (indexBitwidth == 64)
    return;
  MLIRContext *ctx = kernels.getContext();
  Builder b(ctx);
  kernels->setAttr(
      DLTIDialect::kDataLayoutAttrName,
      DataLayoutSpecAttr::get(
          ctx, {DataLayoutEntryAttr::get(IndexType::get(ctx),
                                         b.getI64IntegerAttr(indexBitwidth))}));
  NamedAttrList entries(manifest);
  entries.set("index_bits", b.getI64IntegerAttr(indexBitwidth));
  manifest = entries.getDictionary(ctx);
}
