//===- WgmmaForward.cpp - fa.attention on Hopper warpgroup MMA -----------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// The Hopper forward kernel of convert-fa-to-gpu (`wgmma=true`, chosen by
// fa-to-ptx for sm_90a): FlashAttention-2's forward pass (Dao 2023,
// Algorithm 1) with the products on sm_90a's asynchronous warpgroup MMA
// (`wgmma.mma_async`, PTX ISA 8.0, "Asynchronous Warpgroup Level Matrix
// Multiply-Accumulate Instructions"), as FlashAttention-3 (Shah et al. 2024,
// Section 3) feeds it: S = Q K^T with both operands in workgroup memory,
// O += P V with P from registers.
//
// Block = `num_warps / 4` warpgroups of 128 threads; warpgroup w owns query
// rows [64 w, 64 w + 64) of the block (block_m = 16 * num_warps), warp i of
// the block rows [16 i, 16 i + 16). The accumulator fragments of
// wgmma.m64nNk16 give lane 4 g + t of warp i rows 16 i + g and 16 i + g + 8,
// columns 8 n + 2t (+1) of each n8 slice: the mma.sync C layout, so the
// online softmax, the masking and the P-to-A-fragment conversion are the
// ones of TensorCoreForward.cpp.
//
//   cp.async Q tile, K_0, V_0 (group 0); K_1, V_1 (group 1)
//   for each key block j (causal: blocks past the diagonal never visited):
//     wait for all but the newest group; fence.proxy.async; barrier
//     S = Q K_j^T          D/16 wgmma (A, B from workgroup memory)
//     mask; online softmax; O *= alpha where a row max moved; P in regs
//     O += P V_j           block_n/16 wgmma (A from registers, B = V_j
//                          N-major from workgroup memory)
//     (K_{j+s-1} and V_{j+s-1} load into the stage of block j - 1 once
//     every warpgroup is done with it; s = 2 or 3 stages)
//   o = O / l, lse = m ln 2 + ln l
//
// Tiles use wgmma's canonical layout without swizzling (PTX ISA, "Shared
// Memory Matrix Layout"): 8 rows x 16 bytes core matrices, 128 contiguous
// bytes each; the 16-byte chunk c of tile row r lives at byte
// c * col + (r / 8) * 128 + (r % 8) * 16, col = rows * 16 + 64 (a column of
// cores plus 64 bytes of padding against bank conflicts of the copies).
// For Q and K (K-major operands) cores adjacent along the head dim are
// col bytes apart (leading byte offset) and cores adjacent along rows 128
// (stride byte offset); V is the N-major B operand of P V (N = head dim,
// K = keys): cores adjacent along keys are 128 bytes apart (leading), along
// the head dim col (stride). See CanonicalCopy for the cp.async mapping.
//
// wgmma, its fences and the commit/wait are inline PTX (MLIR 22's
// nvvm.wgmma.mma_async takes A only from workgroup memory); the fence and
// the wait take the accumulators as tied operands so that no register
// access moves across them.
//
//===----------------------------------------------------------------------===//

#include "TensorCoreFragments.h"
#include "TensorCoreKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/ADT/StringExtras.h"

#include <string>

using namespace mlir;
using namespace mlir::fa;
using namespace mlir::fa::gpukernel;

