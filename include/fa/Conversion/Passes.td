//===- Passes.td - fa conversion passes --------------------*- tablegen -*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#ifndef FA_CONVERSION_PASSES_TD
#define FA_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// FAToGPU
//===----------------------------------------------------------------------===//

def ConvertFAToGPU : Pass<"convert-fa-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Lower each fa.attention to a gpu.module holding one FlashAttention kernel";
  let description = [{
    Replaces every `fa.attention` by a `gpu.module @<func>_attention_<n>`
    holding one `gpu.func ... kernel` of the same name (`<func>` is the
    enclosing `func.func`, `<n>` the index of the op in it). The kernel
    follows the ABI of docs/ARTIFACTS.md: its arguments are the memrefs
    `q`, `k`, `v`, `o` (and `lse` when the op returns it) with the batch
    dims flattened into one (`[batch, T, D]`; lse `[batch, Tq]`), with a
    dynamic offset and dynamic strides (the kernel honours the strides the
    launcher passes).

    One launch computes the whole attention. `gpu.block_id x` is the query
    block (`block-m` rows), `gpu.block_id y` the flattened batch index, and
    each of the `block-m` threads of a block owns one query row. The row of
    `q` and the f32 output accumulator live in private memory. Key/value
    blocks of `block-n` rows are copied cooperatively into workgroup
    (shared) memory between two `gpu.barrier`s, then every thread runs the
    online softmax on them (FlashAttention-2, Dao 2023, arXiv:2307.08691,
    Algorithm 1): running max `m`, running sum `l`, unnormalized f32
    accumulator, rescaled by `exp(m_old - m_new)`, which is forced to 0
    while `m_old` is -inf. Under `causal` the key loop stops at the last key
    visible to the block's last row, and only blocks that straddle the
    diagonal are masked element-wise. Ragged last blocks on both axes are
    handled; threads past the last query row take part in the copies and
    barriers only. Rows with no visible key give `o = 0` and `lse = -inf`.
    Nothing of size Tq x Tk is allocated: per block, shared memory holds
    `block-n x (D + Dv)` elements of q's type, per thread, private memory
    holds `D + Dv + block-n` f32.

    `block-n` is lowered, when needed, so that the key/value tiles fit in
    48 KiB of static shared memory; the value used is the one recorded.

    The launch facts of each kernel (docs/ARTIFACTS.md's manifest, less
    `version`, `ptx` and `chip`, which `fa-export-kernels` adds) are
    recorded in the top-level module's `fa.manifests` dictionary, keyed by
    kernel name, so that they survive the lowering of the gpu.module to a
    gpu.binary. The module gets the `gpu.container_module` attribute.

    The `func.func` that held the ops is erased; it may only contain
    `fa.attention`, constants and its return (the host side of the launch
    is the runtime's job), otherwise the pass fails naming it.

    With `tensor-cores` (fa-to-ptx sets it for sm_80 and later), an
    `fa.attention` with f16 or bf16 q/k/v and head dims that are multiples
    of 16 up to 256 gets the tensor-core kernel instead
    (lib/Conversion/FAToGPU/TensorCoreForward.cpp; FlashAttention-2,
    Algorithm 1 and Section 3.3): `num-warps` warps per block, each owning
    `block-m / num-warps` query rows (one to four m16 tiles); Q fragments
    in registers for the whole key loop; `S = Q K^T` and `O += P V` as
    `nvgpu.mma.sync` m16n8k16 with f32 accumulation fed by `nvgpu.ldmatrix`
    (transposed for V) from K/V tiles of `block-n x (D + 8)` elements (the
    16-byte row pad keeps ldmatrix free of bank conflicts); the online
    softmax on the accumulator fragments (row max and sum over the four
    lanes of a row with `gpu.shuffle xor`, `exp2` with scale * log2(e)
    folded into one fma); P converted to q's type in registers and used as
    the A operand of `P V` directly. K and V tiles arrive by
    `nvgpu.device_async_copy` (cp.async, 16 bytes, zero fill past Tk): V_j
    is in flight during `Q K_j^T` and the softmax, K_{j+1} during
    `P V_j`. Under causal, key blocks past the diagonal are skipped and only
    blocks that straddle the diagonal or the end of K are masked. Defaults:
    4 warps of 32 query rows (block-m 128) and block-n 64 for head dims up
    to 64, block-n 32 up to 128; 4 warps of 16 rows (block-m 64) and
    block-n 32 above. Q stays in registers when its fragments take at most
    32 registers (rows per warp x D <= 512), else it is a third tile in
    workgroup memory read by ldmatrix at each use. The tiles live in
    dynamic workgroup memory (the manifest's `shared_bytes`). Its q/k/v/o arguments have unit innermost stride, and rows
    must start at 16-byte aligned addresses (the manifest says
    `row_align 16`). Other element types and head dims keep the scalar
    kernel.

    With `wgmma` as well (fa-to-ptx sets it for sm_90a; the kernel needs
    that architecture-specific target), f16/bf16 attention with head dims
    (D and Dv) 32, 64 or 128 gets the Hopper forward instead
    (lib/Conversion/FAToGPU/WgmmaForward.cpp; FlashAttention-3, Shah et al.
    2024, Section 3): `num-warps / 4` warpgroups of 64 query rows (block-m =
    16 x num-warps; default 8 warps, block-m 128); `S = Q K^T` as
    `wgmma.mma_async` m64n{block-n}k16 with both operands in workgroup
    memory, `O += P V` as m64n{Dv}k16 with P from registers (inline PTX:
    MLIR 22's nvvm.wgmma.mma_async takes A only from workgroup memory); the
    softmax of S_j runs while P_{j-1} V_{j-1} is on the tensor cores. Q, K
    and V tiles arrive by cp.async (through L1) in wgmma's canonical
    no-swizzle layout (columns of 8 x 16-byte core matrices, padded by 64
    bytes), three K/V stages when they fit in `max-shared-bytes`, else two
    (`stages` fixes the count).
    With `tma` (fa-to-ptx's default on sm_90a) the tiles arrive by TMA
    instead (FlashAttention-3, Section 3.1): thread 0 issues `cp.async.bulk.tensor.3d` per box of one swizzle row
    (64 columns with the 128-byte swizzle; 32 and 64-byte at head dim 32)
    from the tensor maps of q, k and v, three `!llvm.ptr` arguments after
    the memrefs (the function attribute `fa.tensor_map_params = 3`; see
    `fa-lower-tensor-map-params`; the manifest gets `tensor_map` lines),
    completing on one mbarrier per tile (Q, each K stage, each V stage),
    on which every thread waits before the tile's product; wgmma reads the
    swizzled tiles through swizzled descriptors. Two stages at block-n 128,
    else three when they fit; the K/V tiles need not split over the warps.
    With `producer-warp` (fa-to-ptx's default) the block has one more
    warpgroup (threads 32 x num-warps on; manifest `threads` counts it):
    it lowers its registers to 24 (`setmaxnreg.dec`) and its first thread
    loads Q, then K_j and V_j of every visited key block, each after
    waiting on the stage's "empty" mbarrier (128 arrivals per consumer
    warpgroup with a query row before Tq); the consumer warps raise
    theirs to what the launch left (`setmaxnreg.inc`: 240 for 8 consumer
    warps, 160 for 12, 112 for 16; none for 4) and arrive on a stage's
    empty barrier after the wgmma wait that read it; no block barrier
    after the initial one. Without `pingpong`, a consumer warpgroup whose
    rows all lie past Tq (the last query block when block-m does not
    divide Tq, as block-m 192 at every power-of-two Tq) exits at once; and
    under causal, with one tile per block and not persistent (fa-to-ptx's
    D 64 kernels; at D 128 only with `tiles-per-block=1 persistent=false`
    or a static Tk of at most five key blocks), each consumer warpgroup
    runs only the key blocks its own 64 rows see and starts its masked key
    loop at its own first row's diagonal, when a warpgroup skips fewer
    than `stages` blocks (at most ceil((block-m - 64) / block-n); the
    skipped blocks' stages and a warpgroup's last V stage are not
    released; bf16 D 64 causal T 2k-8k 3-5% faster on the H200). With
    `pingpong`
    as well, warpgroup w waits on named barrier 1 + w before issuing its
    products and then arrives on the next warpgroup's (256 threads each).
    With `producer-warp`, o in q's element type and head_dim_v == head_dim
    (a multiple of 64), o leaves by TMA stores (FlashAttention-3's
    epilogue): each consumer warp writes its 16 rows of o, swizzled, over
    its rows of the Q tile and its lane 0 issues `cp.async.bulk.tensor`
    per 64-column box through a fourth tensor map (`fa.tensor_map_params
    = 4`, manifest line `tensor_map o 64 16 128`); rows past Tq fall
    outside the map. Otherwise each value pair of o is one aligned store.
    Under causal, TMA kernels with one query tile per block run their
    blocks longest first: the launch order ctaid.x + ctaid.y x nctaid.x is
    cut into sections of S = max(1, 32 MiB / (Tk x (D + Dv) x 2 bytes))
    batch entries, and within a section every entry's last (longest)
    query tile comes first, then the next longest, so that the grid ends on
    short blocks while the blocks in flight share K/V in L2 (list
    scheduling in longest-processing-time-first order, as FlashAttention-3's
    LPT tile scheduler; H200, bf16 D 64: about +1% at T 2k, +3% at T 4k-16k).
    With the producer warpgroup the block's tile and batch entry wait in
    workgroup memory (8 bytes after the mbarriers) for the consumers.
    Producer kernels with two tiles per block or run longest first
    prefetch into L2, after their last K/V load, the Q tiles of the block
    launched about when theirs ends (launch index + %nsmid;
    `cp.async.bulk.prefetch.tensor`, a hint: H200, bf16, +0.3-0.8% at
    D 128, D 64 causal +1.1% at T 2k and -0.3% at T 8k-16k); the
    TMA `_dkdv` without a mask likewise prefetches that block's own K/V
    rows with its last loop tile's loads (+1-4%).
    Default block-n: 128 for D 128 or with the producer warpgroup, else 64
    (the next of 64 and 32 when the tile does not split over the warps, its
    accumulators do not fit the registers or its stages do not fit); 160
    (two stages) for D = Dv = 128 without a mask when `tiles-per-block` is
    0, no other shape option is given, and two query tiles of it fit with
    a dynamic Tk or one of over five 160-key blocks (H200: 0.5-3% faster
    than 128 at T 8k-16k, 1.5-2% sustained at T 16k, even at T 2k-4k;
    docs/PERFORMANCE.md, twenty-first run).
    Default num-warps: 8; with the producer warpgroup and no shape option,
    12 for head dims up to 64 (with or without a causal mask). Errors on
    the op: producer-warp or pingpong without tma, pingpong without
    producer-warp or with one consumer warpgroup (num-warps 4); num-warps other
    than 4, 8, 12 or 16 (also when derived from block-m) or block-m not
    16 x num-warps; block-n not a multiple of 16 or over 256; without
    `tma`, a K/V tile whose 8-row x 32-column groups do not split evenly
    over the warps;
    accumulators (block-n / 2 + Dv / 2 + block-n / 4 registers) over the
    per-thread register budget of the block; tiles over `max-shared-bytes`
    even with two stages (with `stages`: that many); and, for every
    tensor-core kernel, |scale| over 2.35e38 (scale * log2(e) must be a
    finite f32).

    Preconditions and limits (each reported as an error on the op): no
    `mask` operand; static head dims D and Dv; `block-m` in [1, 1024] (0:
    default); for the tensor-core kernel, `block-m` a multiple of
    `16 * num-warps` of at most `64 * num-warps`, `block-n` a multiple of
    16, and the tiles within `max-shared-bytes` (fa-to-ptx sets it from the
    chip). `num-warps` in [1, 16]. Options of a kernel family the others
    do not take are errors at the module: `wgmma` without `tensor-cores`,
    `tma` without `wgmma`, and `producer-warp`, `pingpong` or
    `tiles-per-block=2` without `tma`. Two ops whose kernel names coincide
    (function names that differ only in characters that become '_') are an
    error. The default block shapes of head dims 64 and 128 (and, on
    sm_90a, of every D and Dv in {32, 64, 128}) assemble without register
    spills with dynamic seqlens (test/Pipelines/fa-to-ptx-tensor-cores-ptxas.mlir
    checks the usual ones); other head dims (e.g. 224 and 240: 8 to 72
    bytes), explicit shapes and some static seqlens (e.g. D 128 with
    Dv 32; with the producer warpgroup's 12-warp default at D 32 and 64,
    static seqlens, most of all a seqlen_k of a few key blocks such as 200
    or 256: 4 to 72 bytes, e.g. 36 to 72 at D 64 with Dv 32; the
    backward's split _dq at D 64 without mask and seqlen_k 200 or 256: 256
    bytes) may spill (ptxas -v tells), which costs speed, not correctness. With
    the producer warpgroup and tiles that need fewer registers than the
    launch gives (e.g. block-n 64 at D 64), ptxas ignores the setmaxnreg
    pair (warning C7508) and the kernel runs without reallocation.

    Every `fa.attention_backward` becomes one `gpu.module
    @<func>_attention_backward_<n>` holding three kernels, launched in this
    order (FlashAttention-2's backward, Dao 2023, Algorithm 2; see
    lib/Conversion/FAToGPU/BackwardKernels.cpp and docs/ARTIFACTS.md,
    "Backward"):
    - `_delta`: delta = rowsum(do * o) into an f32 [batch, Tq] scratch
      buffer (and, unless `deterministic`, zeroes the f32 dq accumulator);
    - `_dkdv`: one GPU block per key block of `block-n` rows and batch index,
      one thread per key row. For each query block (`block-m` rows; under
      causal, blocks before the first row that sees the key block are
      skipped by the loop bound), the Q and dO tiles, lse and delta go to
      workgroup memory between barriers; each thread recomputes
      s = scale q k^T and p = exp(s - lse) for its key (0 where lse = -inf,
      and, on blocks straddling the diagonal only, past it) and accumulates
      dv += p^T dO and dk += scale dS^T Q with dS = p (dO v^T - delta) in
      private f32. By default the block then adds scale dS K for its key
      block into the f32 dq accumulator with one `memref.atomic_rmw addf`
      per element;
    - by default `_dq_convert` converts the accumulator to dq's type; with
      `deterministic`, `_dq` instead computes dq over query blocks (one
      thread per query row, K/V tiles in workgroup memory, no atomics), so
      dq is bitwise reproducible.
    For the backward, `block-n` (the dk/dv kernel's threads) must be in
    [1, 1024] as well; the dk/dv tiles are halved, the larger first, until
    they fit in 48 KiB of static shared memory. Nothing of size Tq x Tk is
    allocated.

    With `tensor-cores`, an `fa.attention_backward` with f16 or bf16 q/k/v
    and dO and head dims that are multiples of 16 up to 128 gets the
    tensor-core backward (lib/Conversion/FAToGPU/TensorCoreBackward.cpp),
    always as the deterministic kernel list: `_delta` (vectorized, below), then
    `_dkdv` (`num-warps` warps of 16 keys, block-n keys per block, looping
    over query tiles of block-m rows: S^T = K Q^T, P^T from lse,
    dV += P^T dO, dP^T = V dO^T, dS^T, dK += dS^T Q, the P^T and dS^T
    fragments used as A operands from registers) and `_dq` (16 * num-warps
    queries per block over key tiles of block-n rows: S, P, dP, dS,
    dQ += dS K). Q/dO (resp. K/V) tiles are double-buffered by cp.async;
    K and V (resp. Q and dO) stay in registers when their fragments take at
    most 32 registers, else in workgroup memory. Defaults: 4 warps; dk/dv
    blocks of 64 keys over query tiles of 48 (head dims up to 64) or 32;
    dq blocks of 64 queries over key tiles of 64 or 32. S and dP are
    computed in both kernels (7 tile products instead of FlashAttention-2's
    5) in exchange for no atomics and no transposes through workgroup
    memory. Its `_delta` reads o and dO 16 bytes per lane (one aligned
    vector load: rows are 16-byte aligned, `row_align`), Dv / 8 lanes per
    row (128 / (Dv / 8) rows per block), summed by `gpu.shuffle xor`.

    With `wgmma` as well (sm_90a), an `fa.attention_backward` with f16/bf16
    q/k/v/dO and head dims 32, 64 or 128 gets the Hopper backward
    (lib/Conversion/FAToGPU/WgmmaBackward.cpp): the same three kernels and
    products, each product a `wgmma.mma_async` m64nNk16 group (S^T / S and
    dP^T / dP with both operands in workgroup memory; dV, dK and dQ with
    P^T / dS^T / dS from registers and the loop tile read N-major). Both
    kernels own 16 x num-warps rows (64 per warpgroup; default 8 warps:
    128 keys per `_dkdv` block, 128 queries per `_dq` block) held in
    workgroup memory, and loop over tiles of the other side: `_dkdv` over
    block-m queries (default 64, 32 where 64 does not fit the registers:
    D 128 without `tma` or dq atomics; with dq atomics 128 where it fits:
    D 64 with `tma` and two warpgroups, then two stages), `_dq` over
    block-n keys (default 128, 64 or 32, the first that
    fits); three stages of loop tiles when they fit, else two (`stages`
    fixes the count), and in
    `_dkdv` the tiles' lse and delta in workgroup memory. Each iteration
    issues S and dP back to back with the previous tile's last product
    (dK += dS^T Q_{i-1} between them in `_dkdv`, dQ += dS K_{j-1} after
    them in `_dq`), computes P once S is done and dS once dP is done
    (FlashAttention-3, Section 3.2). With `tma` the tiles arrive by TMA
    as in the forward: the tensor maps of q, k, v and do are four
    `!llvm.ptr` arguments after the memrefs of `_dkdv` and `_dq`
    (`fa.tensor_map_params = 4`; the manifest's kernel sections get
    `tensor_map` lines and the manifest version 4); thread 0 loads the own
    tiles (one mbarrier each) and each loop tile half (one mbarrier per
    stage) into 128-byte-swizzled tiles (64-byte at head dim 32), every
    thread waits on a tile's barriers before its products, one block
    barrier per iteration; the tiles need not split over the warps.
    Where no default tile fits (without `tma`, e.g.
    D 32 with Dv 128) and none of num-warps, block-m and block-n is given,
    the op gets the mma.sync backward instead. Errors on the op (with
    num-warps, block-m or block-n given): num-warps other than 4 or 8 (12
    and 16 leave too few registers per thread for any tile); a tile not a multiple of 16 or over 256 rows; without `tma`, a tile whose 8-row x
    32-column groups do not split evenly over the warps; tile values
    (`_dkdv`: D / 2 + Dv / 2 + 5 x block-m / 2 registers, `_dq`:
    D / 2 + Dv / 8 + 3 x block-n / 2) over the per-thread register budget;
    tiles over `max-shared-bytes` even with two stages.
  }];
  let options = [
    Option<"blockM", "block-m", "int64_t", /*default=*/"0",
           "Query rows per GPU block (block_m), in [1, 1024]; for the scalar "
           "kernels also the threads per block; for the backward's dk/dv "
           "kernel the queries per tile; 0: the default of the kernel and "
           "head dim (see above)">,
    Option<"blockN", "block-n", "int64_t", /*default=*/"0",
           "Key/value rows per shared-memory tile (block_n); for the "
           "backward the keys per dk/dv block (scalar and mma.sync) or per "
           "dq tile (wgmma); 1 to 1024, or 0: the default of the kernel "
           "and head dim (see above); each kernel narrows it further "
           "(an op error says how)">,
    Option<"tensorCores", "tensor-cores", "bool", /*default=*/"false",
           "fa.attention with f16/bf16 operands and head dims that are "
           "multiples of 16 up to 256: the mma.sync m16n8k16 tensor-core "
           "kernel (sm_80 and later) instead of the scalar one">,
    Option<"wgmma", "wgmma", "bool", /*default=*/"false",
           "With tensor-cores, fa.attention and fa.attention_backward with "
           "f16/bf16 operands and head dims 32, 64 or 128: the sm_90a "
           "warpgroup MMA (wgmma) kernels; needs chip sm_90a">,
    Option<"numWarps", "num-warps", "int64_t", /*default=*/"0",
           "Tensor-core kernels: warps per block, in [1, 16]. mma.sync: "
           "each owns block-m / num-warps query rows (16 to 64); 0: 4, or "
           "with only block-m given, block-m / 32 (head dims up to 128) or "
           "block-m / 16 when that divides, else the fewest that do. "
           "wgmma: whole warpgroups (forward 4, 8, 12 or 16; backward 4 "
           "or 8); 0: 8, or with only block-m given to the forward, "
           "block-m / 16">,
    Option<"maxSharedBytes", "max-shared-bytes", "int64_t",
           /*default=*/"166912",
           "Tensor-core kernels: the workgroup memory one block may use, in "
           "bytes (the chip's opt-in limit: 166912 on sm_80/sm_87, 101376 on "
           "sm_86/sm_89, 232448 on sm_90; fa-to-ptx sets it from `chip`)">,
    Option<"stages", "stages", "int64_t", /*default=*/"0",
           "wgmma kernels: stages of loop tiles in workgroup memory (K/V in "
           "the forward; Q/dO or K/V in the backward), 2 or 3; 0: 3 when "
           "they fit in max-shared-bytes, else 2">,
    Option<"tma", "tma", "bool", /*default=*/"false",
           "wgmma kernels: load the tiles (Q, K, V; in the backward also "
           "dO) with the Tensor Memory Accelerator (cp.async.bulk.tensor, "
           "one thread, completion on mbarriers) from tensor maps the "
           "runtime encodes on the host (three extra by-value kernel "
           "parameters in the forward, four in _dkdv and _dq, and with "
           "dq-atomics a fifth in _dkdv, dq_accum's, for its TMA reductions; "
           "`tensor_map` lines in the manifest) instead of per-thread "
           "cp.async; ignored "
           "by ops that take another kernel (without tensor-cores and "
           "wgmma, f32, other head dims)">,
    Option<"producerWarp", "producer-warp", "bool", /*default=*/"false",
           "TMA wgmma forward: one more warpgroup per block (128 threads) "
           "whose first thread issues every TMA load and whose registers "
           "go to the consumer warpgroups (setmaxnreg: 24 per producer "
           "thread, up to 240 per consumer); the consumers release each K/V "
           "stage on an 'empty' mbarrier, with no block barrier in the key "
           "loop (FlashAttention-3, Section 3.1). Default block-n with it: "
           "128. When none of num-warps, block-m and block-n is given, head "
           "dims up to 64 take 12 consumer warps (block-m 192), with or "
           "without a causal mask. Needs "
           "`tma`; ignored by the backward (see backward-producer-warp) and by "
           "ops that take another kernel">,
    Option<"pingpong", "pingpong", "bool", /*default=*/"false",
           "TMA wgmma forward with `producer-warp` and two or more "
           "warpgroups: the consumer warpgroups take turns issuing their "
           "products (named barriers 1 to warpgroups), so that one's "
           "softmax overlaps another's products (FlashAttention-3, Section "
           "3.1, pingpong scheduling); needs `producer-warp` (an error "
           "without it or with one consumer warpgroup)">,
    Option<"tilesPerBlock", "tiles-per-block", "int64_t", /*default=*/"1",
           "TMA wgmma forward with `producer-warp`, without `pingpong`: "
           "query tiles (block-m rows each) per GPU block, 1 or 2. With 2, "
           "block x computes two tiles one after the other (no mask: 2x "
           "and 2x + 1; causal: n - 1 - x and x of the n query tiles, so "
           "that blocks see about equal key counts), with Q in two "
           "buffers: the producer loads the second tile's Q and first K/V "
           "tiles while the consumers finish the first, and when both "
           "tiles visit a key block the consumers issue the second tile's "
           "first S = Q K^T right after the first tile's last P V and "
           "write the first tile's o while it runs (H200, bf16 D 128: "
           "+0.6-1.6%); grid "
           "ceil(Tq / (2 block-m)) x batch; the default block-n search "
           "counts the second Q buffer. 0: 2 where it measured faster "
           "(producer-warp, no pingpong, two consumer warpgroups, head "
           "dims above 64, both Q buffers within max-shared-bytes, Tk "
           "dynamic or over five key blocks), else 1. Other values, or 2 "
           "without producer-warp or with pingpong: an error; ignored by "
           "ops that take another kernel">,
    Option<"persistent", "persistent", "std::string", /*default=*/"\"false\"",
           "TMA wgmma forward with `producer-warp`, without `pingpong`, "
           "for ops whose o leaves by TMA (o in q's type, head_dim_v == "
           "head_dim, a multiple of 64) and whose two Q buffers fit "
           "`max-shared-bytes`: a persistent kernel with 128-key tiles. "
           "The grid is "
           "min(query tiles x batch, resident blocks) (manifest grid "
           "`min(mul(ceil_div(seqlen_q,block_m),batch),resident_blocks)`, "
           "resident_blocks from the launcher's occupancy query); block x "
           "takes tiles x, x + nctaid.x, ... (causal: pairs of tiles n - 1 "
           "- x and x when the query tile count n is even and the pairs "
           "fill the grid, else longest first), Q in "
           "two buffers with \"full\" and \"empty\" mbarriers, the K/V "
           "stages one ring across the block's tiles, and with one or two "
           "consumer warpgroups every tile boundary peeled: the next "
           "tile's S_0 is issued right after the last P V and the finished "
           "tile's o is written while it runs (with three, as at D 64, "
           "each tile ends alone: the peel spilled) (FlashAttention-3, Shah "
           "et al. 2024, Section 3.1). `false`: never; `auto`: where it "
           "was measured faster, the kernels with two consumer warpgroups "
           "(head dims above 64) with the automatic tiles-per-block and a "
           "dynamic Tk or one of more than five key blocks (H100, "
           "D 128: +5% at T 2k, +1% at T 4k, even at T 8k-16k; D 64 2-10% "
           "slower; docs/PERFORMANCE.md, thirty-eighth session); `true`: "
           "every op it applies to, overriding tiles-per-block (with a "
           "static Tk of few key blocks ptxas spilled 136-184 bytes at Tq "
           "100, Tk 300, D 128, before the forty-second session; none "
           "since). Other ops "
           "ignore it. Errors: another value; `true` with "
           "tiles-per-block=2, pingpong, or without producer-warp">,
    Option<"deterministic", "deterministic", "bool", /*default=*/"false",
           "fa.attention_backward: compute dq in a separate kernel over "
           "query blocks instead of with f32 atomics, so that dq is bitwise "
           "identical across runs">,
    Option<"dqAtomics", "dq-atomics", "bool", /*default=*/"false",
           "fa.attention_backward on the wgmma kernels: `_dkdv` also "
           "computes dq (dQ = scale dS K from dS^T staged in workgroup "
           "memory; dQ^T = K^T dS^T with 32-query tiles) and adds it into "
           "an f32 accumulator: with `tma`, each warp stages its rows in "
           "workgroup memory and adds them with TMA reductions "
           "(cp.reduce.async.bulk.tensor through a tensor map of the "
           "accumulator, FlashAttention-3 Section 3); otherwise with "
           "red.global.add (.v2.f32 pairs: PTX ISA 8.1). `_dq_convert` "
           "replaces the `_dq` kernel (5 tile "
           "products instead of 7; FlashAttention-2, Algorithm 2; `block-n` "
           "then shapes no backward kernel). Applies with `wgmma`, head dim "
           "64 or 128 equal to Dv and `deterministic` off (the split "
           "kernels otherwise); dq is then not bitwise reproducible. The "
           "scalar and mma.sync backward kernels are not affected (they add "
           "dq with atomics unless `deterministic`)">,
    Option<"indexBitwidth", "index-bitwidth", "int64_t", /*default=*/"64",
           "Bits of the TMA wgmma kernels' `index` type (fa.attention and "
           "fa.attention_backward), 32 or 64, or 0 for the kernel's "
           "choice: 32 for the forward with the producer warpgroup at head "
           "dims D = Dv = 128 and at D = Dv = 64 with a causal mask (1-2.5% "
           "faster on the H200), and for every TMA backward (0.5-5% "
           "faster), unless a static shape holds 2^31 elements or more; "
           "else 64. With 32 the gpu.module gets `dlti.dl_spec<index = "
           "32>`, which upstream's convert-gpu-to-nvvm follows (memref "
           "sizes, strides and offsets become 32-bit kernel parameters, "
           "index arithmetic 32-bit; pointers keep 64 bits), and the "
           "manifest says `index_bits 32`: every tensor of the op must then "
           "hold fewer than 2^31 elements (static shapes over that: an "
           "error on the op; dynamic ones: the runtime's check at launch, "
           "and the runtimes launch larger batches in chunks). The other "
           "kernels keep 64-bit indices: the mma.sync ones "
           "(convert-nvgpu-to-nvvm lowers their nvgpu ops' memrefs with "
           "64-bit indices whatever the data layout says), the cp.async "
           "wgmma ones (not checked with 32) and the scalar ones. With 64 "
           "bits a static shape of 2^60 elements or more (byte offsets past "
           "64 bits) is an error on the op. Other values: an error (on the "
           "module)">,
    Option<"backwardProducerWarp", "backward-producer-warp", "std::string",
           /*default=*/"\"false\"",
           "fa.attention_backward on the TMA wgmma kernels with dq atomics "
           "(`tma`, `dq-atomics`): `_dkdv` gets one more warpgroup (the "
           "last, 128 threads; setmaxnreg: 24 registers per producer "
           "thread, up to 240 per consumer) whose first thread issues the "
           "Q and dO TMA loads and whose threads copy the lse/delta columns "
           "(cp.async completing on the Q stage's mbarrier); the consumers "
           "release each stage on an 'empty' mbarrier and hand each tile's "
           "dS^T to each other on named barriers, no block-wide barrier "
           "per tile (FlashAttention-3, Section 3.1). `false`: never; "
           "`auto`: where it was measured faster, head dims D = Dv = 128 "
           "without a mask or with a top-left causal one (H200 +3-4% with "
           "the mask; H100 +2-4% at T 2k-16k without it, since the "
           "fragment-order dQ staging; 5-10% slower at D 64; not measured "
           "with bottom_right; docs/PERFORMANCE.md, seventeenth and "
           "twenty-third runs, thirty-fourth session); "
           "`true`: wherever it applies, the tiles it was built for (64 "
           "queries at head dim 128, 128 at head dim 64; at the 168 "
           "registers ptxas allots 384 threads its `_dkdv` can spill: "
           "4-88 bytes at D 64 without a mask or bottom_right, most with "
           "static shapes). "
           "Values as for a boolean option (true/1, false/0) or `auto`. "
           "Errors: another value (on the module); `true` on an op that "
           "gets the TMA wgmma backward without dq atomics or with another "
           "dk/dv query tile (block-m; on the op). Ops that take another "
           "kernel ignore it">,
    Option<"pairKeyBlocks", "pair-key-blocks", "bool", /*default=*/"false",
           "fa.attention_backward with a causal mask on the TMA wgmma "
           "kernels with the producer warpgroup (`backward-producer-warp`): "
           "`_dkdv` block x computes key blocks x and n - 1 - x (n = "
           "ceil(Tk / keys per block); the middle one of an odd n alone) "
           "one after the other, so that the blocks are about equally long "
           "(grid ceil(Tk / (2 x keys per block))); the two key blocks' "
           "query tiles go through one ring of stages (the producer loads "
           "the second one's first tiles while the consumers finish the "
           "first) and the second key block's K/V rows are prefetched into "
           "L2. Measured on the H200 (bf16/f16, D = 128, top-left causal, "
           "`_dkdv` and its two small kernels): +1.5% at T 2k-4k, +-0 at T "
           "8k, 4.5% slower at T 16k (half the blocks of equal length leave "
           "the grid's last wave partly empty; docs/PERFORMANCE.md, "
           "twenty-sixth run), hence off by default. Kernels without the "
           "producer warpgroup (`backward-producer-warp` false, or `auto` "
           "where it does not take it: all but D = Dv = 128 without a mask "
           "or with top_left) and ops without a causal mask ignore it. At D 64 (with "
           "`backward-producer-warp=true`) ptxas spills 8-12 bytes of the "
           "paired `_dkdv`">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::DLTIDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def FAConvertBF16MmaSyncToNVVM
    : Pass<"fa-convert-bf16-mma-sync-to-nvvm"> {
  let summary = "Lower bf16 nvgpu.mma.sync m16n8k16 to nvvm.mma.sync";
  let description = [{
    Upstream `convert-nvgpu-to-nvvm` (MLIR 22) lowers `nvgpu.mma.sync` for
    f16, tf32, i8, i4 and f64 operands, but rejects bf16 ones ("failed to
    deduce operand PTX types"), although PTX has
    `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32` (PTX ISA, "Warp
    Level Matrix Multiply-Accumulate Instructions", sm_80 and later).
    This pass rewrites every `nvgpu.mma.sync` with `mmaShape = [16, 8, 16]`,
    A `vector<4x2xbf16>`, B `vector<2x2xbf16>` and C `vector<2x2xf32>` into
    `nvvm.mma.sync` (row-major A, column-major B, bf16 multiplicands) whose
    operands are the bf16 pairs bitcast to i32, and rebuilds the
    `vector<2x2xf32>` result from the returned struct. Run it before
    `convert-nvgpu-to-nvvm`; any other `nvgpu.mma.sync` is left for that
    pass.
  }];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def FALowerTensorMapParams
    : Pass<"fa-lower-tensor-map-params"> {
  let summary = "Make a TMA kernel's tensor-map arguments by-value "
                "CUtensorMap parameters";
  let description = [{
    A TMA load (`cp.async.bulk.tensor`, PTX ISA "Data Movement and
    Conversion Instructions: cp.async.bulk.tensor") reads its tensor map
    (the 128-byte `CUtensorMap` that `cuTensorMapEncodeTiled` fills on the
    host) from the kernel parameter, constant or global state space. The
    kernels of `convert-fa-to-gpu tma=true` take each map as an `!llvm.ptr`
    argument and record how many close their argument list in the function
    attribute `fa.tensor_map_params` (an i64); `convert-gpu-to-nvvm` keeps
    that attribute but drops `llvm.byval` argument attributes. On every
    `llvm.func` carrying it, anywhere under the op the pass runs on (e.g.
    `--pass-pipeline='builtin.module(fa-lower-tensor-map-params)'`, or on
    each `gpu.module` as fa-to-ptx runs it), this pass gives those last N
    arguments
    `llvm.byval = !llvm.array<128 x i8>`, `llvm.align = 64` and
    `nvvm.grid_constant`, then removes the attribute: the NVPTX backend then
    declares `.param .align 64 .b8 name[128]` and takes the parameter's
    generic address with `cvta.param`, so the TMA instructions read the map
    the launcher passed by value (as CUDA C++ `const __grid_constant__
    CUtensorMap`). When a kernel of the gpu.module has tensor maps, the
    module's workgroup-memory globals (the dynamic workgroup memory's
    symbol among them; those of the symbol table holding the kernel) are
    aligned to at least 1024 bytes: TMA
    destinations need 128, and the 128-byte swizzle that TMA writes and
    wgmma reads repeats every 1024 bytes of address. Run after `convert-gpu-to-nvvm`.

    Errors (one line at the function's location): the attribute on an op
    other than `llvm.func` (e.g. a `gpu.func`: the pass runs after
    `convert-gpu-to-nvvm`), on a function that is not a kernel
    (`nvvm.kernel`); an attribute that is not a non-negative integer no
    larger than the argument count; one of those arguments not a generic
    `!llvm.ptr` (address space 0), or already `llvm.byval` of another type.
    Declarations are handled like definitions.
  }];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect",
    "::mlir::NVVM::NVVMDialect",
  ];
}

//===----------------------------------------------------------------------===//
// Kernel export
//===----------------------------------------------------------------------===//

def FAExportKernels : Pass<"fa-export-kernels", "::mlir::ModuleOp"> {
  let summary = "Write the PTX and the manifest of each fa kernel to a directory";
  let description = [{
    For every `gpu.binary` named after a kernel recorded in the module's
    `fa.manifests` (see `convert-fa-to-gpu`), writes `<output-dir>/<kernel>.ptx`
    (the PTX assembly of its NVVM object) and `<output-dir>/<kernel>.manifest`
    in the format of docs/ARTIFACTS.md, adding `version` (1 for a forward
    kernel, 3 for one with `tensor_map` lines, 2 for a backward, 4 for one
    with `tensor_map` lines in a kernel section), `ptx` and
    `chip` (the chip of the object's `#nvvm.target`). The directory and its
    missing parents are created like `mkdir -p` (mode 0777 less the umask).
    The IR is not changed.

    Preconditions: the binaries hold PTX assembly (`gpu-module-to-binary
    format=isa`). An empty `output-dir` makes the pass a no-op. A binary
    without PTX, a missing manifest or a file that cannot be written is an
    error, and so is a kernel whose manifest lists `tensor_map` lines while
    its PTX entry does not take that many by-value 128-byte parameters
    (`fa-lower-tensor-map-params` was left out of a hand-built pipeline).
    A module without recorded kernels is an error too: at an `fa` op still
    in it (convert-fa-to-gpu has not run), else at the module (no
    attention to compile).
  }];
  let options = [
    Option<"outputDir", "output-dir", "std::string", /*default=*/"\"\"",
           "Directory to write <kernel>.ptx and <kernel>.manifest into; "
           "empty: do nothing">,
  ];
}

#endif // FA_CONVERSION_PASSES_TD
