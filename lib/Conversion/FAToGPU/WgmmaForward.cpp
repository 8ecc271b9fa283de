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
//     barrier; cp.async K_{j+2}, V_{j+2} into stage j % 2 (group j + 2)
//   o = O / l, lse = m ln 2 + ln l
//
// Tiles use wgmma's canonical layout without swizzling (PTX ISA, "Shared
// Memory Matrix Layout"): 8 rows x 16 bytes core matrices, 128 contiguous
// bytes each; the 16-byte chunk c of tile row r lives at byte
// (c * rows / 8 + r / 8) * 128 + (r % 8) * 16. For Q and K (K-major
// operands) cores adjacent along the head dim are rows * 16 bytes apart
// (leading byte offset) and cores adjacent along rows 128 (stride byte
// offset); V is the N-major B operand of P V (N = head dim, K = keys):
// cores adjacent along keys are 128 bytes apart, along the head dim
// block_n * 16. cp.async writes each core's 8 rows from 8 consecutive
// lanes (128 contiguous bytes: no bank conflicts), the 4 lane octets of a
// warp read 64 contiguous bytes of each global row.
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

#include <map>
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
  Value at(FragmentBuilder &x, int64_t offsetBytes) const {
    return at(x, arith::ConstantIntOp::create(x.b, x.loc, x.b.getI64Type(),
                                              offsetBytes >> 4));
  }
};

Descriptor makeDescriptor(FragmentBuilder &x, Value smemUnits, int64_t lbo,
                          int64_t sbo) {
  int64_t high = ((lbo >> 4) << 16) | ((sbo >> 4) << 32);
  Value h = arith::ConstantIntOp::create(x.b, x.loc, x.b.getI64Type(), high);
  return Descriptor{arith::AddIOp::create(x.b, x.loc, smemUnits, h)};
}