namespace {

/// The inline-asm constraint letter of an operand type.
StringRef constraintOf(Type t) {
  if (t.isF32())
    return "f";
  if (t.isInteger(64))
    return "l";
  return "r";
}

/// Inline PTX `text` (side effects, so never reordered with other inline
/// PTX): results of `outTypes` are $0..; `ins` follow; then `tied`, whose
/// i-th value is the input of output i (not named in `text`).
SmallVector<Value> inlinePtx(FragmentBuilder &x, StringRef text,
                             ArrayRef<Type> outTypes, ValueRange ins,
                             ValueRange tied = {}) {
  SmallVector<std::string> constraints;
  for (Type t : outTypes)
    constraints.push_back(("=" + constraintOf(t)).str());
  for (Value v : ins)
    constraints.push_back(constraintOf(v.getType()).str());
  for (size_t i = 0; i < tied.size(); ++i)
    constraints.push_back(std::to_string(i));
  SmallVector<Value> operands(ins.begin(), ins.end());
  llvm::append_range(operands, tied);
  MLIRContext *ctx = x.b.getContext();
  Type resultType;
  if (outTypes.size() == 1)
    resultType = outTypes.front();
  else if (!outTypes.empty())
    resultType = LLVM::LLVMStructType::getLiteral(ctx, outTypes);
  auto op = LLVM::InlineAsmOp::create(
      x.b, x.loc, resultType ? TypeRange{resultType} : TypeRange{}, operands,
      text, llvm::join(constraints, ","), /*has_side_effects=*/true,
      /*is_align_stack=*/false, LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(ctx, LLVM::AsmDialect::AD_ATT),
      /*operand_attrs=*/ArrayAttr());
  SmallVector<Value> results;
  if (outTypes.size() == 1)
    results.push_back(op.getResult(0));
  else
    for (size_t i = 0; i < outTypes.size(); ++i)
      results.push_back(LLVM::ExtractValueOp::create(
          x.b, x.loc, op.getResult(0), ArrayRef<int64_t>{(int64_t)i}));
  return results;
}

/// `values` passed through inline PTX `text` as tied operands: the
/// register accesses of `values` are ordered with `text`.
SmallVector<Value> ptxWith(FragmentBuilder &x, StringRef text,
                           ValueRange values) {
  SmallVector<Type> types;
  for (Value v : values)
    types.push_back(v.getType());
  return inlinePtx(x, text, types, ValueRange{}, values);
}

/// The f32 scalars of C fragments (vector<2x2xf32>) in wgmma accumulator
/// order, and back.
SmallVector<Value> toScalars(FragmentBuilder &x, ArrayRef<Value> tiles) {
  SmallVector<Value> s;
  for (Value tile : tiles)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t e = 0; e < 2; ++e)
        s.push_back(x.extract(tile, {h, e}));
  return s;
}

SmallVector<Value> toTiles(FragmentBuilder &x, ArrayRef<Value> scalars) {
  SmallVector<Value> tiles;
  for (size_t i = 0; i + 3 < scalars.size(); i += 4)
    tiles.push_back(vector::FromElementsOp::create(
        x.b, x.loc, x.vec({2, 2}, x.f32), scalars.slice(i, 4)));
  return tiles;
}

/// The PTX type name of the operand element type.
StringRef ptxType(Type elt) { return elt.isBF16() ? "bf16" : "f16"; }

/// The text of one wgmma.mma_async.m64n`n`k16 with f32 accumulators:
/// $0..$(n/2 - 1) the accumulators, then A (one i64 descriptor, or four
/// 32-bit registers with `aInRegs`), the B descriptor and the scale-d flag.
std::string wgmmaText(int64_t n, Type elt, bool aInRegs, bool transB) {
  int64_t acc = n / 2;
  std::string s = "{\n.reg .pred p;\nsetp.ne.b32 p, $" +
                  std::to_string(acc + (aInRegs ? 5 : 2)) + ", 0;\n";
  s += "wgmma.mma_async.sync.aligned.m64n" + std::to_string(n) + "k16.f32." +
       ptxType(elt).str() + "." + ptxType(elt).str() + " {";
  for (int64_t i = 0; i < acc; ++i)
    s += (i ? ", $" : "$") + std::to_string(i);
  s += "}, ";
  if (aInRegs)
    s += "{$" + std::to_string(acc) + ", $" + std::to_string(acc + 1) +
         ", $" + std::to_string(acc + 2) + ", $" + std::to_string(acc + 3) +
         "}, $" + std::to_string(acc + 4);
  else
    s += "$" + std::to_string(acc) + ", $" + std::to_string(acc + 1);
  // scale-d, imm-scale-a, imm-scale-b[, imm-trans-a], imm-trans-b.
  s += ", p, 1, 1";
  if (!aInRegs)
    s += ", 0";
  s += transB ? ", 1;\n}" : ", 0;\n}";
  return s;
}

