//===- WgmmaFragments.h - sm_90a warpgroup MMA builders --------*- C++ -*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// Builders shared by the sm_90a wgmma kernels of convert-fa-to-gpu
// (WgmmaForward.cpp, WgmmaBackward.cpp): inline PTX for wgmma.mma_async and
// its fence/commit/wait (PTX ISA 8.0, "Asynchronous Warpgroup Level Matrix
// Multiply-Accumulate Instructions"), shared-memory matrix descriptors, and
// the cp.async copy of a tile into wgmma's canonical no-swizzle layout
// (PTX ISA, "Shared Memory Matrix Layout"): 8 rows x 16 bytes core
// matrices, 128 contiguous bytes each; the 16-byte chunk c of tile row r
// lives at byte c * col + (r / 8) * 128 + (r % 8) * 16,
// col = wgmmaColumnBytes(rows).
//
// A tile so laid out is a K-major operand when its rows are M or N (Q, K:
// leading byte offset col, stride byte offset 128) and an N-major B
// operand when its rows are K (V in P V: leading 128, stride col).
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_CONVERSION_FATOGPU_WGMMAFRAGMENTS_H
#define FA_LIB_CONVERSION_FATOGPU_WGMMAFRAGMENTS_H

#include "TensorCoreFragments.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"

#include "llvm/ADT/StringExtras.h"

#include <string>

