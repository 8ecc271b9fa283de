//===- TensorCoreForward.cpp - fa.attention on mma.sync tensor cores -----===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// The tensor-core forward kernel of convert-fa-to-gpu (`tensor-cores=true`,
// chosen by fa-to-ptx for sm_80 and later): FlashAttention-2's forward pass
// (Dao 2023, "FlashAttention-2", Algorithm 1 and Section 3.1-3.3) on the
// warp-level `mma.sync.m16n8k16` instructions of sm_80, f16 or bf16 operands
// with f32 accumulation.
//
// Block = `num_warps` warps; warp w owns `rows_per_warp` = 16 * R query rows
// (R m16 tiles); block_m = num_warps * 16 * R. Grid = (ceil(Tq / block_m),
// batch). Per lane (g = lane / 4, t = lane % 4) and m16 tile, the mma
// fragments hold rows g and g + 8 (PTX ISA, "Matrix Fragments for
// mma.m16n8k16").
//
//   Q fragments (A operands) -> registers, once, straight from global memory
//     (or, when they would take over 32 registers, a Q tile copied once to
//     workgroup memory and read by ldmatrix at each use)
//   O accumulators (f32 C fragments), m, l = 0, -inf, 0 in registers
//   cp.async K tile 0 -> kTile (when any key block is visited)
//   for each key block j (causal: blocks past the diagonal never visited):
//     wait for all copies; barrier      K_j landed; V tile free
//     cp.async V_j -> vTile             overlaps S and the softmax below
//     S = Q K_j^T   (ldmatrix K rows, mma.sync)
//     mask S only on blocks that straddle the diagonal or the end of K
//     online softmax on the fragments: row max over the lane's elements,
//     then over the 4 lanes of a row (shuffle xor 1, 2); exp2 with
//     scale * log2(e) folded into one fma; alpha = exp2(m_old - m_new)
//     rescales the lane's partial row sum, and O only in a thread where
//     some row max moved (else alpha = 1 exactly)
//     P = bf16/f16(S) rearranged in registers into A fragments (no shared
//     memory round trip: the C layout of two n8 tiles is the A layout)
//     wait for all copies; barrier      V_j landed; every warp is done with K
//     cp.async K_{j+1} -> kTile         overlaps the P V product below
//     O += P V_j    (ldmatrix.trans V rows, mma.sync)
//   l = sum over the 4 lanes of a row; o = O / l; lse = m ln 2 + ln l
//
// Under causal the last query blocks are launched first. The tiles live in
// dynamic workgroup memory (tensorCoreSharedLayout; the manifest's
// shared_bytes). K/V tiles are [block_n, D + 8]: the 16-byte pad shifts
// consecutive rows by four banks, so the eight 16-byte rows an ldmatrix
// phase reads hit distinct banks. Rows past Tk are zero-filled by cp.async
// (src-size 0) and their scores masked to -inf.
//
//===----------------------------------------------------------------------===//

#include "TensorCoreFragments.h"
#include "TensorCoreKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::fa;
using namespace mlir::fa::gpukernel;