/// A shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor
/// Format"): start address >> 4 in bits 0-13, leading byte offset >> 4 in
/// 16-29, stride byte offset >> 4 in 32-45, no swizzle.
struct Descriptor {
  Value base; // i64: (workgroup address of the dynamic memory) >> 4 | offsets

  Value at(FragmentBuilder &x, Value offsetUnits) const {
    return arith::AddIOp::create(x.b, x.loc, base, offsetUnits);
  }
};

Descriptor makeDescriptor(FragmentBuilder &x, Value smemUnits, int64_t lbo,
                          int64_t sbo) {
  int64_t high = ((lbo >> 4) << 16) | ((sbo >> 4) << 32);
  Value h = arith::ConstantIntOp::create(x.b, x.loc, x.b.getI64Type(), high);
  return Descriptor{arith::AddIOp::create(x.b, x.loc, smemUnits, h)};
}

/// How the threads copy a [rows, width] tile into the canonical layout
/// (file header) with 16-byte cp.async. Warp-chunk group w covers 8 rows x
/// 4 chunks: rows 8 * (w / quads) + .., chunks 4 * (w % quads) + ..,
/// quads = width / 32. Within it, the 8 lanes of an octet o take 4 rows
/// (4 * (o % 2) + p / 2, p = lane % 8) x 2 adjacent chunks (2 * (o / 2) +
/// p % 2): each row's 32 bytes are one full global-memory sector, and with
/// the 64-byte column padding the octet's 8 destinations cover the 32
/// banks once. Round r takes groups warp + r * warps. When the warps are a
/// multiple of quads, a thread's chunk is fixed and each round adds a
/// constant number of rows: the per-thread row, chunk and destination are
/// computed once, before the key loop.
struct CanonicalCopy {
  int64_t rows, width, warps;
  Value row0, chunk, dst0; // per thread; dst0 in elements
  int64_t rowStep, dstStep; // per round (valid when `fixed`)
  bool fixed;

  static CanonicalCopy plan(FragmentBuilder &x, int64_t rows, int64_t width,
                            int64_t threads, const LaneIds &ids) {
    CanonicalCopy c{rows, width, threads / 32, Value(), Value(), Value(),
                    0, 0, false};
    int64_t quads = width / 32;
    c.fixed = c.warps % quads == 0;
    if (c.fixed) {
      c.rowStep = 8 * (c.warps / quads);
      c.dstStep = 64 * (c.warps / quads);
      c.groupIndices(x, ids.warp, ids.lane, c.row0, c.chunk, c.dst0);
    }
    return c;
  }

  int64_t rounds() const {
    return (rows / 8) * (width / 32) / warps;
  }

  /// Row, chunk and destination (elements, tile-relative) of this lane in
  /// group `w`.
  void groupIndices(FragmentBuilder &x, Value w, Value lane, Value &row,
                    Value &chunk, Value &dst) const {
    Value c2 = x.cstIndex(2), c8 = x.cstIndex(8),
          quads = x.cstIndex(width / 32);
    Value p = arith::RemUIOp::create(x.b, x.loc, lane, c8);
    Value o = arith::DivUIOp::create(x.b, x.loc, lane, c8);
    Value rowIn =
        x.add(arith::DivUIOp::create(x.b, x.loc, p, c2),
              x.mul(arith::RemUIOp::create(x.b, x.loc, o, c2), x.cstIndex(4)));
    Value chunkIn =
        x.add(arith::RemUIOp::create(x.b, x.loc, p, c2),
              x.mul(arith::DivUIOp::create(x.b, x.loc, o, c2), c2));
    Value rb = arith::DivUIOp::create(x.b, x.loc, w, quads);
    Value kq = arith::RemUIOp::create(x.b, x.loc, w, quads);
    row = x.add(x.mul(rb, c8), rowIn);
    chunk = x.add(x.mul(kq, x.cstIndex(4)), chunkIn);
    dst = x.add(x.add(x.mul(chunk, x.cstIndex(wgmmaColumnBytes(rows) / 2)),
                      x.mul(rb, x.cstIndex(64))),
                x.mul(rowIn, c8));
  }

