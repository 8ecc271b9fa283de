"""Finding kernels for a call and launching them.

A call's :class:`~fa_opt.config.AttentionConfig` (under the shape policy) is
resolved once, then memoized; a kernel is found in this order:

1. precompiled folders: :func:`add_kernel_dir` and ``$FA_OPT_KERNEL_DIRS``
   (``os.pathsep``-separated), each holding cache entries
   (``<key>/fa_opt.json``, as ``python -m fa_opt compile --out DIR`` writes
   them) or bare ``*.manifest`` files from ``fa-opt --fa-to-ptx``;
2. the compile driver (fa-opt + the disk cache), when fa-opt is found.

The machine that runs kernels needs neither fa-opt nor LLVM: compile on the
build machine, carry the folder.
"""

from __future__ import annotations

import json
import math
import os
import stat
import threading
import warnings
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import cache
from .compiler import (MAX_MANIFEST_BYTES, Artifact, CompilationError,
                       FaOptNotFoundError, artifact_problem,
                       compile_attention, find_fa_opt)
from .config import AttentionConfig, CompileOptions, SHAPE_POLICIES
from .layout import (TensorMapArgs, memref_params, one_batch_span,
                     tensor_map_args)
from .manifest import (ELEMENT_SIZES, BackwardManifest, Manifest,
                       ManifestError, operand_dtype, read_any_manifest)
from .memo import BoundedMemo

# Grid y (the batch) is limited to 65535 blocks: larger batches are launched
# in chunks, the tensors' pointers advanced to the chunk start (and
# smaller chunks for kernels with 32-bit indices: batch_chunk).
MAX_GRID_Y = 65535


@dataclass
class KernelSet:
    """The forward kernel of a config and, if compiled, its backward
    kernels (launch order). ``short_forward``: ``(max_seqlen_k, manifest)``
    of a second forward kernel for key sequences of at most max_seqlen_k
    (:func:`fa_opt.config.short_forward_options`), or None."""

    config: AttentionConfig
    forward: Manifest
    backward: Optional[BackwardManifest] = None
    backward_error: Optional[str] = None
    source: str = ""
    short_forward: Optional[Tuple[int, Manifest]] = None
    _functions: Dict[Tuple[str, int], object] = field(default_factory=dict)

    def accepts(self, batch: int, seqlen_q: int, seqlen_k: int) -> bool:
        return self.forward.accepts(batch, seqlen_q, seqlen_k)

    def forward_for(self, seqlen_k: int) -> Manifest:
        """The forward kernel that runs a call with ``seqlen_k`` keys: the
        short forward up to its max_seqlen_k, else (and with the
        environment variable FA_OPT_SHORT_FORWARD=0) the default one."""
        if self.short_forward is not None and \
                seqlen_k <= self.short_forward[0] and \
                os.environ.get("FA_OPT_SHORT_FORWARD", "1") != "0":
            return self.short_forward[1]
        return self.forward

    def function(self, manifest: Manifest, device: int):
        key = (manifest.kernel, device)
        fn = self._functions.get(key)
        if fn is None:
            fn = _module(manifest.ptx, device).function(
                manifest.kernel, manifest.shared_bytes)
            self._functions[key] = fn
        return fn


_modules: Dict[Tuple[str, int], object] = {}
_modules_lock = threading.Lock()


def _module(ptx: str, device: int):
    """The loaded module of a PTX file on a device (loaded once)."""
    key = (ptx, device)
    mod = _modules.get(key)
    if mod is None:
        with _modules_lock:
            mod = _modules.get(key)
            if mod is None:
                from .cuda_driver import Module
                mod = Module(ptx, device)
                _modules[key] = mod
    return mod


# Prepared launches by everything they are made of (the manifest, the
# device, the sizes, each param's and tensor-map operand's pointer, sizes,
# strides and element size, and q's where the kernel has maps), so that a
# call on the same tensors as an earlier one -- or on fresh outputs the
# caching allocator put where the last ones were -- builds no arguments
# and encodes no tensor map; the oldest dropped first.
_plans = BoundedMemo(4096)


def clear_launch_cache() -> None:
    """Drops every cached prepared launch (:func:`launch`)."""
    _plans.clear()