void mlir::fa::gpukernel::buildTensorCoreForwardBody(
    OpBuilder &b, Location loc, gpu::GPUFuncOp func,
    const TensorCoreForwardShape &ks) {
  FragmentBuilder fb(b, loc, ks.elt);
  const int64_t R = ks.mTilesPerWarp, W = ks.numWarps;
  const int64_t threads = 32 * W;
  const int64_t blockM = 16 * R * W, blockN = ks.blockN;
  const int64_t dChunks = ks.d / 16;   // k16 steps of S = Q K^T
  const int64_t sTiles = blockN / 8;   // n8 tiles of S
  const int64_t oTiles = ks.dv / 8;    // n8 tiles of O

  Value q = func.getArgument(0), k = func.getArgument(1),
        v = func.getArgument(2), o = func.getArgument(3);
  Value lse = ks.hasLse ? func.getArgument(4) : Value();
  b.setInsertionPointToStart(&func.front());

  // Tiles in dynamic workgroup memory, in this order: [Q,] K, V (layout of
  // tensorCoreSharedLayout).
  TensorCoreSharedLayout layout = tensorCoreSharedLayout(ks);
  Value smem = dynamicShared(fb);
  Value qTile = ks.qInShared
                    ? sharedTile(fb, smem, layout.qOffset, 0, blockM, ks.d)
                    : Value();
  Value kTile = sharedTile(fb, smem, layout.kOffset, 0, blockN, ks.d);
  Value vTile = sharedTile(fb, smem, layout.vOffset, 0, blockN, ks.dv);
  Value c0 = fb.cstIndex(0), c1 = fb.cstIndex(1);
  Value zero = fb.cstF32(0.0), ninf = fb.cstF32(kNegInf);
  Value tq = memref::DimOp::create(b, loc, q, 1);
  Value tk = memref::DimOp::create(b, loc, k, 1);
  Value queryBlock = queryBlockIndex(fb, ks.causal);
  Value batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  LaneIds ids = LaneIds::create(fb);
  Value tid = ids.tid, warp = ids.warp, g = ids.g, t = ids.t, t2 = ids.t2;
  WarpMma wm = WarpMma::create(fb, ids.lane);

  Value i0 = fb.mul(queryBlock, fb.cstIndex(blockM));
  Value warpRow0 = fb.add(i0, fb.mul(warp, fb.cstIndex(16 * R)));
  // rowOf(r, h): the query row of fragment half h (0: g, 1: g + 8) of m16
  // tile r of this lane.
  auto rowOf = [&](FragmentBuilder &x, int64_t r, int64_t h) {
    return x.add(x.add(warpRow0, x.cstIndex(16 * r + 8 * h)), g);
  };

  VisibleKeys keys = visibleKeys(fb, ks.causal, i0, blockM, tq, tk);
  Value causalOffset = keys.causalOffset, kvEnd = keys.kvEnd;
  Value numKeyBlocks = arith::CeilDivSIOp::create(
      b, loc, kvEnd, fb.cstIndex(blockN));

  // Start the first K tile (and the Q tile when Q lives in workgroup
  // memory) while the rest is set up.
  TileCopyPlan kPlan = planTileCopy(fb, tid, blockN, ks.d, threads);
  TileCopyPlan vPlan = planTileCopy(fb, tid, blockN, ks.dv, threads);
  if (ks.qInShared) {
    TileCopyPlan qPlan = planTileCopy(fb, tid, blockM, ks.d, threads);
    buildAsyncTileCopy(fb, qPlan, q, qTile, batch, i0, tq, tid);
  }
  // No copy when no key block is visited (Tk = 0 gives k no storage).
  scf::IfOp::create(
      b, loc, fb.cmpI(arith::CmpIPredicate::sgt, numKeyBlocks, c0),
      [&](OpBuilder &ib, Location il) {
        FragmentBuilder y(ib, il, ks.elt);
        buildAsyncTileCopy(y, kPlan, k, kTile, batch, c0, tk, tid);
        scf::YieldOp::create(ib, il);
      });

  // Q fragments: qFrag[r][kc] = A operand of rows (r, g / g + 8), columns
  // kc * 16 + {2t, 2t + 1, 8 + 2t, 9 + 2t}: in registers for the whole key
  // loop, loaded from global memory here (rows past Tq read row Tq - 1;
  // their results are never stored); or, with qInShared, loaded from the Q
  // tile by ldmatrix at each use (matrices: rows 0-7 / 8-15 x columns
  // 0-7, then 8-15).
  Value warpRowLocal = fb.mul(warp, fb.cstIndex(16 * R));
  Value lastRow = fb.maxS(fb.sub(tq, c1), c0);
  SmallVector<SmallVector<Value>> qFrag(R);
  for (int64_t r = 0; r < R && !ks.qInShared; ++r) {
    Value row0 = fb.minS(rowOf(fb, r, 0), lastRow);
    Value row1 = fb.minS(rowOf(fb, r, 1), lastRow);
    for (int64_t kc = 0; kc < dChunks; ++kc)
      qFrag[r].push_back(loadAFromGlobal(fb, q, batch, row0, row1, t2, kc));
  }

  // Loop-carried: O accumulators [R][oTiles], then m and l [R][2].
  SmallVector<Value> init;
  for (int64_t i = 0; i < R * oTiles; ++i)
    init.push_back(fb.zeroAcc());
  for (int64_t i = 0; i < 2 * R; ++i)
    init.push_back(ninf);
  for (int64_t i = 0; i < 2 * R; ++i)
    init.push_back(zero);
  const int64_t mBase = R * oTiles, lBase = mBase + 2 * R;

  auto loop = scf::ForOp::create(
      b, loc, c0, numKeyBlocks, c1, init,
      [&](OpBuilder &lb, Location ll, Value jb, ValueRange carried) {
        FragmentBuilder x(lb, ll, ks.elt);
        Value j0 = x.mul(jb, x.cstIndex(blockN));
        SmallVector<Value> acc(carried.begin(), carried.begin() + mBase);
        SmallVector<Value> m(carried.begin() + mBase,
                             carried.begin() + lBase);
        SmallVector<Value> l(carried.begin() + lBase, carried.end());

        // K_j has landed for this thread; the barrier makes it so for all,
        // and tells that every warp is done reading V_{j-1}.
        buildWaitAllCopies(x);
        gpu::BarrierOp::create(lb, ll);
        buildAsyncTileCopy(x, vPlan, v, vTile, batch, j0, tk, tid);

        // S = Q K_j^T (B fragments: ldmatrix of K rows).
        SmallVector<SmallVector<Value>> s = wm.productABt(
            x, R, dChunks, sTiles, kTile, ValueRange{},
            [&](int64_t r, int64_t kc) {
              return ks.qInShared
                         ? wm.loadA(x, qTile, {},
                                    x.add(warpRowLocal, x.cstIndex(16 * r)),
                                    kc)
                         : qFrag[r][kc];
            });

        // Scale first when the scale is not positive (then the max of the
        // raw scores is not the max of the scaled ones).
        Value scaleC = scoreFactor(x, s, ks.scale);

        maskScoreBlock(x, s, ks.causal, j0, blockN, tk, warpRow0,
                       causalOffset, t2,
                       [&](FragmentBuilder &y, int64_t r, int64_t h) {
                         return rowOf(y, r, h);
                       });

        // Online softmax per fragment row, P in q's type as the A fragments
        // of P V (no shared memory), O *= alpha where a row max moved.
        OnlineSoftmaxStep sm = onlineSoftmaxStep(x, s, m, l, scaleC);
        SmallVector<SmallVector<Value>> pFrag = toAFragments(x, sm.p);
        SmallVector<Value> newAcc = acc;
        rescaleIfMaxMoved(x, sm.anyMaxChanged, newAcc, oTiles, sm.alphas);
        SmallVector<Value> newM = sm.m, newL = sm.l;

        // V_j has landed; after the barrier every warp is also done with
        // K_j, so the next K tile may overwrite it while P V runs.
        buildWaitAllCopies(x);
        gpu::BarrierOp::create(lb, ll);
        Value hasNext = x.cmpI(arith::CmpIPredicate::slt, x.add(jb, c1),
                               numKeyBlocks);
        scf::IfOp::create(lb, ll, hasNext, [&](OpBuilder &ib, Location il) {
          FragmentBuilder y(ib, il, ks.elt);
          buildAsyncTileCopy(y, kPlan, k, kTile, batch,
                             y.add(j0, y.cstIndex(blockN)), tk, tid);
          scf::YieldOp::create(ib, il);
        });

        // O += P V_j (B fragments: ldmatrix.trans of V rows).
        SmallVector<SmallVector<Value>> o2 = unflatten(newAcc, R, oTiles);
        wm.accumulateAB(
            x, R, sTiles / 2, oTiles, vTile, ValueRange{},
            [&](int64_t r, int64_t kk) { return pFrag[r][kk]; }, o2);
        newAcc = flatten(o2);

        SmallVector<Value> yielded = newAcc;
        llvm::append_range(yielded, newM);
        llvm::append_range(yielded, newL);
        scf::YieldOp::create(lb, ll, yielded);
      });

  // Epilogue: o = O / l, lse = m ln 2 + ln l.
  for (int64_t r = 0; r < R; ++r)
    for (int64_t h = 0; h < 2; ++h)
      storeForwardRow(
          fb, SmallVector<Value>(loop.getResults().slice(r * oTiles, oTiles)),
          loop.getResult(mBase + 2 * r + h), loop.getResult(lBase + 2 * r + h),
          h, [&] { return rowOf(fb, r, h); }, tq, o, lse, batch, t, t2);
  gpu::ReturnOp::create(b, loc);
}