  /// Copies rows [r0, r0 + rows) of `src[batch]` into the tile at element
  /// `base` of `tile`. A tile that ends at or before `limit` copies without
  /// bounds arithmetic; otherwise rows at or past `limit` are zero-filled
  /// (their source row clamped). Does not commit.
  void copy(FragmentBuilder &fb, Value src, Value tile, Value base,
            Value batch, Value r0, Value limit, const LaneIds &ids) const {
    auto tokenType = nvgpu::DeviceAsyncTokenType::get(fb.b.getContext());
    auto emitAll = [&](FragmentBuilder &x, bool bounded) {
      Value c0 = x.cstIndex(0), c8 = x.cstIndex(8);
      Value lastRow =
          bounded ? x.maxS(x.sub(limit, x.cstIndex(1)), c0) : Value();
      for (int64_t it = 0; it < rounds(); ++it) {
        Value row, chunk, dst;
        if (fixed) {
          row = x.add(row0, x.cstIndex(it * rowStep));
          chunk = this->chunk;
          dst = x.add(dst0, x.cstIndex(it * dstStep));
        } else {
          groupIndices(x, x.add(ids.warp, x.cstIndex(it * warps)), ids.lane,
                       row, chunk, dst);
        }
        Value key = x.add(r0, row);
        Value srcElements;
        if (bounded) {
          Value valid = x.cmpI(arith::CmpIPredicate::slt, key, limit);
          srcElements = x.select(valid, c8, c0);
          key = x.minS(key, lastRow);
        }
        nvgpu::DeviceAsyncCopyOp::create(
            x.b, x.loc, tokenType, tile, ValueRange{x.add(base, dst)}, src,
            ValueRange{batch, key, x.mul(chunk, c8)}, x.b.getIndexAttr(8),
            srcElements, /*bypassL1=*/UnitAttr());
      }
    };
    emitFullOrBounded(fb, r0, rows, limit, emitAll);
  }
};

void commitGroup(FragmentBuilder &x) {
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(x.b.getContext());
  nvgpu::DeviceAsyncCreateGroupOp::create(x.b, x.loc, tokenType,
                                          ValueRange{});
}

} // namespace

