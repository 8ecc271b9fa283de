"""Reader of the kernel manifests ``fa-opt --fa-to-ptx`` writes
(docs/ARTIFACTS.md): one ``key value...`` pair per line, ``#`` comments,
unknown keys ignored, ``?`` for a dynamic dim.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from .config import AttentionConfig, CAUSAL_KINDS, DTYPES

DYNAMIC = None  # a `?` dim


class ManifestError(ValueError):
    """A malformed manifest; the message names the file and line."""


# The keys a forward manifest must have, as the C++ reader requires them
# (params and grid have its defaults: q k v o [lse], and
# ceil_div(seqlen_q,block_m) batch 1).
_REQUIRED = ("version", "kernel", "ptx", "dtype", "causal", "scale", "batch",
             "seqlen_q", "seqlen_k", "head_dim", "head_dim_v", "has_lse",
             "threads", "block_m")


#: Bytes per element of each manifest dtype.
ELEMENT_SIZES = {"f16": 2, "bf16": 2, "f32": 4}

_TENSOR_MAP_OPERANDS = ("q", "k", "v", "o")
# The operands a backward kernel section may map (version 4).
_BACKWARD_TENSOR_MAP_OPERANDS = ("q", "k", "v", "do", "dq_accum")
_SWIZZLES = {"none": 0, "32": 32, "64": 64, "128": 128}


@dataclass(frozen=True)
class TensorMap:
    """One ``tensor_map OPERAND BOX_COLS BOX_ROWS SWIZZLE`` line: the kernel
    takes a 128-byte CUtensorMap of that operand by value, after its memref
    params (docs/ARTIFACTS.md, "Tensor maps")."""

    operand: str  # q, k, v or o (forward); q, k, v, do or dq_accum (backward)
    box_cols: int  # box extent along D (innermost), elements
    box_rows: int  # box extent along T, rows
    swizzle: int  # bytes: 0 (none), 32, 64 or 128
    line: int = 0  # manifest line, for messages


@dataclass
class Manifest:
    path: str
    kernel: str
    ptx: str  # resolved against the manifest's folder
    version: int
    chip: Optional[str]
    dtype: str
    o_dtype: str
    causal: str
    scale: Optional[float]
    batch: Optional[int]
    batch_shape: List[Optional[int]]
    seqlen_q: Optional[int]
    seqlen_k: Optional[int]
    head_dim: int
    head_dim_v: int
    has_lse: bool
    block_m: int
    block_n: Optional[int]
    threads: int
    shared_bytes: int
    params: List[str]
    grid: Tuple[str, str, str]
    extra: Dict[str, List[str]] = field(default_factory=dict)
    # Extra by-value kernel parameters after params, in manifest order.
    tensor_maps: List[TensorMap] = field(default_factory=list)
    # A backward kernel's view: the element type of `do` (None: forward).
    do_dtype: Optional[str] = None
    # Bits of the kernel's index type (`index_bits`, absent: 64). With 32
    # every memref's offsets must stay below 2^31 elements: the launcher
    # splits the batch (fa_opt.runtime).
    index_bits: int = 64
    _grid_fn: Optional[Callable] = field(default=None, repr=False)

    def accepts(self, batch: int, seqlen_q: int, seqlen_k: int) -> bool:
        """Whether the static dims match these sizes."""
        return all(want is None or want == got for want, got in (
            (self.batch, batch), (self.seqlen_q, seqlen_q),
            (self.seqlen_k, seqlen_k)))

    def grid_for(self, batch: int, seqlen_q: int, seqlen_k: int,
                 resident_blocks: Optional[int] = None):
        """The launch grid, from the manifest's ``grid`` expressions;
        ``resident_blocks`` (the kernel's blocks its device holds at once)
        is the value of that term, needed when :meth:`uses_resident_blocks`
        (ManifestError without it)."""
        if self._grid_fn is None:
            self._grid_fn = compile_grid(self.grid, self)
        return self._grid_fn(batch, seqlen_q, seqlen_k, resident_blocks)

    def uses_resident_blocks(self) -> bool:
        """Whether a grid expression names ``resident_blocks`` (a persistent
        kernel: its launcher queries the occupancy)."""
        return any("resident_blocks" in g for g in self.grid)

    def config(self) -> AttentionConfig:
        """The attention config this kernel implements (scale as printed in
        the manifest: rounded)."""
        return AttentionConfig(dtype=self.dtype, head_dim=self.head_dim,
                               head_dim_v=self.head_dim_v, causal=self.causal,
                               scale=self.scale, batch=self.batch,
                               seqlen_q=self.seqlen_q, seqlen_k=self.seqlen_k,
                               o_dtype=self.o_dtype)


_INTEGER = re.compile(r"-?[0-9]{1,18}")


def _zero_one(text, path, line, key) -> bool:
    """A 0/1 flag as the C++ reader takes it (ManifestError otherwise)."""
    if text not in ("0", "1"):
        raise ManifestError(f"{path}:{line}: invalid value '{text}' for "
                            f"'{key}': expected 0 or 1")
    return text == "1"


def _int(text) -> int:
    """An integer as the C++ runtime reads one: ASCII digits (at most 18,
    so it fits int64), optionally negative here so that range errors can
    quote it; raises ValueError on anything else ('+1', '6_4', '١')."""
    if not isinstance(text, str) or not _INTEGER.fullmatch(text):
        raise ValueError(f"not an integer: {text!r}")
    return int(text)


def _dim(text: str, where: str) -> Optional[int]:
    if text == "?":
        return DYNAMIC
    try:
        value = _int(text)
    except ValueError:
        raise ManifestError(f"{where}: expected a dim (a number or ?), got '{text}'")
    if value < 0:
        raise ManifestError(f"{where}: expected a dim >= 0, got {value}")
    return value


_WORD_SEPARATORS = re.compile(r"[ \t]+")


def _lines(text: str):
    """``(line_number, words)`` of each line with words, split as the C++
    runtime splits them (runtime/lib/Manifest.cpp, forEachLine): lines at
    '\\n' only, '#' starts a comment, one trailing '\\r' dropped, words
    separated by spaces and tabs only. ``str.splitlines``/``str.split``
    would also break at '\\f', '\\v', '\\x85', '\\u2028', a no-break
    space..., accepting manifests the runtime rejects."""
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.split("#", 1)[0]
        if line.endswith("\r"):
            line = line[:-1]
        words = [w for w in _WORD_SEPARATORS.split(line) if w]
        if words:
            yield number, words


def _tensor_map_line(rest: List[str], number: int, where: str,
                     seen: List[TensorMap],
                     operands: Tuple[str, ...] = _TENSOR_MAP_OPERANDS,
                     kernel: str = "") -> TensorMap:
    """The checks of one ``tensor_map`` line that need no other key (the
    C++ runtime's messages, runtime/lib/Manifest.cpp); ``seen``: the
    earlier lines of the same manifest (forward) or of the section of
    backward kernel ``kernel``."""
    if len(rest) != 4:
        raise ManifestError(f"{where}: expected 4 values for 'tensor_map' "
                            f"(OPERAND BOX_COLS BOX_ROWS SWIZZLE), got "
                            f"{len(rest)}")
    operand = rest[0]
    if operand not in operands:
        raise ManifestError(f"{where}: invalid value '{operand}' for "
                            f"'tensor_map' OPERAND: expected "
                            f"{', '.join(operands[:-1])} or {operands[-1]}")
    for other in seen:
        if other.operand == operand:
            in_kernel = f" in kernel '{kernel}'" if kernel else ""
            raise ManifestError(f"{where}: duplicate tensor_map for "
                                f"'{operand}'{in_kernel} (first on line "
                                f"{other.line})")
    boxes = []
    for name, text_value in (("BOX_COLS", rest[1]), ("BOX_ROWS", rest[2])):
        try:
            value = _int(text_value)
        except ValueError:
            value = 0
        if not 1 <= value <= 256:
            raise ManifestError(f"{where}: invalid value '{text_value}' for "
                                f"'tensor_map' {name}: expected an integer "
                                f"in [1, 256]")
        boxes.append(value)
    if rest[3] not in _SWIZZLES:
        raise ManifestError(f"{where}: invalid value '{rest[3]}' for "
                            f"'tensor_map' SWIZZLE: expected none, 32, 64 "
                            f"or 128")
    return TensorMap(operand, boxes[0], boxes[1], _SWIZZLES[rest[3]], number)


def operand_dtype(m: "Manifest", name: str) -> str:
    """The element type of a tensor-map operand: ``o_dtype`` for o,
    ``do_dtype`` for do (backward kernels), f32 for the dq_accum scratch,
    ``dtype`` for q, k, v."""
    if name == "dq_accum":
        return "f32"
    if name == "o":
        return m.o_dtype
    if name == "do":
        return m.do_dtype or m.o_dtype
    return m.dtype


def _check_tensor_maps(m: Manifest, path: str, version_line: int) -> None:
    """The rules between a forward manifest's ``tensor_map`` lines and the
    other keys: version 3 exactly when there are any, then
    :func:`_check_map_order_and_boxes`."""
    if m.version == 1 and m.tensor_maps:
        raise ManifestError(f"{path}:{m.tensor_maps[0].line}: tensor_map "
                            f"needs manifest version 3 (this manifest is "
                            f"version 1)")
    if m.version == 3 and not m.tensor_maps:
        raise ManifestError(f"{path}:{version_line}: manifest version 3 needs "
                            f"at least one 'tensor_map' line (version 1 is "
                            f"the format without tensor maps)")
    _check_map_order_and_boxes(m, path, "params (q, k, v, o)")


def _check_map_order_and_boxes(m: Manifest, path: str,
                               params_what: str) -> None:
    """Each operand in params, the lines in params order (the kernel takes
    the maps in that order), each box against its operand's element type
    and head dim. ``params_what`` names the params in messages."""

    def index(name):
        return m.params.index(name) if name in m.params else len(m.params)

    for tm in m.tensor_maps:
        if tm.operand not in m.params:
            raise ManifestError(f"{path}:{tm.line}: tensor_map for "
                                f"'{tm.operand}', which is not in "
                                f"{params_what}")
    for prev, tm in zip(m.tensor_maps, m.tensor_maps[1:]):
        if index(tm.operand) < index(prev.operand):
            raise ManifestError(f"{path}:{tm.line}: tensor_map for "
                                f"'{tm.operand}' after the one for "
                                f"'{prev.operand}' (line {prev.line}): "
                                f"tensor_map lines must be in the order of "
                                f"{params_what}")
    for tm in m.tensor_maps:
        where, name = f"{path}:{tm.line}", tm.operand
        dtype = operand_dtype(m, name)
        esize = ELEMENT_SIZES[dtype]
        row_bytes = tm.box_cols * esize
        box_text = (f"BOX_COLS {tm.box_cols} x {esize} bytes ({dtype}) = "
                    f"{row_bytes} bytes")
        if row_bytes % 16:
            raise ManifestError(f"{where}: tensor_map '{name}': {box_text} is "
                                f"not a multiple of 16 bytes")
        key = "head_dim_v" if name in ("v", "o", "do") else "head_dim"
        if tm.box_cols > getattr(m, key):
            raise ManifestError(f"{where}: tensor_map '{name}': BOX_COLS "
                                f"{tm.box_cols} exceeds {key} "
                                f"{getattr(m, key)}")
        if tm.swizzle and row_bytes > tm.swizzle:
            raise ManifestError(f"{where}: tensor_map '{name}': {box_text} "
                                f"exceeds the {tm.swizzle}-byte swizzle span")


_KNOWN_VERSIONS = ("(this reader knows 1 and 3 forward and 2 and 4 "
                   "attention_backward manifests)")


def parse_manifest(text: str, path: str = "<manifest>") -> Manifest:
    """Parses manifest text; ``path`` locates the PTX and prefixes errors."""
    values: Dict[str, List[str]] = {}
    lines: Dict[str, int] = {}
    tensor_maps: List[TensorMap] = []
    for number, (key, *rest) in _lines(text):
        if key == "tensor_map":  # one line per map
            tensor_maps.append(_tensor_map_line(rest, number,
                                                f"{path}:{number}",
                                                tensor_maps))
            continue
        # A backward manifest with a forward version (before its repeated
        # 'kernel' keys get a less helpful message); the C++ reader's words.
        if key == "op" and rest == ["attention_backward"]:
            raise ManifestError(
                f"{path}:{number}: 'op attention_backward' needs manifest "
                f"version 2 or 4 (the backward format); versions 1 and 3 are "
                f"forward manifests, which have no 'op' key")
        if key in values:
            raise ManifestError(f"{path}:{number}: duplicate key '{key}'")
        values[key] = rest
        lines[key] = number
    for key in _REQUIRED:
        if key not in values:
            raise ManifestError(f"{path}: missing required key '{key}'")

    def where(key):
        return f"{path}:{lines.get(key, 0)}"

    def one(key, default=None):
        if key not in values:
            if default is not None:
                return default
            raise ManifestError(f"{path}: missing required key '{key}'")
        if len(values[key]) != 1:
            raise ManifestError(f"{where(key)}: expected one value for '{key}', "
                                f"got {len(values[key])}")
        return values[key][0]

    def integer(key, default=None):
        text_value = one(key, None if default is None else str(default))
        try:
            return _int(text_value)
        except ValueError:
            raise ManifestError(f"{where(key)}: expected an integer for '{key}', "
                                f"got '{text_value}'")

    version = integer("version")
    # 1: no tensor maps; 3: the same with tensor_map lines, so that a reader
    # that predates them (and ignores unknown keys) rejects a TMA kernel
    # instead of launching it without its maps.
    if version not in (1, 3):
        raise ManifestError(f"{where('version')}: unsupported manifest version "
                            f"{version} {_KNOWN_VERSIONS}")
    dtype = one("dtype")
    o_dtype = one("o_dtype", dtype)
    for key, value in (("dtype", dtype), ("o_dtype", o_dtype)):
        if value not in DTYPES:
            raise ManifestError(f"{where(key)}: unknown {key} '{value}'")
    causal = one("causal", "none")
    if causal not in CAUSAL_KINDS:
        raise ManifestError(f"{where('causal')}: unknown causal '{causal}'")
    scale = None
    if "scale" in values:
        try:
            scale = float(one("scale"))
        except ValueError:
            raise ManifestError(f"{where('scale')}: expected a number for 'scale'")
    grid = values.get("grid", ["ceil_div(seqlen_q,block_m)", "batch", "1"])
    if len(grid) != 3:
        raise ManifestError(f"{where('grid')}: expected 3 grid expressions, "
                            f"got {len(grid)}")
    ptx = one("ptx")
    if not os.path.isabs(ptx):
        ptx = os.path.join(os.path.dirname(os.path.abspath(path)), ptx)
    known = {"version", "kernel", "ptx", "chip", "dtype", "o_dtype", "causal",
             "scale", "batch", "batch_shape", "seqlen_q", "seqlen_k",
             "head_dim", "head_dim_v", "has_lse", "block_m", "block_n",
             "threads", "shared_bytes", "params", "grid", "index_bits"}
    index_bits = _index_bits(one("index_bits", "64"), where("index_bits"))
    has_lse = _zero_one(one("has_lse"), path, lines.get("has_lse", 0),
                        "has_lse")
    params = values.get("params", ["q", "k", "v", "o"] +
                        (["lse"] if has_lse else []))
    manifest = Manifest(
        path=path, kernel=one("kernel"), ptx=ptx, version=version,
        chip=values.get("chip", [None])[0], dtype=dtype, o_dtype=o_dtype,
        causal=causal, scale=scale,
        batch=_dim(one("batch", "?"), where("batch")),
        batch_shape=[_dim(t, where("batch_shape"))
                     for t in values.get("batch_shape", [])],
        seqlen_q=_dim(one("seqlen_q", "?"), where("seqlen_q")),
        seqlen_k=_dim(one("seqlen_k", "?"), where("seqlen_k")),
        head_dim=integer("head_dim"), head_dim_v=integer("head_dim_v"),
        has_lse=has_lse, block_m=integer("block_m"),
        block_n=integer("block_n") if "block_n" in values else None,
        threads=integer("threads"), shared_bytes=integer("shared_bytes", 0),
        params=list(params), grid=(grid[0], grid[1], grid[2]),
        extra={k: v for k, v in values.items() if k not in known},
        tensor_maps=tensor_maps, index_bits=index_bits)
    _check_ranges(manifest, path)
    if manifest.block_m < 1:
        raise ManifestError(f"{where('block_m')}: expected a positive integer "
                            f"for 'block_m', got {manifest.block_m}")
    expected = ["q", "k", "v", "o"] + (["lse"] if manifest.has_lse else [])
    if manifest.params != expected:
        raise ManifestError(f"{where('params')}: expected params "
                            f"'{' '.join(expected)}' (has_lse "
                            f"{int(manifest.has_lse)}), got "
                            f"'{' '.join(manifest.params)}'")
    _check_tensor_maps(manifest, path, lines.get("version", 0))
    compile_grid(manifest.grid, manifest)  # reject bad expressions early
    return manifest


def _index_bits(text: str, where: str) -> int:
    """An ``index_bits`` value: exactly ``32`` or ``64``, as the C++ runtime
    reads it."""
    if text not in ("32", "64"):
        raise ManifestError(f"{where}: expected 32 or 64 for 'index_bits', "
                            f"got {text}")
    return int(text)


def _check_ranges(m: Manifest, where: str) -> None:
    """The value ranges the C++ runtime enforces (runtime/lib/Manifest.cpp):
    positive head dims and threads (at most 1024), non-negative block and
    workgroup-memory sizes, a finite scale."""
    for key in ("head_dim", "head_dim_v", "threads"):
        if getattr(m, key) < 1:
            raise ManifestError(f"{where}: expected a positive integer for "
                                f"'{key}', got {getattr(m, key)}")
    if m.threads > 1024:
        raise ManifestError(f"{where}: expected at most 1024 threads, got "
                            f"{m.threads}")
    for key in ("block_m", "block_n", "shared_bytes"):
        value = getattr(m, key)
        if value is not None and value < 0:
            raise ManifestError(f"{where}: expected a non-negative integer "
                                f"for '{key}', got {value}")
    if m.scale is not None and not math.isfinite(m.scale):
        raise ManifestError(f"{where}: expected a finite number for 'scale', "
                            f"got {m.scale}")


def read_manifest(path: str) -> Manifest:
    with open(path, "r", encoding="utf-8", newline="") as f:
        return parse_manifest(f.read(), path)


# --- backward manifests (versions 2 and 4) -------------------------------------
#
# `version 2` + `op attention_backward`: a header (the op's dtypes, causal,
# scale, dims), one `scratch NAME DTYPE DIM...` line per scratch buffer, then
# one section per kernel in launch order, each opened by its `kernel` line
# (kernel, threads, block_m, block_n, shared_bytes, params, grid). All
# kernels live in the one PTX file the header names. `version 4` is the same
# with `tensor_map OPERAND BOX_COLS BOX_ROWS SWIZZLE` lines in kernel
# sections (OPERAND q, k, v, do or dq_accum, in the section's params
# order): that kernel takes one CUtensorMap per line by value after its
# memref params.

# The one declaration each named scratch buffer may have (DTYPE DIM...).
_SCRATCH_DECLARATIONS = {
    "delta": ["f32", "batch", "seqlen_q"],
    "dq_accum": ["f32", "batch", "seqlen_q", "head_dim"]}

# The header keys a backward manifest may carry (others are for newer
# readers, skipped), as the C++ runtime reads them.
# The sizes a scratch buffer's dims after the first (batch) may name.
_SCRATCH_SIZES = ("seqlen_q", "seqlen_k", "head_dim", "head_dim_v")

# The op's tensors a backward kernel may take by name (else a scratch).
_BWD_TENSORS = ("q", "k", "v", "o", "do", "lse", "dq", "dk", "dv")

_BWD_HEADER_REQUIRED = ("version", "op", "name", "ptx", "dtype", "causal",
                        "scale", "batch", "seqlen_q", "seqlen_k", "head_dim",
                        "head_dim_v")
_BWD_HEADER_KEYS = _BWD_HEADER_REQUIRED + (
    "causal", "scale", "batch", "seqlen_q", "seqlen_k", "chip", "o_dtype",
    "do_dtype", "dq_dtype", "dk_dtype", "dv_dtype", "batch_shape",
    "deterministic", "row_align", "index_bits")
_SECTION_KEYS = ("kernel", "threads", "block_m", "block_n", "shared_bytes",
                 "params", "grid")


@dataclass
class Scratch:
    name: str
    dtype: str
    dims: List[str]  # size names (batch, seqlen_q, ...) or integers


@dataclass
class BackwardManifest:
    path: str
    name: str
    ptx: str
    version: int
    chip: Optional[str]
    dtype: str
    o_dtype: str
    do_dtype: str
    dq_dtype: str
    dk_dtype: str
    dv_dtype: str
    causal: str
    scale: Optional[float]
    batch: Optional[int]
    seqlen_q: Optional[int]
    seqlen_k: Optional[int]
    head_dim: int
    head_dim_v: int
    deterministic: bool
    scratch: List[Scratch]
    kernels: List[Manifest]  # launch order; each a forward-style view
    # Bits of the kernels' index type (header `index_bits`, absent: 64);
    # every kernel view carries the same value.
    index_bits: int = 64

    def accepts(self, batch: int, seqlen_q: int, seqlen_k: int) -> bool:
        return all(want is None or want == got for want, got in (
            (self.batch, batch), (self.seqlen_q, seqlen_q),
            (self.seqlen_k, seqlen_k)))


def parse_backward_manifest(text: str, path: str = "<manifest>"
                            ) -> BackwardManifest:
    header: Dict[str, List[str]] = {}
    header_lines: Dict[str, int] = {}
    scratch: List[Scratch] = []
    sections: List[Dict[str, List[str]]] = []
    section_maps: List[List[TensorMap]] = []  # per section, line order
    for number, (key, *rest) in _lines(text):
        where = f"{path}:{number}"
        if key == "kernel":
            sections.append({})
            section_maps.append([])
        if key == "tensor_map":  # version 4: one line per map, in a section
            if not sections:
                raise ManifestError(f"{where}: 'tensor_map' outside a kernel "
                                    f"section (a tensor map belongs to the "
                                    f"kernel that takes it: after its "
                                    f"'params' line)")
            section_maps[-1].append(_tensor_map_line(
                rest, number, where, section_maps[-1],
                _BACKWARD_TENSOR_MAP_OPERANDS,
                sections[-1]["kernel"][0] if sections[-1].get("kernel")
                else "?"))
            continue
        if sections and key in _SECTION_KEYS:
            if key in sections[-1]:
                raise ManifestError(f"{where}: duplicate key '{key}' in the "
                                    f"section of kernel {sections[-1]['kernel'][0]}")
            sections[-1][key] = rest
        elif key == "scratch":
            if sections:
                raise ManifestError(f"{where}: 'scratch' after the first "
                                    f"kernel section")
            if len(rest) < 2:
                raise ManifestError(f"{where}: expected 'scratch NAME DTYPE "
                                    f"DIM...', got '{' '.join([key, *rest])}'")
            if rest[1] not in DTYPES:
                raise ManifestError(f"{where}: unknown scratch dtype '{rest[1]}'")
            # Launches of batch chunks take each scratch buffer's rows of
            # their batches (fa_opt.runtime): batch first, and only there;
            # the C++ reader's rules in its order, with its messages.
            for i, dim in enumerate(rest[2:]):
                if i == 0 and dim != "batch":
                    raise ManifestError(
                        f"{where}: invalid value '{dim}' for 'scratch': "
                        f"expected batch (a scratch buffer's first dim)")
                if i > 0 and dim not in _SCRATCH_SIZES and \
                        not dim.isdigit():
                    raise ManifestError(
                        f"{where}: invalid value '{dim}' for 'scratch': "
                        f"expected seqlen_q, seqlen_k, head_dim, head_dim_v "
                        f"or an integer")
            if len(rest) < 3:
                raise ManifestError(f"{where}: scratch buffer '{rest[0]}' "
                                    f"has no dims (expected batch first)")
            if any(other.name == rest[0] for other in scratch):
                raise ManifestError(f"{where}: duplicate scratch buffer "
                                    f"'{rest[0]}'")
            if rest[0] in _BWD_TENSORS:
                raise ManifestError(f"{where}: scratch buffer '{rest[0]}' "
                                    f"shadows an operand of the op")
            # delta and dq_accum have one shape the kernels take them in
            # (their memref params and dq_accum's tensor map).
            want = _SCRATCH_DECLARATIONS.get(rest[0])
            if want and rest[1:] != want:
                raise ManifestError(
                    f"{where}: scratch buffer '{rest[0]}' must be "
                    f"'{' '.join(want)}' (the shape its kernels take), got "
                    f"'{' '.join(rest[1:])}'")
            scratch.append(Scratch(rest[0], rest[1], rest[2:]))
        else:
            if key not in _BWD_HEADER_KEYS:
                continue  # unknown keys are for newer readers
            if sections:
                raise ManifestError(f"{where}: header key '{key}' after the "
                                    f"first kernel section")
            if key in header:
                raise ManifestError(f"{where}: duplicate key '{key}' (first "
                                    f"on line {header_lines[key]})")
            if key != "batch_shape" and len(rest) != 1:
                raise ManifestError(f"{where}: expected 1 value for '{key}', "
                                    f"got {len(rest)}")
            header[key] = rest
            header_lines[key] = number
    for key in _BWD_HEADER_REQUIRED:
        if key not in header:
            raise ManifestError(f"{path}: missing required key '{key}'")
    if header["op"] != ["attention_backward"]:
        raise ManifestError(f"{path}: unknown op '{' '.join(header['op'])}'")
    if not sections:
        raise ManifestError(f"{path}: no kernel section")

    def one(d, key, default=None):
        if key not in d:
            return default
        return d[key][0] if d[key] else default

    def dtype_of(key, default):
        value = one(header, key, default)
        if value not in DTYPES:
            raise ManifestError(f"{path}: unknown {key} '{value}'")
        return value

    dtype = dtype_of("dtype", None)
    ptx = one(header, "ptx")
    if not os.path.isabs(ptx):
        ptx = os.path.join(os.path.dirname(os.path.abspath(path)), ptx)
    causal = one(header, "causal", "none")
    if causal not in CAUSAL_KINDS:
        raise ManifestError(f"{path}: unknown causal '{causal}'")
    try:
        batch = _dim(one(header, "batch", "?"), path)
        seqlen_q = _dim(one(header, "seqlen_q", "?"), path)
        seqlen_k = _dim(one(header, "seqlen_k", "?"), path)
        head_dim, head_dim_v = _int(one(header, "head_dim")), \
            _int(one(header, "head_dim_v"))
        scale = float(one(header, "scale")) if "scale" in header else None
        version = _int(one(header, "version"))
    except (TypeError, ValueError):
        raise ManifestError(f"{path}: malformed header value")
    version_where = f"{path}:{header_lines['version']}"
    # 2: no tensor maps; 4: the same with tensor_map lines in kernel
    # sections, so that a reader that predates them rejects the manifest
    # instead of launching the kernels without their maps.
    if version not in (2, 4):
        raise ManifestError(f"{version_where}: unsupported backward manifest "
                            f"version {version} {_KNOWN_VERSIONS}")
    all_maps = [tm for maps in section_maps for tm in maps]
    if version == 2 and all_maps:
        raise ManifestError(f"{path}:{all_maps[0].line}: tensor_map needs "
                            f"manifest version 4 (this backward manifest is "
                            f"version 2)")
    if version == 4 and not all_maps:
        raise ManifestError(f"{version_where}: backward manifest version 4 "
                            f"needs at least one 'tensor_map' line in a kernel "
                            f"section (version 2 is the format without "
                            f"tensor maps)")
    o_dtype = dtype_of("o_dtype", dtype)
    do_dtype = dtype_of("do_dtype", o_dtype)
    index_bits = _index_bits(one(header, "index_bits", "64"),
                             f"{path}:{header_lines.get('index_bits', 0)}")
    kernels = []
    for sec, maps in zip(sections, section_maps):
        name = one(sec, "kernel")
        for key in ("threads", "params", "grid"):
            if key not in sec:
                raise ManifestError(f"{path}: kernel {name}: missing '{key}'")
        if len(sec["grid"]) != 3:
            raise ManifestError(f"{path}: kernel {name}: expected 3 grid "
                                f"expressions, got {len(sec['grid'])}")
        try:
            m = Manifest(
                path=path, kernel=name, ptx=ptx, version=version,
                chip=one(header, "chip"), dtype=dtype, o_dtype=o_dtype,
                causal=causal, scale=scale, batch=batch, batch_shape=[],
                seqlen_q=seqlen_q, seqlen_k=seqlen_k, head_dim=head_dim,
                head_dim_v=head_dim_v, has_lse="lse" in sec["params"],
                block_m=_int(one(sec, "block_m", "0")),
                block_n=_int(one(sec, "block_n", "0")) or None,
                threads=_int(one(sec, "threads")),
                shared_bytes=_int(one(sec, "shared_bytes", "0")),
                params=list(sec["params"]), grid=tuple(sec["grid"]),
                tensor_maps=maps, do_dtype=do_dtype, index_bits=index_bits)
        except ValueError:
            raise ManifestError(f"{path}: kernel {name}: malformed number")
        for param in m.params:
            if param not in _BWD_TENSORS and \
                    not any(b.name == param for b in scratch):
                raise ManifestError(
                    f"{path}: kernel '{name}' takes '{param}', which is "
                    f"neither an operand, a result nor a scratch buffer of "
                    f"the manifest")
        _check_ranges(m, f"{path}: kernel {name}")
        _check_map_order_and_boxes(m, path,
                                   f"the params of kernel '{name}'")
        compile_grid(m.grid, m)
        kernels.append(m)
    return BackwardManifest(
        path=path, name=one(header, "name"), ptx=ptx, version=version,
        chip=one(header, "chip"), dtype=dtype, o_dtype=o_dtype,
        do_dtype=do_dtype,
        dq_dtype=dtype_of("dq_dtype", dtype),
        dk_dtype=dtype_of("dk_dtype", dtype),
        dv_dtype=dtype_of("dv_dtype", dtype), causal=causal, scale=scale,
        batch=batch, seqlen_q=seqlen_q, seqlen_k=seqlen_k, head_dim=head_dim,
        head_dim_v=head_dim_v,
        deterministic=_zero_one(one(header, "deterministic", "0"),
                                path, header_lines.get("deterministic", 0),
                                "deterministic"),
        scratch=scratch, kernels=kernels, index_bits=index_bits)


def parse_any_manifest(text: str, path: str = "<manifest>"):
    """A :class:`Manifest` (version 1 or 3, one forward kernel) or a
    :class:`BackwardManifest` (version 2, or 4 with tensor maps;
    ``op attention_backward``). A version 2 or 4 manifest, or one that
    says ``op attention_backward`` with a version other than 1 and 3, goes
    to the backward reader (whose errors then name the backward format)."""
    version = op = None
    for _, line in _lines(text):
        if line[0] == "version" and version is None:
            version = line[1:]
        if line[0] == "op" and op is None:
            op = line[1:]
    if version in (["2"], ["4"]) or (op == ["attention_backward"]
                                     and version not in (["1"], ["3"])):
        return parse_backward_manifest(text, path)
    return parse_manifest(text, path)


def read_any_manifest(path: str):
    with open(path, "r", encoding="utf-8", newline="") as f:
        return parse_any_manifest(f.read(), path)


# --- grid expressions -------------------------------------------------------
#
# A grid entry is an integer, a size name (batch, seqlen_q, seqlen_k, a
# manifest integer such as block_m, or resident_blocks: the kernel's blocks
# its device holds at once) or f(a,b) of two grid entries, f one of
# ceil_div, min and mul: the C++ reader's grammar (runtime/lib/Manifest.cpp).

_TOKEN = re.compile(r"\s*(?:([0-9]+)|([A-Za-z_][A-Za-z0-9_]*)|(.))")
_SIZES = ("batch", "seqlen_q", "seqlen_k", "resident_blocks")
_FUNCTIONS = ("ceil_div", "min", "mul")


# The manifest's own values a grid expression may name (besides the sizes
# of _SIZES), as the C++ reader takes them.
_GRID_NAMES = ("block_m", "block_n", "threads", "head_dim", "head_dim_v")


def _parse_expr(text: str, manifest) -> Callable:
    tokens = [m.groups() for m in _TOKEN.finditer(text) if m.group(0).strip()]
    pos = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else (None, None, None)

    def expect(punct, what):
        nonlocal pos
        if peek()[2] != punct:
            raise ManifestError(f"grid '{text}': expected '{punct}' {what}")
        pos += 1

    def term(depth=0):
        nonlocal pos
        if depth > 16:
            raise ManifestError(f"grid '{text}': nested too deeply")
        number, name, punct = peek()
        pos += 1
        if number is not None:
            try:
                value = _int(number)
            except ValueError:
                raise ManifestError(f"grid '{text}': '{number}' is not an "
                                    f"integer of at most 18 digits")
            return lambda s: value
        if name in _FUNCTIONS:
            expect("(", f"after {name}")
            a = term(depth + 1)
            expect(",", f"in {name}")
            b = term(depth + 1)
            expect(")", f"after the arguments of {name}")
            if name == "min":
                return lambda s: min(a(s), b(s))
            if name == "mul":
                def mul(s):
                    value = a(s) * b(s)
                    if value > 2**62:
                        raise ManifestError(f"{manifest.path}: grid "
                                            f"expression '{text}': product "
                                            f"over 2^62")
                    return value
                return mul

            def ceil_div(s):
                den = b(s)
                if den <= 0:
                    raise ManifestError(f"{manifest.path}: grid expression "
                                        f"'{text}' divides by {den}")
                return -(-a(s) // den)
            return ceil_div
        if name in _SIZES:
            index = _SIZES.index(name)

            def size(s):
                if s[index] is None:
                    raise ManifestError(
                        f"{manifest.path}: grid expression '{text}' names "
                        f"{name}, which the launcher did not give")
                return s[index]
            return size
        if name is not None and name not in _GRID_NAMES:
            raise ManifestError(f"grid '{text}': unknown name '{name}' "
                                f"(expected an integer, a size name (batch, "
                                f"seqlen_q, seqlen_k, block_m, block_n, "
                                f"threads, head_dim, head_dim_v, "
                                f"resident_blocks) or ceil_div(a,b), "
                                f"min(a,b) or mul(a,b) of such)")
        if name is not None:
            value = getattr(manifest, name, None)
            if value is None:
                value = manifest.extra.get(name, [None])[0]
            try:
                value = value if isinstance(value, int) else _int(value)
            except (TypeError, ValueError):
                raise ManifestError(f"grid '{text}': unknown name '{name}'")
            return lambda s: value
        raise ManifestError(f"grid '{text}': unexpected '{punct}'")

    fn = term()
    if pos != len(tokens):
        raise ManifestError(f"grid '{text}': unexpected trailing text")
    return fn


def compile_grid(grid, manifest) -> Callable:
    """The grid of ``manifest`` as a function of (batch, seqlen_q, seqlen_k,
    resident_blocks=None); raises ManifestError on a malformed expression
    (and, when called, on a division by zero or a missing resident_blocks)."""
    fns = [_parse_expr(g, manifest) for g in grid]
    return lambda batch, seqlen_q, seqlen_k, resident_blocks=None: tuple(
        f((batch, seqlen_q, seqlen_k, resident_blocks)) for f in fns)