namespace mlir {
namespace fa {
namespace gpukernel {

/// The inline-asm constraint letter of an operand type.
inline StringRef constraintOf(Type t) {
  if (t.isF32())
    return "f";
  if (t.isInteger(64) || isa<LLVM::LLVMPointerType>(t))
    return "l";
  return "r";
}

/// The aligned data pointer (a generic `!llvm.ptr`) of the global
/// `memref`: an unrealized cast of the memref to its LLVM descriptor, with
/// `indexBitwidth`-bit sizes and strides as the kernel's data layout makes
/// them, whose second field is that pointer; reconcile-unrealized-casts
/// folds the cast into the kernel argument that convert-gpu-to-nvvm makes
/// of the memref. Unlike memref.extract_aligned_pointer_as_index, whose
/// result is an index, the pointer keeps its 64 bits with 32-bit indices.
inline Value alignedPointerOf(OpBuilder &b, Location loc, Value memref,
                              int64_t indexBitwidth) {
  MLIRContext *ctx = b.getContext();
  LowerToLLVMOptions options(ctx);
  options.overrideIndexBitwidth(indexBitwidth);
  LLVMTypeConverter converter(ctx, options);
  Type descriptor = converter.convertType(memref.getType());
  Value cast = UnrealizedConversionCastOp::create(b, loc, descriptor, memref)
                   .getResult(0);
  return LLVM::ExtractValueOp::create(b, loc, cast, ArrayRef<int64_t>{1});
}

/// Inline PTX `text` (side effects, so never reordered with other inline
/// PTX): results of `outTypes` are $0..; `ins` follow; then `tied`, whose
/// i-th value is the input of output i (not named in `text`).
inline SmallVector<Value> inlinePtx(FragmentBuilder &x, StringRef text,
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

/// The special register `reg` (e.g. "%tid.x", "%ctaid.x"; a u32) read
/// by inline PTX where it is used: a thread or block index the kernel
/// also computes at its start is then not one value that LLVM keeps in a
/// register across the key loop (which costs the kernels at the register
/// limit a spill).
inline Value readSpecialRegister(FragmentBuilder &x, StringRef reg) {
  return inlinePtx(x, ("mov.u32 $0, " + reg + ";").str(), {x.b.getI32Type()},
                   ValueRange{})[0];
}

/// `value` (an i32 the same in every lane of the warp, such as a warp or
/// warpgroup index computed from %tid.x) as lane 0's, through
/// shfl.sync.idx: ptxas then takes it as warp-uniform, so the values made
/// from it (loop bounds, wgmma descriptors) can stay in uniform registers
/// and the branches on it stay uniform.
inline Value broadcastLane0(FragmentBuilder &x, Value value) {
  return inlinePtx(x, "shfl.sync.idx.b32 $0, $1, 0, 31, -1;",
                   {x.b.getI32Type()}, ValueRange{value})[0];
}

/// Kernels with a producer warpgroup (threads `consumerThreads` on, after
/// the consumer warpgroups): opens the `scf.if` of one role, the producer
/// (tid >= consumerThreads) or the consumers (tid < consumerThreads), moves
/// the builder into it and, with `reallocate`, sets the role's registers per
/// thread with setmaxnreg (PTX ISA 8.0; every warp of a warpgroup runs it):
/// the producer down to kProducerRegisters, the consumers up to
/// consumerRegisters(consumerThreads / 32) (FlashAttention-3, Section 3.1).
inline scf::IfOp openWarpgroupRole(FragmentBuilder &x, Value tid,
                                   int64_t consumerThreads, bool producerRole,
                                   bool reallocate, bool warpUniform) {
  // With warpUniform, the role comes from the warp index through shfl.sync
  // (warp-uniform for ptxas): the branch is uniform, so more of the role's
  // uniform values (wgmma descriptors) stay in uniform registers (bf16 D 128
  // forward loop iterations: 551 -> 538 SASS instructions without a mask,
  // 486 -> 473 causal). The backward tests the thread index: there the shfl
  // form made the 64-bit-index causal _dkdv spill 4 bytes.
  auto pred =
      producerRole ? arith::CmpIPredicate::uge : arith::CmpIPredicate::ult;
  Value cond;
  if (warpUniform) {
    Type i32 = x.b.getI32Type();
    Value warp = broadcastLane0(
        x, arith::ShRUIOp::create(
               x.b, x.loc, arith::IndexCastUIOp::create(x.b, x.loc, i32, tid),
               arith::ConstantIntOp::create(x.b, x.loc, i32, 5)));
    cond = arith::CmpIOp::create(
        x.b, x.loc, pred, warp,
        arith::ConstantIntOp::create(x.b, x.loc, i32, consumerThreads / 32));
  } else {
    cond = x.cmpI(pred, tid, x.cstIndex(consumerThreads));
  }
  auto role = scf::IfOp::create(x.b, x.loc, cond, /*withElseRegion=*/false);
  x.b.setInsertionPoint(role.thenBlock()->getTerminator());
  if (reallocate)
    inlinePtx(x,
              (Twine(producerRole ? "setmaxnreg.dec" : "setmaxnreg.inc") +
               ".sync.aligned.u32 " +
               Twine(producerRole ? kProducerRegisters
                                  : consumerRegisters(consumerThreads / 32)) +
               ";")
                  .str(),
              {}, ValueRange{});
  return role;
}

/// queryBlockIndex (TensorCoreFragments.h) as an i32 from the special
/// registers read here: under causal, block x takes query block
/// gridDim.x - 1 - x.
inline Value rereadQueryBlockIndex(FragmentBuilder &x, CausalKind causal) {
  Value block = readSpecialRegister(x, "%ctaid.x");
  if (causal == CausalKind::none)
    return block;
  Value last = arith::SubIOp::create(
      x.b, x.loc, readSpecialRegister(x, "%nctaid.x"),
      arith::ConstantIntOp::create(x.b, x.loc, x.b.getI32Type(), 1));
  return arith::SubIOp::create(x.b, x.loc, last, block);
}

/// The L2 bytes that one section of a
/// longest-first grid may keep of its loop tiles (about two thirds of the
/// H200's 50 MB L2).
constexpr int64_t kLongestFirstL2Bytes = int64_t(32) << 20;

/// The tile (query tile or key block, i32) and batch entry (i32) of this
/// block in a grid of (tiles, batch) blocks run longest first: the causal
/// kernels' blocks differ in work (the number of loop tiles they visit),
/// and the hardware starts them in the order x + y * gridDim.x, so taking
/// (tile, batch) as (ctaid.x, ctaid.y) ends the grid with long blocks
/// started last. Here that launch order is split into sections of S batch
/// entries (S x gridDim.x blocks; the last section may hold fewer
/// entries), and within a section the blocks take the longest tile of
/// every entry first, then the next longest, and so on: list scheduling
/// in longest-processing-time-first order (Graham 1969), as
/// FlashAttention-3's LPT tile scheduler does, so that the grid ends on
/// short blocks. S = max(1, kLongestFirstL2Bytes / (loopRows x rowBytes))
/// keeps the loop tiles of one section (loopRows rows of rowBytes bytes
/// per batch entry, an index value) within the L2 budget, so that the
/// blocks of an entry still meet in L2. `heaviestLast`: the longest tile
/// has the last index (the forward and _dq under causal), else the first
/// (_dkdv). Every block of the grid gets a distinct (tile, batch).
/// `blockX`/`blockY` (i32) replace ctaid.x/y, and `tileCount`/`entryCount`
/// (i32) nctaid.x/y, for a position in a virtual grid (the persistent
/// forward's tile index).
inline std::pair<Value, Value>
longestFirstBlock(FragmentBuilder &x, Value loopRows, int64_t rowBytes,
                  bool heaviestLast, Value blockX = Value(),
                  Value blockY = Value(), Value tileCount = Value(),
                  Value entryCount = Value()) {
  auto cst = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(x.b, x.loc, x.b.getI32Type(), v);
  };
  auto div = [&](Value a, Value c) -> Value {
    return arith::DivUIOp::create(x.b, x.loc, a, c);
  };
  Value tiles = tileCount ? tileCount : readSpecialRegister(x, "%nctaid.x");
  Value entries = entryCount ? entryCount : readSpecialRegister(x, "%nctaid.y");
  Value cy = blockY ? blockY : readSpecialRegister(x, "%ctaid.y");
  Value cx = blockX ? blockX : readSpecialRegister(x, "%ctaid.x");
  // Rows above 2^31 give one entry per section whatever the i32 says.
  Value rows = arith::IndexCastUIOp::create(
      x.b, x.loc, x.b.getI32Type(),
      arith::MinUIOp::create(x.b, x.loc, loopRows, x.cstIndex(1LL << 30)));
  Value section = arith::MaxUIOp::create(
      x.b, x.loc,
      div(cst(kLongestFirstL2Bytes / rowBytes),
          arith::MaxUIOp::create(x.b, x.loc, rows, cst(1))),
      cst(1));
  // Launch index L = cx + cy x tiles. Its section, L / (S x tiles), is
  // cy / S (cx < tiles), and its rank within the section, L - (first
  // entry) x tiles = cx + (cy - first entry) x tiles: no product exceeds
  // the grid's block count, so nothing wraps in 32 bits.
  Value firstEntry = x.mul(div(cy, section), section);
  Value r = x.add(cx, x.mul(x.sub(cy, firstEntry), tiles));
  Value width =
      arith::MinUIOp::create(x.b, x.loc, section, x.sub(entries, firstEntry));
  Value rank = div(r, width);
  Value batch = x.add(firstEntry, x.sub(r, x.mul(rank, width)));
  Value tile = heaviestLast ? x.sub(x.sub(tiles, cst(1)), rank) : rank;
  return {tile, batch};
}

/// `values` passed through inline PTX `text` as tied operands: the
/// register accesses of `values` are ordered with `text`.
inline SmallVector<Value> ptxWith(FragmentBuilder &x, StringRef text,
                                  ValueRange values) {
  SmallVector<Type> types;
  for (Value v : values)
    types.push_back(v.getType());
  return inlinePtx(x, text, types, ValueRange{}, values);
}

/// A loop-invariant wgmma descriptor base passed through (empty) inline
/// PTX where a product uses it. LLVM would otherwise hoist each k16 step's
/// descriptor (base + offset, 64 bits) out of the enclosing loop, and a
/// product of 8 steps would hold 16 registers across the loop.
inline Value inLoop(FragmentBuilder &x, Value base) {
  return ptxWith(x, "", ValueRange{base}).front();
}

/// The f32 scalars of C fragments (vector<2x2xf32>) in wgmma accumulator
/// order, and back.
inline SmallVector<Value> toScalars(FragmentBuilder &x, ArrayRef<Value> tiles) {
  SmallVector<Value> s;
  for (Value tile : tiles)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t e = 0; e < 2; ++e)
        s.push_back(x.extract(tile, {h, e}));
  return s;
}

inline SmallVector<Value> toTiles(FragmentBuilder &x, ArrayRef<Value> scalars) {
  SmallVector<Value> tiles;
  for (size_t i = 0; i + 3 < scalars.size(); i += 4)
    tiles.push_back(vector::FromElementsOp::create(
        x.b, x.loc, x.vec({2, 2}, x.f32), scalars.slice(i, 4)));
  return tiles;
}

/// The PTX type name of the operand element type.
inline StringRef ptxType(Type elt) { return elt.isBF16() ? "bf16" : "f16"; }

/// The text of one wgmma.mma_async.m64n`n`k16 with f32 accumulators:
/// $0..$(n/2 - 1) the accumulators, then A (one i64 descriptor, or four
/// 32-bit registers with `aInRegs`) and the B descriptor. `accumulate`
/// (scale-d) is an immediate: with a register, ptxas may fail to prove a
/// first product's accumulators unread and wait for every wgmma in flight
/// before it (C7517). `transA` (A from workgroup memory only): A M-major.
inline std::string wgmmaText(int64_t n, Type elt, bool aInRegs, bool transB,
                             bool accumulate, bool transA = false) {
  int64_t acc = n / 2;
  std::string s = std::string("{\n.reg .pred p;\nsetp.ne.b32 p, ") +
                  (accumulate ? "1" : "0") + ", 0;\n";
  s += "wgmma.mma_async.sync.aligned.m64n" + std::to_string(n) + "k16.f32." +
       ptxType(elt).str() + "." + ptxType(elt).str() + " {";
  for (int64_t i = 0; i < acc; ++i)
    s += (i ? ", $" : "$") + std::to_string(i);
  s += "}, ";
  if (aInRegs)
    s += "{$" + std::to_string(acc) + ", $" + std::to_string(acc + 1) + ", $" +
         std::to_string(acc + 2) + ", $" + std::to_string(acc + 3) + "}, $" +
         std::to_string(acc + 4);
  else
    s += "$" + std::to_string(acc) + ", $" + std::to_string(acc + 1);
  // scale-d, imm-scale-a, imm-scale-b[, imm-trans-a], imm-trans-b.
  s += ", p, 1, 1";
  if (!aInRegs)
    s += transA ? ", 1" : ", 0";
  s += transB ? ", 1;\n}" : ", 0;\n}";
  return s;
}

/// A shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor
/// Format"): start address >> 4 in bits 0-13, leading byte offset >> 4 in
/// 16-29, stride byte offset >> 4 in 32-45, the swizzle mode in 62-63 (0:
/// none; 1, 2, 3: 128-, 64-, 32-byte).
struct Descriptor {
  Value base; // i64: (workgroup address of the dynamic memory) >> 4 | offsets