void mlir::fa::gpukernel::buildWgmmaForwardBody(
    OpBuilder &b, Location loc, gpu::GPUFuncOp func,
    const TensorCoreForwardShape &ks) {
  FragmentBuilder fb(b, loc, ks.elt);
  Type f32 = fb.f32, i32 = b.getI32Type(), i64 = b.getI64Type();
  const int64_t W = ks.numWarps, threads = 32 * W;
  const int64_t blockM = 16 * W, blockN = ks.blockN;
  const int64_t dChunks = ks.d / 16; // k16 steps of S = Q K^T
  const int64_t sTiles = blockN / 8; // n8 slices of S
  const int64_t oTiles = ks.dv / 8;  // n8 slices of O

  Value q = func.getArgument(0), k = func.getArgument(1),
        v = func.getArgument(2), o = func.getArgument(3);
  Value lse = ks.hasLse ? func.getArgument(4) : Value();
  b.setInsertionPointToStart(&func.front());

  TensorCoreSharedLayout layout = tensorCoreSharedLayout(ks);
  const int64_t stages = ks.wgmmaStages;
  const int64_t colM = wgmmaColumnBytes(blockM), colN = wgmmaColumnBytes(blockN);
  const int64_t kStageBytes = ks.d / 8 * colN, vStageBytes = ks.dv / 8 * colN;
  Value smem = dynamicShared(fb);
  auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(),
                                              gpu::AddressSpace::Workgroup);
  Value tile = memref::ViewOp::create(
      b, loc,
      MemRefType::get({layout.bytes / 2}, ks.elt, MemRefLayoutAttrInterface(),
                      workgroup),
      smem, fb.cstIndex(0), ValueRange{});
  Value smemAddr = arith::IndexCastUIOp::create(
      b, loc, i64, memref::ExtractAlignedPointerAsIndexOp::create(b, loc, smem));
  Value smemUnits = arith::ShRUIOp::create(
      b, loc, smemAddr, arith::ConstantIntOp::create(b, loc, i64, 4));

  Value c0 = fb.cstIndex(0), c1 = fb.cstIndex(1);
  Value zero = fb.cstF32(0.0), ninf = fb.cstF32(kNegInf);
  Value tq = memref::DimOp::create(b, loc, q, 1);
  Value tk = memref::DimOp::create(b, loc, k, 1);
  Value queryBlock = queryBlockIndex(fb, ks.causal);
  Value batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  LaneIds ids = LaneIds::create(fb);
  Value warp = ids.warp, g = ids.g, t = ids.t, t2 = ids.t2;

  Value i0 = fb.mul(queryBlock, fb.cstIndex(blockM));
  Value warpRow0 = fb.add(i0, fb.mul(warp, fb.cstIndex(16)));
  auto rowOf = [&](FragmentBuilder &x, int64_t h) {
    return x.add(x.add(warpRow0, x.cstIndex(8 * h)), g);
  };

  VisibleKeys keys = visibleKeys(fb, ks.causal, i0, blockM, tq, tk);
  Value causalOffset = keys.causalOffset, kvEnd = keys.kvEnd;
  Value numKeyBlocks =
      arith::CeilDivSIOp::create(b, loc, kvEnd, fb.cstIndex(blockN));

  // Descriptors. Q (A, K-major): this warpgroup's 64 rows start at byte
  // 1024 * warpgroup; k16 step kc two core columns (2 * colM bytes) more.
  Value warpgroup = arith::DivUIOp::create(b, loc, warp, fb.cstIndex(4));
  Descriptor qDesc = makeDescriptor(fb, smemUnits, colM, 128);
  Value qBase = qDesc.at(
      fb, arith::IndexCastUIOp::create(
              b, loc, i64,
              fb.add(fb.mul(warpgroup, fb.cstIndex(1024 >> 4)),
                     fb.cstIndex(layout.qOffset >> 4))));
  Descriptor kDesc = makeDescriptor(fb, smemUnits, colN, 128);
  // V (B, N-major): the leading byte offset steps along K (keys: 128),
  // the stride byte offset along N (head dim: one core column, colN).
  Descriptor vDesc = makeDescriptor(fb, smemUnits, 128, colN);

  // cp.async of key block jb's K (or V) tile into stage jb % 2, when jb is
  // a block this query block visits; always commits a group (possibly
  // empty) so that the group count per iteration is fixed.
  CanonicalCopy kCopy = CanonicalCopy::plan(fb, blockN, ks.d, threads, ids);
  CanonicalCopy vCopy =
      ks.dv == ks.d ? kCopy
                    : CanonicalCopy::plan(fb, blockN, ks.dv, threads, ids);
  auto loadTile = [&](FragmentBuilder &x, Value jb, bool isV) {
    Value inRange = x.cmpI(arith::CmpIPredicate::slt, jb, numKeyBlocks);
    scf::IfOp::create(x.b, x.loc, inRange, [&](OpBuilder &ib, Location il) {
      FragmentBuilder y(ib, il, ks.elt);
      Value stage =
          arith::RemUIOp::create(ib, il, jb, y.cstIndex(stages));
      int64_t offset = isV ? layout.vOffset : layout.kOffset;
      int64_t stageBytes = isV ? vStageBytes : kStageBytes;
      (isV ? vCopy : kCopy)
          .copy(y, isV ? v : k, tile,
                y.add(y.cstIndex(offset / 2),
                      y.mul(stage, y.cstIndex(stageBytes / 2))),
                batch, y.mul(jb, y.cstIndex(blockN)), tk, ids);
      scf::YieldOp::create(ib, il);
    });
    commitGroup(x);
  };
  // The descriptor units of stage jb % 2 of the tile at `offset`.
  auto stageUnits = [&](FragmentBuilder &x, Value jb, int64_t offset,
                        int64_t stageBytes) -> Value {
    Value stage = arith::IndexCastUIOp::create(
        x.b, x.loc, i64,
        arith::RemUIOp::create(x.b, x.loc, jb, x.cstIndex(stages)));
    return arith::AddIOp::create(
        x.b, x.loc,
        arith::MulIOp::create(
            x.b, x.loc, stage,
            arith::ConstantIntOp::create(x.b, x.loc, i64, stageBytes >> 4)),
        arith::ConstantIntOp::create(x.b, x.loc, i64, offset >> 4));
  };
  // Waits for the cp.async groups older than the newest `pending` ones,
  // then makes every thread's copies visible to wgmma (async proxy).
  auto landCopies = [&](FragmentBuilder &x, int64_t pending) {
    NVVM::CpAsyncWaitGroupOp::create(x.b, x.loc, pending);
    inlinePtx(x, "fence.proxy.async.shared::cta;", {}, ValueRange{});
    gpu::BarrierOp::create(x.b, x.loc);
  };

  // Issues S = Q K_jb^T (dChunks wgmma m64n{blockN}k16, both operands from
  // workgroup memory) as one wgmma group; the accumulators are valid after
  // the matching wait.
  SmallVector<Type> sTypes(sTiles * 4, f32);
  auto issueS = [&](FragmentBuilder &x, Value jb) {
    Value kBase = kDesc.at(x, stageUnits(x, jb, layout.kOffset, kStageBytes));
    SmallVector<Value> sAcc;
    inlinePtx(x, "wgmma.fence.sync.aligned;", {}, ValueRange{});
    for (int64_t kc = 0; kc < dChunks; ++kc) {
      Value descA = arith::AddIOp::create(
          x.b, x.loc, qBase,
          arith::ConstantIntOp::create(x.b, x.loc, i64,
                                       (kc * 2 * colM) >> 4));
      Value descB = arith::AddIOp::create(
          x.b, x.loc, kBase,
          arith::ConstantIntOp::create(x.b, x.loc, i64,
                                       (kc * 2 * colN) >> 4));
      Value scaleD = arith::ConstantIntOp::create(x.b, x.loc, i32, kc ? 1 : 0);
      sAcc = inlinePtx(x, wgmmaText(blockN, ks.elt, false, false), sTypes,
                       ValueRange{descA, descB, scaleD},
                       kc ? ValueRange(sAcc) : ValueRange{});
    }
    inlinePtx(x, "wgmma.commit_group.sync.aligned;", {}, ValueRange{});
    return sAcc;
  };
  // Issues O += P V_jb (blockN/16 wgmma m64n{dv}k16, A = P from the
  // registers `pRegs`, B = V_jb N-major from workgroup memory) as one
  // wgmma group on the accumulator scalars `oAcc`.
  SmallVector<Type> oTypes(oTiles * 4, f32);
  auto issuePV = [&](FragmentBuilder &x, SmallVector<Value> oAcc,
                     SmallVector<Value> pRegs, Value jb) {
    Value vBase = vDesc.at(x, stageUnits(x, jb, layout.vOffset, vStageBytes));
    SmallVector<Value> fenced = oAcc;
    llvm::append_range(fenced, pRegs);
    fenced = ptxWith(x, "wgmma.fence.sync.aligned;", fenced);
    oAcc.assign(fenced.begin(), fenced.begin() + oAcc.size());
    pRegs.assign(fenced.begin() + oAcc.size(), fenced.end());
    Value one = arith::ConstantIntOp::create(x.b, x.loc, i32, 1);
    for (int64_t kk = 0; kk < sTiles / 2; ++kk) {
      Value descB = arith::AddIOp::create(
          x.b, x.loc, vBase,
          arith::ConstantIntOp::create(x.b, x.loc, i64, (kk * 256) >> 4));
      SmallVector<Value> ins(pRegs.begin() + 4 * kk, pRegs.begin() + 4 * kk + 4);
      ins.push_back(descB);
      ins.push_back(one);
      oAcc = inlinePtx(x, wgmmaText(ks.dv, ks.elt, true, true), oTypes, ins,
                       oAcc);
    }
    inlinePtx(x, "wgmma.commit_group.sync.aligned;", {}, ValueRange{});
    return oAcc;
  };

  // The online softmax of key block jb on the S accumulators (R = 1 m16
  // tile per warp; the helpers of TensorCoreFragments.h): masking, new m
  // and l, the rescale factors alpha of O, whether any row max moved, and P
  // in q's type as the 32-bit A registers of P V.
  struct Softmax {
    OnlineSoftmaxStep step;
    SmallVector<Value> pRegs;
  };
  auto softmax = [&](FragmentBuilder &x, ArrayRef<Value> sAcc, Value jb,
                     ArrayRef<Value> m, ArrayRef<Value> l) {
    Value j0 = x.mul(jb, x.cstIndex(blockN));
    SmallVector<SmallVector<Value>> s(1);
    s[0] = toTiles(x, sAcc);
    Value scaleC = scoreFactor(x, s, ks.scale);
    maskScoreBlock(x, s, ks.causal, j0, blockN, tk, warpRow0, causalOffset,
                   t2, [&](FragmentBuilder &y, int64_t, int64_t h) {
                     return rowOf(y, h);
                   });
    Softmax r{onlineSoftmaxStep(x, s, m, l, scaleC), {}};
    SmallVector<SmallVector<Value>> pFrag = toAFragments(x, r.step.p);
    for (Value frag : pFrag[0])
      for (int64_t i = 0; i < 4; ++i) {
        Value word = vector::BitCastOp::create(
            x.b, x.loc, x.vec({1}, i32), x.extract(frag, {i}));
        r.pRegs.push_back(x.extract(word, {0}));
      }
    return r;
  };

  // Copies, one group each: (Q, K_0), V_0, K_1, V_1, ... up to the last
  // stage (every stage is free). Rows past Tq are zero-filled; no copy of a block that is
  // not visited (Tk = 0 gives k and v no storage).
  CanonicalCopy::plan(fb, blockM, ks.d, threads, ids)
      .copy(fb, q, tile, fb.cstIndex(layout.qOffset / 2), batch, i0, tq, ids);
  for (int64_t j = 0; j < stages; ++j) {
    loadTile(fb, fb.cstIndex(j), /*isV=*/false);
    loadTile(fb, fb.cstIndex(j), /*isV=*/true);
  }

  // Loop-carried: O accumulator tiles, m and l of rows g / g + 8, and the
  // P registers of the previous key block (FlashAttention-3, Section 3.2,
  // intra-warpgroup overlap: P_{j-1} V_{j-1} runs on the tensor cores while
  // the softmax of S_j runs).
  SmallVector<Value> init;
  for (int64_t i = 0; i < oTiles; ++i)
    init.push_back(fb.zeroAcc());
  init.push_back(ninf);
  init.push_back(ninf);
  init.push_back(zero);
  init.push_back(zero);
  Value zeroWord = arith::ConstantIntOp::create(b, loc, i32, 0);
  for (int64_t i = 0; i < sTiles * 2; ++i)
    init.push_back(zeroWord);
  const int64_t mBase = oTiles, lBase = mBase + 2, pBase = lBase + 2;
  SmallVector<Type> carriedTypes;
  for (Value val : init)
    carriedTypes.push_back(val.getType());
  Value anyBlock = fb.cmpI(arith::CmpIPredicate::sgt, numKeyBlocks, c0);

  // Prologue (when any key block is visited): S_0, its softmax, P_0.
  auto prologue = scf::IfOp::create(b, loc, carriedTypes, anyBlock,
                                    /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(prologue.thenBlock());
    FragmentBuilder x(b, loc, ks.elt);
    landCopies(x, 2 * stages - 1); // (Q, K_0) landed
    SmallVector<Value> sAcc = issueS(x, c0);
    sAcc = ptxWith(x, "wgmma.wait_group.sync.aligned 0;", sAcc);
    Softmax sm = softmax(x, sAcc, c0, {init[mBase], init[mBase + 1]},
                         {init[lBase], init[lBase + 1]});
    SmallVector<Value> yielded(init.begin(), init.begin() + oTiles);
    llvm::append_range(yielded, sm.step.m);
    llvm::append_range(yielded, sm.step.l);
    llvm::append_range(yielded, sm.pRegs);
    scf::YieldOp::create(b, loc, yielded);
    b.setInsertionPointToStart(prologue.elseBlock());
    scf::YieldOp::create(b, loc, init);
  }

  auto loop = scf::ForOp::create(
      b, loc, c1, numKeyBlocks, c1, prologue.getResults(),
      [&](OpBuilder &lb, Location ll, Value jb, ValueRange carried) {
        FragmentBuilder x(lb, ll, ks.elt);
        SmallVector<Value> acc(carried.begin(), carried.begin() + mBase);
        SmallVector<Value> m(carried.begin() + mBase,
                             carried.begin() + lBase);
        SmallVector<Value> l(carried.begin() + lBase,
                             carried.begin() + pBase);
        SmallVector<Value> pPrev(carried.begin() + pBase, carried.end());

        // K_j and V_{j-1} landed (V_j, K_{j+1}, V_{j+1} may be in flight);
        // every warpgroup is done with S_{j-1}, so K_{j+s-1} may replace
        // K_{j-1}.
        landCopies(x, 2 * stages - 3);
        Value ahead = x.add(jb, x.cstIndex(stages - 1));
        loadTile(x, ahead, /*isV=*/false);

        // S_j first, then P_{j-1} V_{j-1}; wait for S_j only and run its
        // softmax while the P V group is on the tensor cores.
        SmallVector<Value> sAcc = issueS(x, jb);
        SmallVector<Value> oAcc =
            issuePV(x, toScalars(x, acc), pPrev, x.sub(jb, c1));
        sAcc = ptxWith(x, "wgmma.wait_group.sync.aligned 1;", sAcc);
        Softmax sm = softmax(x, sAcc, jb, m, l);
        oAcc = ptxWith(x, "wgmma.wait_group.sync.aligned 0;", oAcc);
        SmallVector<Value> newAcc = toTiles(x, oAcc);

        // O *= alpha_j where some row's max moved (else alpha = 1).
        rescaleIfMaxMoved(x, sm.step.anyMaxChanged, newAcc, oTiles,
                          sm.step.alphas);

        // Every warpgroup is done with V_{j-1}: V_{j+s-1} replaces it.
        gpu::BarrierOp::create(lb, ll);
        loadTile(x, ahead, /*isV=*/true);

        SmallVector<Value> yielded = newAcc;
        llvm::append_range(yielded, sm.step.m);
        llvm::append_range(yielded, sm.step.l);
        llvm::append_range(yielded, sm.pRegs);
        scf::YieldOp::create(lb, ll, yielded);
      });

  // The last block's P V (when any block was visited).
  SmallVector<Type> accTypes(oTiles, fb.vec({2, 2}, f32));
  auto last = scf::IfOp::create(b, loc, accTypes, anyBlock,
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(last.thenBlock());
    FragmentBuilder x(b, loc, ks.elt);
    landCopies(x, 0);
    SmallVector<Value> acc(loop.getResults().begin(),
                           loop.getResults().begin() + oTiles);
    SmallVector<Value> pLast(loop.getResults().begin() + pBase,
                             loop.getResults().end());
    SmallVector<Value> oAcc = issuePV(x, toScalars(x, acc), pLast,
                                      x.sub(numKeyBlocks, c1));
    oAcc = ptxWith(x, "wgmma.wait_group.sync.aligned 0;", oAcc);
    scf::YieldOp::create(b, loc, toTiles(x, oAcc));
    b.setInsertionPointToStart(last.elseBlock());
    scf::YieldOp::create(
        b, loc, ValueRange(loop.getResults().slice(0, oTiles)));
  }
  NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
  // Epilogue: o = O / l, lse = m ln 2 + ln l.
  for (int64_t h = 0; h < 2; ++h)
    storeForwardRow(fb, SmallVector<Value>(last.getResults()),
                    loop.getResult(mBase + h), loop.getResult(lBase + h), h,
                    [&] { return rowOf(fb, h); }, tq, o, lse, batch, t, t2);
  gpu::ReturnOp::create(b, loc);
}