/// Copies rows [r0, r0 + rows) of `src[batch]` (`width` elements each) by
/// 16-byte cp.async into the canonical layout (file header) at element
/// `dstOffset` of `tile`; rows at or past `limit` are zero-filled (their
/// source row clamped). Does not commit.
void copyCanonical(FragmentBuilder &x, Value src, Value tile, Value dstOffset,
                   Value batch, Value r0, Value limit, int64_t rows,
                   int64_t width, int64_t threads, const LaneIds &ids) {
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(x.b.getContext());
  const int64_t warps = threads / 32, rows8 = rows / 8;
  const int64_t groups = rows8 * (width / 32);
  Value c0 = x.cstIndex(0), c8 = x.cstIndex(8);
  Value lane8 = arith::RemUIOp::create(x.b, x.loc, ids.lane, c8);
  Value octet = arith::DivUIOp::create(x.b, x.loc, ids.lane, c8);
  Value lastRow = x.maxS(x.sub(limit, x.cstIndex(1)), c0);
  for (int64_t it = 0; it * warps < groups; ++it) {
    Value w = x.add(ids.warp, x.cstIndex(it * warps));
    Value rb = arith::RemUIOp::create(x.b, x.loc, w, x.cstIndex(rows8));
    Value kq = arith::DivUIOp::create(x.b, x.loc, w, x.cstIndex(rows8));
    Value row = x.add(x.mul(rb, c8), lane8);
    Value chunk = x.add(x.mul(kq, x.cstIndex(4)), octet);
    Value dst = x.add(dstOffset,
                      x.add(x.mul(x.add(x.mul(chunk, x.cstIndex(rows8)), rb),
                                  x.cstIndex(64)),
                            x.mul(lane8, c8)));
    Value key = x.add(r0, row);
    Value valid = x.cmpI(arith::CmpIPredicate::slt, key, limit);
    Value srcElements = x.select(valid, c8, c0);
    key = x.minS(key, lastRow);
    nvgpu::DeviceAsyncCopyOp::create(
        x.b, x.loc, tokenType, tile, ValueRange{dst}, src,
        ValueRange{batch, key, x.mul(chunk, c8)}, x.b.getIndexAttr(8),
        srcElements, x.b.getUnitAttr());
  }
}

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
  const int64_t kStageBytes = blockN * ks.d * 2, vStageBytes = blockN * ks.dv * 2;
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

  Value c0 = fb.cstIndex(0), c1 = fb.cstIndex(1), c2 = fb.cstIndex(2);
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
  // 1024 * warpgroup; k16 step kc at 2 * blockM * 16 bytes more.
  Value warpgroup = arith::DivUIOp::create(b, loc, warp, fb.cstIndex(4));
  Descriptor qDesc = makeDescriptor(fb, smemUnits, blockM * 16, 128);
  Value qBase = qDesc.at(
      fb, arith::IndexCastUIOp::create(
              b, loc, i64,
              fb.add(fb.mul(warpgroup, fb.cstIndex(1024 >> 4)),
                     fb.cstIndex(layout.qOffset >> 4))));
  Descriptor kDesc = makeDescriptor(fb, smemUnits, blockN * 16, 128);
  // V (B, N-major): the leading byte offset steps along K (keys: 128),
  // the stride byte offset along N (head dim: blockN * 16).
  Descriptor vDesc = makeDescriptor(fb, smemUnits, 128, blockN * 16);

  auto loadStage = [&](FragmentBuilder &x, Value jb, Value stage) {
    Value j0 = x.mul(jb, x.cstIndex(blockN));
    copyCanonical(x, k, tile,
                  x.add(x.cstIndex(layout.kOffset / 2),
                        x.mul(stage, x.cstIndex(kStageBytes / 2))),
                  batch, j0, tk, blockN, ks.d, threads, ids);
    copyCanonical(x, v, tile,
                  x.add(x.cstIndex(layout.vOffset / 2),
                        x.mul(stage, x.cstIndex(vStageBytes / 2))),
                  batch, j0, tk, blockN, ks.dv, threads, ids);
  };
  auto loadStageIf = [&](FragmentBuilder &x, Value jb, Value stage) {
    Value inRange = x.cmpI(arith::CmpIPredicate::slt, jb, numKeyBlocks);
    scf::IfOp::create(x.b, x.loc, inRange, [&](OpBuilder &ib, Location il) {
      FragmentBuilder y(ib, il, ks.elt);
      loadStage(y, jb, stage);
      scf::YieldOp::create(ib, il);
    });
  };

  // Group 0: Q (rows past Tq zero-filled) and stage 0; group 1: stage 1
  // (each group committed even when empty, so that "all but the newest"
  // is always the current stage).
  copyCanonical(fb, q, tile, fb.cstIndex(layout.qOffset / 2), batch, i0, tq,
                blockM, ks.d, threads, ids);
  loadStageIf(fb, c0, c0);
  commitGroup(fb);
  loadStageIf(fb, c1, c1);
  commitGroup(fb);

  SmallVector<Value> init;
  for (int64_t i = 0; i < oTiles; ++i)
    init.push_back(fb.zeroAcc());
  init.push_back(ninf);
  init.push_back(ninf);
  init.push_back(zero);
  init.push_back(zero);
  const int64_t mBase = oTiles, lBase = mBase + 2;

  auto loop = scf::ForOp::create(
      b, loc, c0, numKeyBlocks, c1, init,
      [&](OpBuilder &lb, Location ll, Value jb, ValueRange carried) {
        FragmentBuilder x(lb, ll, ks.elt);
        Value j0 = x.mul(jb, x.cstIndex(blockN));
        Value stage = arith::RemUIOp::create(lb, ll, jb, c2);
        Value stage64 = arith::IndexCastUIOp::create(lb, ll, i64, stage);
        SmallVector<Value> acc(carried.begin(), carried.begin() + mBase);
        SmallVector<Value> m(carried.begin() + mBase,
                             carried.begin() + lBase);
        SmallVector<Value> l(carried.begin() + lBase, carried.end());

        // Stage j has landed (only group j + 1 may be in flight); the
        // proxy fence makes the cp.async writes visible to wgmma.
        NVVM::CpAsyncWaitGroupOp::create(lb, ll, 1);
        inlinePtx(x, "fence.proxy.async.shared::cta;", {}, ValueRange{});
        gpu::BarrierOp::create(lb, ll);

        // S = Q K_j^T: dChunks wgmma m64n{blockN}k16, both operands from
        // workgroup memory.
        auto stageUnits = [&](int64_t offset, int64_t stageBytes) {
          return arith::AddIOp::create(
              lb, ll,
              arith::MulIOp::create(
                  lb, ll, stage64,
                  arith::ConstantIntOp::create(lb, ll, i64, stageBytes >> 4)),
              arith::ConstantIntOp::create(lb, ll, i64, offset >> 4));
        };
        Value kBase = kDesc.at(x, stageUnits(layout.kOffset, kStageBytes));
        Value vBase = vDesc.at(x, stageUnits(layout.vOffset, vStageBytes));
        SmallVector<Type> sTypes(sTiles * 4, f32);
        SmallVector<Value> sAcc;
        inlinePtx(x, "wgmma.fence.sync.aligned;", {}, ValueRange{});
        for (int64_t kc = 0; kc < dChunks; ++kc) {
          Value unitsA = arith::ConstantIntOp::create(
              lb, ll, i64, (kc * 2 * blockM * 16) >> 4);
          Value unitsB = arith::ConstantIntOp::create(
              lb, ll, i64, (kc * 2 * blockN * 16) >> 4);
          Value descA = arith::AddIOp::create(lb, ll, qBase, unitsA);
          Value descB = arith::AddIOp::create(lb, ll, kBase, unitsB);
          Value scaleD = arith::ConstantIntOp::create(lb, ll, i32, kc ? 1 : 0);
          sAcc = inlinePtx(x, wgmmaText(blockN, ks.elt, false, false), sTypes,
                           ValueRange{descA, descB, scaleD},
                           kc ? ValueRange(sAcc) : ValueRange{});
        }
        inlinePtx(x, "wgmma.commit_group.sync.aligned;", {}, ValueRange{});
        sAcc = ptxWith(x, "wgmma.wait_group.sync.aligned 0;", sAcc);
        SmallVector<SmallVector<Value>> s(1);
        s[0] = toTiles(x, sAcc);

        Value scaleC = scoreFactor(x, s, ks.scale);

        // Masking as in TensorCoreForward.cpp (R = 1 m16 tile per warp).
        Value needMask = x.cmpI(arith::CmpIPredicate::sgt,
                                x.add(j0, x.cstIndex(blockN)), tk);
        if (ks.causal != CausalKind::none) {
          Value lastKey = x.add(j0, x.cstIndex(blockN - 1));
          Value straddles = x.cmpI(arith::CmpIPredicate::sgt, lastKey,
                                   x.add(warpRow0, causalOffset));
          needMask = arith::OrIOp::create(lb, ll, needMask, straddles);
        }
        std::map<int64_t, Value> limits;
        maskFragments(
            x, needMask, s,
            [&](FragmentBuilder &y, int64_t, int64_t n, int64_t h,
                int64_t e) {
              Value &limit = limits[h];
              if (!limit) {
                Value lastKey = y.sub(tk, c1);
                limit = ks.causal == CausalKind::none
                            ? lastKey
                            : y.minS(y.add(rowOf(y, h), causalOffset),
                                     lastKey);
              }
              Value key = y.add(y.add(j0, t2), y.cstIndex(n * 8 + e));
              return y.cmpI(arith::CmpIPredicate::sgt, key, limit);
            });

        // Online softmax (FlashAttention-2, Algorithm 1, lines 9-10), in
        // log2 units.
        SmallVector<Value> newM(2), newL(2), alphas(2);
        Value anyMaxChanged;
        Value mUse[2];
        for (int64_t h = 0; h < 2; ++h) {
          Value mx = ninf;
          for (int64_t n = 0; n < sTiles; ++n)
            for (int64_t e = 0; e < 2; ++e)
              mx = x.maxF(mx, x.extract(s[0][n], {h, e}));
          mx = x.rowReduce(mx, /*isMax=*/true);
          Value mNew = x.maxF(m[h], x.mulF(mx, scaleC));
          newM[h] = mNew;
          mUse[h] = x.select(x.isNegInf(mNew), zero, mNew);
          alphas[h] = x.exp2(x.subF(m[h], mUse[h]));
          newL[h] = x.mulF(l[h], alphas[h]);
          Value changed = arith::CmpFOp::create(
              lb, ll, arith::CmpFPredicate::ONE, m[h], mNew);
          anyMaxChanged = anyMaxChanged ? arith::OrIOp::create(
                                              lb, ll, anyMaxChanged, changed)
                                        : changed;
        }
        Value negM[2] = {arith::NegFOp::create(lb, ll, mUse[0]),
                         arith::NegFOp::create(lb, ll, mUse[1])};
        SmallVector<SmallVector<Value>> p(1);
        for (int64_t n = 0; n < sTiles; ++n)
          p[0].push_back(
              mapFragment(x, s[0][n], [&](Value val, int64_t h, int64_t) {
                Value e = x.exp2(x.fma(val, scaleC, negM[h]));
                newL[h] = x.addF(newL[h], e);
                return e;
              }));
        SmallVector<SmallVector<Value>> pFrag = toAFragments(x, p);

        // O *= alpha where some row's max moved.
        SmallVector<Value> newAcc = acc;
        {
          SmallVector<Type> accTypes(newAcc.size(), x.vec({2, 2}, f32));
          auto rescale = scf::IfOp::create(lb, ll, accTypes, anyMaxChanged,
                                           /*withElseRegion=*/true);
          OpBuilder::InsertionGuard guard(lb);
          lb.setInsertionPointToStart(rescale.thenBlock());
          SmallVector<Value> scaled;
          for (Value tileAcc : newAcc)
            scaled.push_back(mapFragment(
                x, tileAcc,
                [&](Value val, int64_t h, int64_t) {
                  return x.mulF(val, alphas[h]);
                }));
          scf::YieldOp::create(lb, ll, scaled);
          lb.setInsertionPointToStart(rescale.elseBlock());
          scf::YieldOp::create(lb, ll, newAcc);
          lb.setInsertionPointAfter(rescale);
          for (auto [i, result] : llvm::enumerate(rescale.getResults()))
            newAcc[i] = result;
        }

        // O += P V_j: blockN/16 wgmma m64n{dv}k16, A (P) from registers,
        // B = V_j N-major (transposed) from workgroup memory.
        SmallVector<Value> oAcc = toScalars(x, newAcc);
        SmallVector<Value> aRegs;
        for (int64_t kk = 0; kk < sTiles / 2; ++kk)
          for (int64_t i = 0; i < 4; ++i) {
            Value pair = x.extract(pFrag[0][kk], {i});
            Value word = vector::BitCastOp::create(lb, ll,
                                                   x.vec({1}, i32), pair);
            aRegs.push_back(x.extract(word, {0}));
          }
        {
          SmallVector<Value> fenced = oAcc;
          llvm::append_range(fenced, aRegs);
          fenced = ptxWith(x, "wgmma.fence.sync.aligned;", fenced);
          oAcc.assign(fenced.begin(), fenced.begin() + oAcc.size());
          aRegs.assign(fenced.begin() + oAcc.size(), fenced.end());
        }
        SmallVector<Type> oTypes(oAcc.size(), f32);
        Value one = arith::ConstantIntOp::create(lb, ll, i32, 1);
        for (int64_t kk = 0; kk < sTiles / 2; ++kk) {
          Value descB = arith::AddIOp::create(
              lb, ll, vBase,
              arith::ConstantIntOp::create(lb, ll, i64, (kk * 256) >> 4));
          SmallVector<Value> ins(aRegs.begin() + 4 * kk,
                                 aRegs.begin() + 4 * kk + 4);
          ins.push_back(descB);
          ins.push_back(one);
          oAcc = inlinePtx(x, wgmmaText(ks.dv, ks.elt, true, true), oTypes,
                           ins, oAcc);
        }
        inlinePtx(x, "wgmma.commit_group.sync.aligned;", {}, ValueRange{});
        oAcc = ptxWith(x, "wgmma.wait_group.sync.aligned 0;", oAcc);
        newAcc = toTiles(x, oAcc);

        // Every warpgroup is done with stage j: refill it with j + 2.
        gpu::BarrierOp::create(lb, ll);
        loadStageIf(x, x.add(jb, c2), stage);
        commitGroup(x);

        SmallVector<Value> yielded = newAcc;
        llvm::append_range(yielded, newM);
        llvm::append_range(yielded, newL);
        scf::YieldOp::create(lb, ll, yielded);
      });
  NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);

  // Epilogue: o = O / l, lse = m ln 2 + ln l.
  const double ln2 = 0.6931471805599453;
  for (int64_t h = 0; h < 2; ++h) {
    Value m = loop.getResult(mBase + h);
    Value l = fb.rowReduce(loop.getResult(lBase + h), /*isMax=*/false);
    Value empty =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, zero);
    Value inv = fb.select(
        empty, zero, arith::DivFOp::create(b, loc, fb.cstF32(1.0), l));
    Value row = rowOf(fb, h);
    Value valid = fb.cmpI(arith::CmpIPredicate::slt, row, tq);
    scf::IfOp::create(b, loc, valid, [&](OpBuilder &ib, Location il) {
      FragmentBuilder y(ib, il, ks.elt);
      SmallVector<Value> accRow(loop.getResults().slice(0, oTiles));
      storeFragmentRow(y, accRow, h, inv, o, batch, row, t2);
      if (lse) {
        Value isFirst = y.cmpI(arith::CmpIPredicate::eq, t, c0);
        scf::IfOp::create(ib, il, isFirst, [&](OpBuilder &sb, Location sl) {
          FragmentBuilder z(sb, sl, ks.elt);
          Value value =
              z.addF(z.mulF(m, z.cstF32(ln2)), math::LogOp::create(sb, sl, l));
          z.store(z.select(empty, ninf, value), lse, {batch, row});
          scf::YieldOp::create(sb, sl);
        });
      }
      scf::YieldOp::create(ib, il);
    });
  }
  gpu::ReturnOp::create(b, loc);
}