  Value at(FragmentBuilder &x, Value offsetUnits) const {
    return arith::AddIOp::create(x.b, x.loc, base, offsetUnits);
  }
};

inline Descriptor makeDescriptor(FragmentBuilder &x, Value smemUnits,
                                 int64_t lbo, int64_t sbo,
                                 int64_t swizzleBytes = 0) {
  int64_t mode = swizzleBytes == 128 ? 1
                 : swizzleBytes == 64 ? 2
                 : swizzleBytes == 32 ? 3
                                      : 0;
  int64_t high = ((lbo >> 4) << 16) | ((sbo >> 4) << 32) |
                 static_cast<int64_t>(static_cast<uint64_t>(mode) << 62);
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
  Value row0, chunk, dst0;  // per thread; dst0 in elements
  int64_t rowStep, dstStep; // per round (valid when `fixed`)
  bool fixed;

  static CanonicalCopy plan(FragmentBuilder &x, int64_t rows, int64_t width,
                            int64_t threads, const LaneIds &ids) {
    CanonicalCopy c{rows, width, threads / 32, Value(), Value(), Value(),
                    0,    0,     false};
    int64_t quads = width / 32;
    c.fixed = c.warps % quads == 0;
    if (c.fixed) {
      c.rowStep = 8 * (c.warps / quads);
      c.dstStep = 64 * (c.warps / quads);
      c.groupIndices(x, ids.warp, ids.lane, c.row0, c.chunk, c.dst0);
    }
    return c;
  }

  int64_t rounds() const { return (rows / 8) * (width / 32) / warps; }

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
    Value chunkIn = x.add(arith::RemUIOp::create(x.b, x.loc, p, c2),
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
  void copy(FragmentBuilder &fb, Value src, Value tile, Value base, Value batch,
            Value r0, Value limit, const LaneIds &ids) const {
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

/// cp.async.commit_group. The copies sit in scf.if regions whose tokens do
/// not reach here, and an nvgpu.device_async_create_group without tokens
/// prints as text that does not parse back: the NVVM op it lowers to.
inline void commitGroup(FragmentBuilder &x) {
  NVVM::CpAsyncCommitGroupOp::create(x.b, x.loc);
}

/// Copies rows [tb * rows, tb * rows + rows) of `src[batch]` (rows = the
/// plan's; zero fill at or past `limit`) into stage tb % `stages` of the
/// staged tile at byte `offset` of `tile`, `stageBytes` per stage, when tb
/// < `count`; commits one cp.async group either way, so that the group
/// count per step is fixed.
inline void copyStage(FragmentBuilder &x, const CanonicalCopy &plan, Value src,
                      Value tile, Value tb, Value count, int64_t stages,
                      int64_t offset, int64_t stageBytes, Value batch,
                      Value limit, const LaneIds &ids) {
  Value inRange = x.cmpI(arith::CmpIPredicate::slt, tb, count);
  scf::IfOp::create(x.b, x.loc, inRange, [&](OpBuilder &ib, Location il) {
    FragmentBuilder y(ib, il, x.elt);
    Value stage = arith::RemUIOp::create(ib, il, tb, y.cstIndex(stages));
    plan.copy(
        y, src, tile,
        y.add(y.cstIndex(offset / 2), y.mul(stage, y.cstIndex(stageBytes / 2))),
        batch, y.mul(tb, y.cstIndex(plan.rows)), limit, ids);
    scf::YieldOp::create(ib, il);
  });
  commitGroup(x);
}

/// `values` (accumulators of wgmma groups) after wgmma.wait_group
/// `pending`: all but the newest `pending` groups are complete.
inline SmallVector<Value> wgmmaWait(FragmentBuilder &x, int64_t pending,
                                    ValueRange values) {
  return ptxWith(
      x, "wgmma.wait_group.sync.aligned " + std::to_string(pending) + ";",
      values);
}

/// The dynamic workgroup memory of a wgmma kernel as a flat memref of
/// `bytes / 2` elements of `elt`, and its address >> 4 (the start-address
/// units of a matrix descriptor).
struct WgmmaSharedMemory {
  Value raw;   // memref<?xi8, workgroup>
  Value tile;  // memref<bytes/2 x elt, workgroup>
  Value units; // i64
  Value addr;  // i32: the shared-window address of byte 0
};

inline WgmmaSharedMemory wgmmaSharedMemory(FragmentBuilder &fb, int64_t bytes) {
  OpBuilder &b = fb.b;
  Location loc = fb.loc;
  Type i64 = b.getI64Type();
  Value smem = dynamicShared(fb);
  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  Value tile = memref::ViewOp::create(
      b, loc,
      MemRefType::get({bytes / 2}, fb.elt, MemRefLayoutAttrInterface(),
                      workgroup),
      smem, fb.cstIndex(0), ValueRange{});
  Value addr = arith::IndexCastUIOp::create(
      b, loc, i64,
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, smem));
  Value units = arith::ShRUIOp::create(
      b, loc, addr, arith::ConstantIntOp::create(b, loc, i64, 4));
  Value addr32 = arith::TruncIOp::create(b, loc, b.getI32Type(), addr);
  return {smem, tile, units, addr32};
}

//===----------------------------------------------------------------------===//
// TMA and mbarriers (PTX ISA: "cp.async.bulk.tensor", "mbarrier"; the
// pattern of FlashAttention-3, Shah et al. 2024, Section 3.1: one thread
// issues, every thread waits on the barrier; WgmmaForward.cpp's producer
// warpgroup adds "empty" barriers and setmaxnreg)
//===----------------------------------------------------------------------===//

/// An i32 constant.
inline Value cstI32(FragmentBuilder &x, int64_t v) {
  return arith::ConstantIntOp::create(x.b, x.loc, x.b.getI32Type(), v);
}

/// `v` (index) as i32.
inline Value toI32(FragmentBuilder &x, Value v) {
  return arith::IndexCastOp::create(x.b, x.loc, x.b.getI32Type(), v);
}

/// Initializes the mbarrier at shared address `bar` (i32) to expect
/// `arrivals` arrivals per phase.
inline void mbarrierInit(FragmentBuilder &x, Value bar, int64_t arrivals = 1) {
  inlinePtx(x,
            ("mbarrier.init.shared::cta.b64 [$0], " + Twine(arrivals) + ";")
                .str(),
            {}, ValueRange{bar});
}

/// Initializes the mbarrier at `bar` (i32) for `arrivals` (an i32 value)
/// arrivals per phase.
inline void mbarrierInit(FragmentBuilder &x, Value bar, Value arrivals) {
  inlinePtx(x, "mbarrier.init.shared::cta.b64 [$0], $1;", {},
            ValueRange{bar, arrivals});
}

/// One arrival of the calling thread on the mbarrier at `bar` (i32), with
/// release semantics: its earlier reads of workgroup memory happen before
/// the phase completes.
inline void mbarrierArrive(FragmentBuilder &x, Value bar) {
  inlinePtx(x, "mbarrier.arrive.shared::cta.b64 _, [$0];", {},
            ValueRange{bar});
}

/// Named barrier `id` (i32, 1 to 15; 0 is the block barrier) over
/// `threads` threads: `bar.sync` waits until that many have arrived (the
/// caller's warp included), `bar.arrive` counts the caller's warp and goes
/// on (PTX ISA, "bar, barrier").
inline void namedBarrierSync(FragmentBuilder &x, Value id, int64_t threads) {
  inlinePtx(x, ("bar.sync $0, " + Twine(threads) + ";").str(), {},
            ValueRange{id});
}
inline void namedBarrierArrive(FragmentBuilder &x, Value id, int64_t threads) {
  inlinePtx(x, ("bar.arrive $0, " + Twine(threads) + ";").str(), {},
            ValueRange{id});
}

/// Blocks the thread until the phase of parity `parity` (i32, 0 or 1) of the
/// mbarrier at `bar` has completed.
inline void mbarrierWait(FragmentBuilder &x, Value bar, Value parity) {
  inlinePtx(x,
            "{\n.reg .pred p;\nLAB_WAIT:\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1;\n"
            "@!p bra LAB_WAIT;\n}",
            {}, ValueRange{bar, parity});
}

/// The block launched about when this one ends (i32 grid position and
/// whether it lies in the grid), for L2 prefetches of its first tiles:
/// with one block per multiprocessor, started in launch order (x + y x
/// nctaid.x) as blocks end, launch index + %nsmid. %nsmid may exceed the
/// multiprocessor count (PTX ISA, "Special Registers"): the guess is then
/// a few blocks late. Blocks of unequal length end out of order and make
/// the guess miss.
struct NextLaunchedBlock {
  Value x, y, inGrid;
};
inline NextLaunchedBlock nextLaunchedBlock(FragmentBuilder &x) {
  Value nx = readSpecialRegister(x, "%nctaid.x");
  Value ny = readSpecialRegister(x, "%nctaid.y");
  Value nsm = readSpecialRegister(x, "%nsmid");
  // ctaid.x + %nsmid < 2^32: grid x is below 2^31.
  Value sum = arith::AddIOp::create(x.b, x.loc,
                                    readSpecialRegister(x, "%ctaid.x"), nsm);
  Value nextX = arith::RemUIOp::create(x.b, x.loc, sum, nx);
  Value nextY =
      arith::AddIOp::create(x.b, x.loc, readSpecialRegister(x, "%ctaid.y"),
                            arith::DivUIOp::create(x.b, x.loc, sum, nx));
  Value inGrid =
      arith::CmpIOp::create(x.b, x.loc, arith::CmpIPredicate::ult, nextY, ny);
  return {nextX, nextY, inGrid};
}

/// Prefetches rows [row, row + box rows) of batch entry `batch` of a 3-d
/// tensor map into L2 (cp.async.bulk.prefetch.tensor, PTX ISA 8.0), box by
/// box of `boxColumns` columns over `columns`: a hint, which completes
/// nothing and may be dropped.
inline void tmaPrefetchTile(FragmentBuilder &x, Value map, int64_t columns,
                            int64_t boxColumns, Value row, Value batch) {
  for (int64_t c = 0; c < columns / boxColumns; ++c)
    inlinePtx(x,
              "cp.async.bulk.prefetch.tensor.3d.L2.global.tile "
              "[$0, {$1, $2, $3}];",
              {}, ValueRange{map, cstI32(x, c * boxColumns), row, batch});
}

/// Issues (from one thread) the TMA load of a [rows, columns] tile of
/// 2-byte elements: `columns / boxColumns` boxes of boxColumns x rows, box c
/// from tensor coordinates (c * boxColumns, `row`, `batch`) of the rank-3
/// tensor map `map` to shared address `dst` + c * rows * boxColumns * 2
/// (each box dense, swizzled as the map says), all completing on the
/// mbarrier at `bar`, which is told to expect `rows * columns * 2` bytes
/// (rows past the tensor's end arrive as zeros and count).
inline void tmaLoadTile(FragmentBuilder &x, Value map, Value dst,
                        int64_t rows, int64_t columns, int64_t boxColumns,
                        Value row, Value batch, Value bar) {
  inlinePtx(x, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", {},
            ValueRange{bar, cstI32(x, rows * columns * 2)});
  const int64_t boxBytes = rows * boxColumns * 2;
  for (int64_t c = 0; c < columns / boxColumns; ++c)
    inlinePtx(x,
              "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::"
              "complete_tx::bytes [$0], [$1, {$2, $3, $4}], [$5];",
              {},
              ValueRange{arith::AddIOp::create(x.b, x.loc, dst,
                                               cstI32(x, c * boxBytes)),
                         map, cstI32(x, boxColumns * c), row, batch, bar});
}

/// Waits for the cp.async groups older than the newest `pending` ones,
/// then makes every thread's copies visible to wgmma (async proxy) and
/// synchronizes the block.
inline void landCopies(FragmentBuilder &x, int64_t pending) {
  NVVM::CpAsyncWaitGroupOp::create(x.b, x.loc, pending);
  inlinePtx(x, "fence.proxy.async.shared::cta;", {}, ValueRange{});
  gpu::BarrierOp::create(x.b, x.loc);
}

/// An i64 constant.
inline Value cstI64(FragmentBuilder &x, int64_t v) {
  return arith::ConstantIntOp::create(x.b, x.loc, x.b.getI64Type(), v);
}

/// The descriptor units (bytes >> 4) of stage `tb` % `stages` of a staged
/// tile at byte `offset`, `stageBytes` per stage.
inline Value stageUnits(FragmentBuilder &x, Value tb, int64_t stages,
                        int64_t offset, int64_t stageBytes) {
  Type i64 = x.b.getI64Type();
  Value stage = arith::IndexCastUIOp::create(
      x.b, x.loc, i64,
      arith::RemUIOp::create(x.b, x.loc, tb, x.cstIndex(stages)));
  return arith::AddIOp::create(
      x.b, x.loc,
      arith::MulIOp::create(x.b, x.loc, stage, cstI64(x, stageBytes >> 4)),
      cstI64(x, offset >> 4));
}

/// Issues one wgmma group (fence, `kSteps` x wgmma.mma_async.m64n`n`k16,
/// commit) computing D = A B^T into fresh f32 accumulators, both operands
/// from workgroup memory, B K-major: step kc reads A at descriptor
/// `aBase` + kc * `aStep` and B at `bBase` + kc * `bStep` (16-byte units).
/// Returns the n / 2 accumulator scalars, valid after the matching
/// wgmma.wait_group.
///
/// With `stepsPerBlock` (swizzled layouts: the k16 steps in one swizzle row
/// of 64 or 128 bytes), step kc reads at (kc % stepsPerBlock) * step + (kc /
/// stepsPerBlock) * blockStep instead (A and B share the step counts).
/// `transA` / `transB`: A M-major / B N-major (16-bit types only).
/// `accumulateOnto`: D += A B^T on these n / 2 scalars instead;
/// `fenceOnto`: they pass through the wgmma.fence as tied operands (values
/// computed by other instructions, e.g. initial accumulators: the fence
/// then orders their writes before the products).
struct SwizzledSteps {
  int64_t stepsPerBlock = 0; // 0: a constant step
  int64_t aBlockStep = 0, bBlockStep = 0;
};

inline SmallVector<Value>
wgmmaProductSS(FragmentBuilder &x, int64_t n, int64_t kSteps, Value aBase,
               int64_t aStep, Value bBase, int64_t bStep, bool zeroInit = false,
               SwizzledSteps swizzled = {}, bool transA = false,
               bool transB = false, ArrayRef<Value> accumulateOnto = {},
               bool fenceOnto = false) {
  SmallVector<Type> types(n / 2, x.f32);
  SmallVector<Value> acc;
  if (zeroInit)
    acc.assign(n / 2, x.cstF32(0.0));
  if (!accumulateOnto.empty())
    acc.assign(accumulateOnto.begin(), accumulateOnto.end());
  const bool onto = zeroInit || !accumulateOnto.empty();
  // Accumulators that other instructions wrote go through the fence (PTX
  // ISA: wgmma.fence orders register writes before the wgmma reads them).
  if (fenceOnto && !accumulateOnto.empty())
    acc = ptxWith(x, "wgmma.fence.sync.aligned;", acc);
  else
    inlinePtx(x, "wgmma.fence.sync.aligned;", {}, ValueRange{});
  for (int64_t kc = 0; kc < kSteps; ++kc) {
    int64_t aOffset = kc * aStep, bOffset = kc * bStep;
    if (int64_t per = swizzled.stepsPerBlock) {
      aOffset = kc % per * aStep + kc / per * swizzled.aBlockStep;
      bOffset = kc % per * bStep + kc / per * swizzled.bBlockStep;
    }
    Value descA = arith::AddIOp::create(x.b, x.loc, aBase, cstI64(x, aOffset));
    Value descB = arith::AddIOp::create(x.b, x.loc, bBase, cstI64(x, bOffset));
    acc = inlinePtx(
        x, wgmmaText(n, x.elt, false, transB, kc || !accumulateOnto.empty(),
                     transA),
        types, ValueRange{descA, descB},
        kc || onto ? ValueRange(acc) : ValueRange{});
  }
  inlinePtx(x, "wgmma.commit_group.sync.aligned;", {}, ValueRange{});
  return acc;
}

/// Issues one wgmma group computing D += A B on the f32 accumulator
/// scalars `acc` (n / 2 of them): A from registers (`aRegs`, four 32-bit
/// words of packed elements per k16 step, the A fragment of a 64 x 16
/// slice), B N-major from workgroup memory at descriptor `bBase`, each k16
/// step 256 bytes (two core matrices along K) further. The fence takes
/// `acc` and `aRegs` as tied operands. Returns the accumulators, valid
/// after the matching wgmma.wait_group.
/// `kStepUnits`: the descriptor advance per k16 step (16-byte units; 16
/// rows of the canonical no-swizzle layout by default).
inline SmallVector<Value> wgmmaAccumulateRS(FragmentBuilder &x, int64_t n,
                                            SmallVector<Value> acc,
                                            SmallVector<Value> aRegs,
                                            Value bBase,
                                            int64_t kStepUnits = 256 >> 4) {
  SmallVector<Type> types(n / 2, x.f32);
  SmallVector<Value> fenced = acc;
  llvm::append_range(fenced, aRegs);
  fenced = ptxWith(x, "wgmma.fence.sync.aligned;", fenced);
  acc.assign(fenced.begin(), fenced.begin() + acc.size());
  aRegs.assign(fenced.begin() + acc.size(), fenced.end());
  for (size_t kk = 0; 4 * kk < aRegs.size(); ++kk) {
    Value descB = arith::AddIOp::create(x.b, x.loc, bBase,
                                        cstI64(x, int64_t(kk) * kStepUnits));
    SmallVector<Value> ins(aRegs.begin() + 4 * kk, aRegs.begin() + 4 * kk + 4);
    ins.push_back(descB);
    acc = inlinePtx(x, wgmmaText(n, x.elt, true, true, true), types, ins, acc);
  }
  inlinePtx(x, "wgmma.commit_group.sync.aligned;", {}, ValueRange{});
  return acc;
}

/// The 32-bit A-operand registers of an RS wgmma from f32 C tiles
/// (vector<2x2xf32>, the accumulator layout of one warp's 16 rows): the
/// elements converted to x.elt and packed in pairs.
inline SmallVector<Value> packARegisters(FragmentBuilder &x,
                                         ArrayRef<Value> cTiles) {
  SmallVector<SmallVector<Value>> c(1);
  c[0].assign(cTiles.begin(), cTiles.end());
  SmallVector<SmallVector<Value>> frags = toAFragments(x, c);
  SmallVector<Value> regs;
  for (Value frag : frags[0])
    for (int64_t i = 0; i < 4; ++i) {
      Value word = vector::BitCastOp::create(
          x.b, x.loc, x.vec({1}, x.b.getI32Type()), x.extract(frag, {i}));
      regs.push_back(x.extract(word, {0}));
    }
  return regs;
}

} // namespace gpukernel
} // namespace fa
} // namespace mlir

#endif // FA_LIB_CONVERSION_FATOGPU_WGMMAFRAGMENTS_H