def launch(kernels: KernelSet, manifest: Manifest, device: int,
           tensors: Dict[str, Tuple[int, Sequence[int], Sequence[int], int]],
           batch: int, seqlen_q: int, seqlen_k: int, stream: int) -> None:
    """Launches one kernel (a forward manifest or a backward kernel's
    view): ``tensors`` maps each manifest param name to ``(data_ptr, sizes,
    strides, element_size)`` of its memref (sizes and strides in elements,
    the batch dim first). Batches over 65535 (or over
    :func:`batch_chunk`'s limit for 32-bit indices) go in chunks; each chunk's
    launch passes the memrefs, then the tensor maps of the manifest's
    ``tensor_map`` lines over that chunk's batches. The packed arguments
    are cached by all they depend on, so a repeated call only launches.
    Raises ValueError when the manifest's static dims reject the sizes or
    TMA cannot describe a view (fa_opt.layout.tensor_map_args), and
    FaCudaError when the driver fails."""
    try:
        key = (id(manifest), device, batch, seqlen_q, seqlen_k,
               *(_flat(tensors[n]) for n in manifest.params),
               *(_flat(tensors[tm.operand]) for tm in manifest.tensor_maps))
    except KeyError:  # a param missing: _prepare raises what it raises
        key = None
    if key is not None and manifest.tensor_maps and "q" in tensors:
        # q's pointer stands in for an operand with no element.
        key += _flat(tensors["q"])
    plan = _plans.get(key) if key is not None else None
    # The manifest is kept in the plan: its id is not reused while cached.
    if plan is None or plan[0] is not manifest:
        plan = (manifest, _prepare(kernels, manifest, device, tensors, batch,
                                   seqlen_q, seqlen_k))
        if key is not None:
            _plans.put(key, plan)
    for fn, prepared in plan[1]:
        fn.launch_prepared(prepared, stream)


def _flat(memref) -> tuple:
    """``(data_ptr, sizes, strides, element_size)`` as one flat tuple."""
    ptr, sizes, strides, esize = memref
    return (ptr, *sizes, *strides, esize)


def _prepare(kernels: KernelSet, manifest: Manifest, device: int,
             tensors: Dict[str, Tuple[int, Sequence[int], Sequence[int], int]],
             batch: int, seqlen_q: int, seqlen_k: int) -> list:
    """The (Function, PreparedLaunch) of each batch chunk of a launch."""
    if not manifest.accepts(batch, seqlen_q, seqlen_k):
        raise ValueError(
            f"kernel {manifest.kernel} was compiled for batch "
            f"{manifest.batch}, seqlen_q {manifest.seqlen_q}, seqlen_k "
            f"{manifest.seqlen_k} ('?' = any), not {batch}, {seqlen_q}, "
            f"{seqlen_k}")
    fn = kernels.function(manifest, device)
    block = (manifest.threads, 1, 1)
    chunks = []
    step = batch_chunk(manifest, tensors)
    for start in range(0, batch, step):
        chunk = min(step, batch - start)
        grid = manifest.grid_for(
            chunk, seqlen_q, seqlen_k,
            fn.resident_blocks(manifest.threads)
            if manifest.uses_resident_blocks() else None)
        if 0 in grid:
            continue
        params: List[int] = []
        for name in manifest.params:
            ptr, sizes, strides, _ = tensors[name]
            sizes = [chunk, *sizes[1:]]
            params += memref_params(ptr + start * strides[0] * tensors[name][3]
                                    if start else ptr, sizes, strides)
        chunks.append((fn, fn.prepare(
            grid, block, params,
            tensor_maps_for(manifest, tensors, start, chunk))))
    return chunks


def batch_chunk(manifest: Manifest,
                tensors: Dict[str, Tuple[int, Sequence[int], Sequence[int],
                                         int]]) -> int:
    """The most batches one launch of ``manifest`` takes: 65535 (grid y),
    and for a kernel with 32-bit indices (``index_bits 32``) few enough
    that every param's extent in the chunk, ``(chunk - 1) * batch_stride +
    (the elements one batch spans)``, stays below 2^31 elements: the rule
    of the compiler's static check and of the C++ runtime's ``batchChunk``
    (every offset, size and stride then fits a signed 32-bit index).
    Raises ValueError when one batch alone spans 2^31 elements or more
    (such a tensor needs a kernel compiled with ``index-bitwidth=64``)."""
    step = MAX_GRID_Y
    if manifest.index_bits != 32:
        return step
    limit = 2**31 - 1
    for name in manifest.params:
        _, sizes, strides, _ = tensors[name]
        span = one_batch_span(sizes, strides)
        if span == 0:
            continue  # no element
        if span > limit:
            raise ValueError(
                f"kernel {manifest.kernel} was compiled with 32-bit indices "
                f"(index_bits 32): one batch of '{name}' spans {span} "
                f"elements, expected fewer than 2^31 (compile with "
                f"index-bitwidth=64)")
        if strides[0]:
            # The chunk's extent, (step - 1) * stride + span, is at most
            # 2^31 - 1.
            step = min(step, (limit - span) // abs(strides[0]) + 1)
    return step


def tensor_maps_for(manifest: Manifest,
                    tensors: Dict[str, Tuple[int, Sequence[int],
                                             Sequence[int], int]],
                    start: int = 0, chunk: Optional[int] = None
                    ) -> List[TensorMapArgs]:
    """The encode arguments of the manifest's ``tensor_map`` lines, in
    order, for the batches ``[start, start + chunk)`` of ``tensors`` (as
    :func:`launch` takes them; q's pointer stands in for an operand with no
    element). ``manifest`` is a forward manifest or a backward kernel's
    view (maps of q, k, v, do, dq_accum; do in ``do_dtype``, dq_accum
    f32)."""
    if not manifest.tensor_maps:
        return []
    anchor = "q" if "q" in tensors else manifest.tensor_maps[0].operand
    q_ptr, _, q_strides, q_esize = tensors[anchor]
    q_ptr += start * q_strides[0] * q_esize
    args = []
    for tm in manifest.tensor_maps:
        ptr, sizes, strides, esize = tensors[tm.operand]
        dtype = operand_dtype(manifest, tm.operand)
        args.append(tensor_map_args(
            tm, dtype, ELEMENT_SIZES[dtype], ptr + start * strides[0] * esize,
            [sizes[0] if chunk is None else chunk, *sizes[1:]], strides,
            q_ptr, manifest.kernel))
    return args


def _manifest_config_matches(m: Manifest, c: AttentionConfig) -> bool:
    return (m.dtype == c.dtype and m.o_dtype == c.o_dtype
            and m.head_dim == c.head_dim and m.head_dim_v == c.head_dim_v
            and m.causal == c.causal and m.has_lse
            and m.scale is not None
            and math.isclose(m.scale, c.scale, rel_tol=1e-6))



class Registry:
    """Kernel lookup, compile and memo (one per process: :data:`registry`)."""

    def __init__(self):
        self._lock = threading.RLock()
        self._dirs: List[str] = []
        self._env_read = False
        self._index: Optional[List[Tuple[str, object]]] = None
        # Of the last index build, for `python -m fa_opt list`: manifests
        # that could not be read, (path, reason), and the backward ones.
        self.skipped: List[Tuple[str, str]] = []
        self.backward_manifests: List[object] = []
        self._memo: Dict[tuple, List[KernelSet]] = {}
        self.shape_policy = "dynamic"
        self.options: Optional[CompileOptions] = None  # None: chip of device

    # -- configuration --------------------------------------------------------
    def add_kernel_dir(self, path: str) -> None:
        with self._lock:
            path = os.path.abspath(path)
            if path not in self._dirs:
                self._dirs.append(path)
            self._index = None

    def kernel_dirs(self) -> List[str]:
        with self._lock:
            if not self._env_read:
                self._env_read = True
                for p in os.environ.get("FA_OPT_KERNEL_DIRS", "").split(os.pathsep):
                    if p and os.path.abspath(p) not in self._dirs:
                        self._dirs.append(os.path.abspath(p))
            return list(self._dirs)

    # -- precompiled folders ----------------------------------------------------
    def _build_index(self) -> List[Tuple[str, object]]:
        """Entries: ("artifact", Artifact) or ("manifest", Manifest)."""
        index: List[Tuple[str, object]] = []
        self.skipped, self.backward_manifests = [], []
        for root in self.kernel_dirs():
            if not os.path.isdir(root):
                continue
            covered = set()
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = [d for d in dirnames if not d.startswith(".staging-")
                               and ".broken-" not in d]
                if cache.ENTRY_FILE in filenames:
                    entry_path = os.path.join(dirpath, cache.ENTRY_FILE)
                    try:
                        with open(entry_path) as f:
                            entry = json.load(f)
                        # The manifests parsed here serve the lookups.
                        parsed: Dict[str, object] = {}
                        problem = artifact_problem(dirpath, entry, parsed)
                        config = None if problem else \
                            AttentionConfig(**entry["config"])
                    except (OSError, ValueError, KeyError, TypeError) as err:
                        problem = str(err) or type(err).__name__
                    if problem is None:
                        index.append(("artifact",
                                      Artifact(dirpath, entry, config,
                                               parsed)))
                        covered.add(dirpath)
                        continue
                    # Not an entry this package wrote: said, and the
                    # folder's manifests are read as plain ones.
                    self.skipped.append((entry_path, problem))
                for name in sorted(filenames):
                    if name.endswith(".manifest"):
                        path = os.path.join(dirpath, name)
                        # A FIFO would block the read, /dev/zero never end.
                        try:
                            st = os.stat(path)
                        except OSError as err:
                            self.skipped.append((path, str(err)))
                            continue
                        if not stat.S_ISREG(st.st_mode):
                            if not stat.S_ISDIR(st.st_mode):
                                self.skipped.append(
                                    (path, "not a regular file"))
                            continue
                        if st.st_size > MAX_MANIFEST_BYTES:
                            self.skipped.append(
                                (path, f"{st.st_size} bytes, more than a "
                                 f"manifest ({MAX_MANIFEST_BYTES})"))
                            continue
                        try:
                            m = read_any_manifest(path)
                        except (OSError, ManifestError, ValueError) as err:
                            # ValueError: not UTF-8 text, among others.
                            self.skipped.append((path, str(err)))
                            continue
                        if isinstance(m, Manifest):
                            index.append(("manifest", m))
                        else:
                            self.backward_manifests.append(m)
        return index

    def _from_dirs(self, config: AttentionConfig, chip: str
                   ) -> List[KernelSet]:
        if self._index is None:
            self._index = self._build_index()
        found = []
        for kind, item in self._index:
            if kind == "artifact":
                art: Artifact = item
                if art.chip != chip or not _same_code(art.config, config):
                    continue
                try:
                    found.append(KernelSet(
                        config=art.config, forward=art.forward_manifest(),
                        backward=art.backward_manifest(),
                        backward_error=art.backward_error,
                        source=art.directory,
                        short_forward=art.short_forward()))
                except (OSError, ManifestError):
                    continue
            else:
                m: Manifest = item
                if m.chip == chip and _manifest_config_matches(m, config) \
                        and _static_dims_compatible(m, config):
                    found.append(KernelSet(config=m.config(), forward=m,
                                           source=m.path))
        return found

    # -- lookup -------------------------------------------------------------------
    def kernels_for(self, config: AttentionConfig, chip: str, batch: int,
                    seqlen_q: int, seqlen_k: int,
                    deterministic: bool = False) -> KernelSet:
        """The kernels that run this call (memoized per config and chip).
        ``deterministic``: only kernel sets whose backward is bitwise
        reproducible (manifest ``deterministic 1``); compiled with
        ``deterministic=true`` when none is precompiled. Raises
        FaOptNotFoundError when nothing fits and fa-opt is missing,
        CompilationError when fa-opt fails, ValueError when the compile
        options ask for dq atomics and ``deterministic`` is set (a
        ``backward_producer_warp=True`` of the options is dropped then)."""
        key = (config, chip, deterministic)
        candidates = self._memo.get(key)
        if candidates is not None:
            for ks in candidates:
                if ks.accepts(batch, seqlen_q, seqlen_k):
                    return ks
        with self._lock:
            candidates = self._memo.get(key)
            if candidates is None:
                candidates = self._from_dirs(config, chip)
                # A set with a backward before one without (a forward-only
                # compile of the same config in the same folder would
                # otherwise hide it from training), then one with a short
                # forward before one without (so that the order the folders
                # were read in does not decide).
                candidates.sort(key=lambda ks: (ks.backward is None,
                                                ks.short_forward is None))
                if deterministic:
                    candidates = [ks for ks in candidates if ks.backward
                                  and ks.backward.deterministic]
                self._memo[key] = candidates
            for ks in candidates:
                if ks.accepts(batch, seqlen_q, seqlen_k):
                    return ks
            options = self.options or CompileOptions(chip=chip)
            if options.chip != chip or (deterministic
                                        and not options.deterministic):
                changed = {"chip": chip, "extra": tuple(options.extra)}
                if deterministic:
                    changed["deterministic"] = True
                    # The producer warpgroup is a dq-atomics kernel: the
                    # deterministic backward goes without it.
                    if options.backward_producer_warp is True:
                        changed["backward_producer_warp"] = None
                options = CompileOptions(**{**options.to_dict(), **changed})
            try:
                find_fa_opt()
            except FaOptNotFoundError as err:
                dirs = self.kernel_dirs()
                what = ("no kernel with a deterministic backward"
                        if deterministic else "no kernel")
                raise FaOptNotFoundError(
                    f"{what} for {_describe(config)} on {chip} (batch "
                    f"{batch}, seqlen_q {seqlen_q}, seqlen_k {seqlen_k}) in "
                    f"the precompiled folders "
                    f"{dirs if dirs else '(none: FA_OPT_KERNEL_DIRS is unset)'}"
                    f", and it cannot be compiled here: {err}") from None
            art = compile_attention(config, options)
            ks = KernelSet(config=config, forward=art.forward_manifest(),
                           backward=art.backward_manifest(),
                           backward_error=art.backward_error,
                           source=art.directory,
                           short_forward=art.short_forward())
            if not ks.accepts(batch, seqlen_q, seqlen_k):
                raise RuntimeError(f"compiled kernel {ks.forward.kernel} does "
                                   f"not accept the sizes it was compiled for")
            candidates.append(ks)
            return ks


def deterministic_backward(ks: KernelSet, fetch: Callable[[], KernelSet],
                           warn_only: bool = False) -> KernelSet:
    """``ks`` when its backward is bitwise reproducible (manifest
    ``deterministic 1``: dq in its own kernel over query blocks) or absent;
    else ``fetch()``, the same call's kernels with a deterministic backward
    (``Registry.kernels_for(..., deterministic=True)``). Where fetch fails
    (FaOptNotFoundError, CompilationError, ValueError): RuntimeError
    naming the cause, or with ``warn_only`` a UserWarning and ``ks``
    (dq added with f32 atomics), as PyTorch's nondeterministic operations
    do under ``torch.use_deterministic_algorithms(True, warn_only=...)``."""
    if not ks.backward or ks.backward.deterministic:
        return ks
    try:
        return fetch()
    except (FaOptNotFoundError, CompilationError, ValueError) as err:
        message = (
            f"fa_opt.attention: the backward kernels of {ks.source} add dq "
            "with f32 atomics, which is not deterministic, and "
            "torch.use_deterministic_algorithms(True) is set; no "
            f"deterministic backward could be had: {str(err).strip()} "
            "(compile with CompileOptions(deterministic=True) or `python -m "
            "fa_opt compile --deterministic true`)")
        if warn_only:
            warnings.warn(message, UserWarning, stacklevel=3)
            return ks
        raise RuntimeError(message) from None


def _same_code(a: AttentionConfig, b: AttentionConfig) -> bool:
    """Equal configs, the scale compared to a relative 1e-12."""
    return (a.dtype, a.o_dtype, a.head_dim, a.head_dim_v, a.causal, a.batch,
            a.seqlen_q, a.seqlen_k) == (b.dtype, b.o_dtype, b.head_dim,
                                        b.head_dim_v, b.causal, b.batch,
                                        b.seqlen_q, b.seqlen_k) \
        and math.isclose(a.scale, b.scale, rel_tol=1e-12)


def _static_dims_compatible(m: Manifest, c: AttentionConfig) -> bool:
    """A bare manifest serves a config if every dim it fixes is fixed to the
    same value by the config, or left dynamic by the config (then
    ``accepts`` checks each call)."""
    return all(md is None or cd is None or md == cd for md, cd in (
        (m.batch, c.batch), (m.seqlen_q, c.seqlen_q), (m.seqlen_k, c.seqlen_k)))


def _describe(c: AttentionConfig) -> str:
    return (f"dtype {c.dtype}, head_dim {c.head_dim}, head_dim_v "
            f"{c.head_dim_v}, causal {c.causal}, scale {c.scale!r}")


registry = Registry()


def add_kernel_dir(path: Union[str, os.PathLike]) -> None:
    """Adds a folder of precompiled kernels to search (before compiling).

    Raises TypeError unless ``path`` is a str or os.PathLike, and
    NotADirectoryError unless it names an existing folder (folders from
    ``$FA_OPT_KERNEL_DIRS`` that do not exist are skipped instead)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"add_kernel_dir: path must be a str or os.PathLike, "
                        f"got {type(path).__name__}")
    if not os.path.isdir(path):
        raise NotADirectoryError(
            f"add_kernel_dir: not a folder: {os.fspath(path)!r}")
    registry.add_kernel_dir(os.fspath(path))


def set_shape_policy(policy: str) -> None:
    """``"dynamic"`` (default), ``"static_batch"`` or ``"static"``: which
    dims the compiled kernels fix (see fa_opt.config)."""
    if policy not in SHAPE_POLICIES:
        raise ValueError(f"shape policy must be one of "
                         f"{', '.join(SHAPE_POLICIES)}, but got {policy!r}")
    registry.shape_policy = policy


def set_compile_options(options: Optional[CompileOptions]) -> None:
    """Pipeline options for kernels compiled from now on (the chip is
    always the device's); None for the defaults. Raises TypeError for
    anything but a CompileOptions or None."""
    if options is not None and not isinstance(options, CompileOptions):
        raise TypeError(f"set_compile_options: expected a CompileOptions or "
                        f"None, got {type(options).__name__}")
    registry.options = options
