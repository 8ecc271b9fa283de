"""What a kernel is compiled for: the attention configuration and the
pipeline options.

An :class:`AttentionConfig` names everything about one ``fa.attention`` that
changes the generated code: element types, head dims, causal alignment,
scale and which of batch / seqlen_q / seqlen_k are static (a number) or
dynamic (``None``, ``?`` in the IR and the manifest). A *shape policy* maps a
concrete call to a config, i.e. decides the shape bucket:

* ``"dynamic"`` (default): batch, seqlen_q and seqlen_k dynamic -- one
  kernel per (dtype, head dims, causal, scale), never recompiled for a new
  shape;
* ``"static_batch"``: batch * heads static, seqlens dynamic;
* ``"static"``: every dim static (one kernel per shape).

:class:`CompileOptions` are the ``fa-to-ptx`` pipeline options.
"""

from __future__ import annotations

import math
import numbers
import re
import struct
from dataclasses import asdict, dataclass, field, replace
from typing import Optional, Union

#: Element types of q/k/v/o, spelled as in the IR and the manifest.
DTYPES = ("f16", "bf16", "f32")
#: Causal alignments (docs/ARTIFACTS.md, FAOps.td).
CAUSAL_KINDS = ("none", "top_left", "bottom_right")
#: Chips the fa-to-ptx pipeline compiles for (``python -m fa_opt compile
#: --chip`` accepts these); kChips of lib/Pipelines/FAToPTX.cpp.
SUPPORTED_CHIPS = ("sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_87",
                   "sm_89", "sm_90", "sm_90a")
#: Shape policies (see the module docstring).
SHAPE_POLICIES = ("dynamic", "static_batch", "static")

#: torch dtype (by its str()) -> IR element type.
TORCH_DTYPE_NAMES = {
    "torch.float16": "f16",
    "torch.bfloat16": "bf16",
    "torch.float32": "f32",
}


def normalize_causal(causal) -> str:
    """``True`` -> ``"top_left"`` (PyTorch's ``is_causal``), ``False``/``None``
    -> ``"none"``; a string must be one of :data:`CAUSAL_KINDS`."""
    if causal is True:
        return "top_left"
    if causal is False or causal is None:
        return "none"
    if isinstance(causal, str) and causal in CAUSAL_KINDS:
        return causal
    raise ValueError(
        "causal must be a bool or one of 'none', 'top_left', 'bottom_right', "
        f"but got {causal!r}")


def default_scale(head_dim: int) -> float:
    """``1 / sqrt(head_dim)``, the scale of ``fa.attention`` and of SDPA."""
    return 1.0 / math.sqrt(head_dim)


def scale_problem(scale: float) -> Optional[str]:
    """What is wrong with the float ``scale`` ("must be ..."), or None: it
    must be finite and positive, and stay finite and non-zero in f32
    (about 1.4e-45 to 3.4e+38), where the kernels compute the scores (the
    rule of ``fa.attention``'s verifier, FAOps.td)."""
    if not math.isfinite(scale) or scale <= 0.0:
        return "must be finite and positive"
    try:
        as_f32 = struct.unpack("f", struct.pack("f", scale))[0]
    except OverflowError:
        as_f32 = math.inf
    if not math.isfinite(as_f32) or as_f32 == 0.0:
        return "must be representable in f32 (about 1.4e-45 to 3.4e+38)"
    return None


def check_scale(scale: float) -> float:
    """``scale`` as a float; TypeError for a bool or a non-number,
    ValueError when ``scale_problem`` finds one."""
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise TypeError(f"scale must be a real number, got {scale!r}")
    scale = float(scale)
    problem = scale_problem(scale)
    if problem:
        raise ValueError(f"scale {problem}, but got {scale!r}")
    return scale


def _check_dim(name: str, value, allow_none: bool) -> Optional[int]:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int{' or None' if allow_none else ''}, "
                        f"but got {value!r}")
    if value < 0 or (value == 0 and not allow_none):
        raise ValueError(f"{name} must be {'>= 0' if allow_none else '> 0'}, "
                         f"but got {value}")
    return value


@dataclass(frozen=True)
class AttentionConfig:
    """One ``fa.attention`` (forward, with lse) and its backward.

    Tensors are rank 3 at the kernel level, ``[batch, T, D]``: batch is the
    product of all leading dims (``B * H`` for ``[B, H, T, D]``).
    """

    dtype: str
    head_dim: int
    head_dim_v: Optional[int] = None  # None: head_dim
    causal: str = "none"
    scale: Optional[float] = None  # None: 1/sqrt(head_dim)
    batch: Optional[int] = None  # None: dynamic
    seqlen_q: Optional[int] = None
    seqlen_k: Optional[int] = None
    o_dtype: Optional[str] = None  # None: dtype

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, "
                             f"but got {self.dtype!r}")
        _check_dim("head_dim", self.head_dim, allow_none=False)
        if self.head_dim_v is None:
            object.__setattr__(self, "head_dim_v", self.head_dim)
        _check_dim("head_dim_v", self.head_dim_v, allow_none=False)
        object.__setattr__(self, "causal", normalize_causal(self.causal))
        scale = default_scale(self.head_dim) if self.scale is None else self.scale
        object.__setattr__(self, "scale", check_scale(scale))
        for name in ("batch", "seqlen_q", "seqlen_k"):
            _check_dim(name, getattr(self, name), allow_none=True)
        if self.o_dtype is None:
            object.__setattr__(self, "o_dtype", self.dtype)
        if self.o_dtype not in (self.dtype, "f32"):
            raise ValueError(f"o_dtype must be the input dtype or f32, "
                             f"but got {self.o_dtype!r}")

    @classmethod
    def for_call(cls, dtype: str, batch: int, seqlen_q: int, seqlen_k: int,
                 head_dim: int, head_dim_v: int, causal, scale,
                 policy: str = "dynamic") -> "AttentionConfig":
        """The config a call with these sizes compiles under ``policy``."""
        if policy not in SHAPE_POLICIES:
            raise ValueError(f"shape policy must be one of "
                             f"{', '.join(SHAPE_POLICIES)}, but got {policy!r}")
        static_batch = policy in ("static_batch", "static")
        static_seq = policy == "static"
        return cls(dtype=dtype, head_dim=head_dim, head_dim_v=head_dim_v,
                   causal=causal, scale=scale,
                   batch=batch if static_batch else None,
                   seqlen_q=seqlen_q if static_seq else None,
                   seqlen_k=seqlen_k if static_seq else None)

    def to_dict(self) -> dict:
        return asdict(self)

    def accepts(self, batch: int, seqlen_q: int, seqlen_k: int) -> bool:
        """Whether a kernel compiled for this config runs these sizes."""
        return all(want is None or want == got for want, got in (
            (self.batch, batch), (self.seqlen_q, seqlen_q),
            (self.seqlen_k, seqlen_k)))

    def short_name(self) -> str:
        """A readable, symbol-safe name (the hash in the kernel name makes it
        unique)."""
        name = f"{self.dtype}_d{self.head_dim}"
        if self.head_dim_v != self.head_dim:
            name += f"_dv{self.head_dim_v}"
        return name + f"_{self.causal}"


# fa-to-ptx options that a CompileOptions field sets (or that the compile
# driver does), by key: the field's name, or None for the driver's.
OPTION_FIELDS = {
    "chip": "chip", "block-m": "block_m", "block-n": "block_n",
    "features": "features", "tma": "tma", "producer-warp": "producer_warp",
    "tiles-per-block": "tiles_per_block", "dq-atomics": "dq_atomics",
    "backward-producer-warp": "backward_producer_warp",
    "deterministic": "deterministic", "index-bitwidth": "index_bitwidth",
    "output-dir": None}

_CHIP = re.compile(r"sm_[0-9]+[a-z]?")
_FEATURES = re.compile(r"[+-]?[A-Za-z0-9_.]+(?:,[+-]?[A-Za-z0-9_.]+)*")
_OPTION = re.compile(r"([a-z][a-z0-9]*(?:-[a-z0-9]+)*)=([^\s'\"{}]+)")


def option_key(text: str) -> str:
    """The key of a ``key=value`` fa-to-ptx option; ValueError unless the key
    is lower-case words joined by '-' and the value is non-empty without
    spaces, quotes or braces (it goes inside ``--fa-to-ptx="..."``)."""
    match = _OPTION.fullmatch(text)
    if not match:
        raise ValueError(f"expected KEY=VALUE (a fa-to-ptx option), got "
                         f"{text!r}")
    return match.group(1)


@dataclass(frozen=True)
class CompileOptions:
    """Options of the ``fa-to-ptx`` pipeline; ``None`` keeps the pipeline's
    default (and is left out of the command line)."""

    chip: str = "sm_90a"
    block_m: Optional[int] = None
    block_n: Optional[int] = None
    features: Optional[str] = None
    # The sm_90a wgmma forward's Q/K/V loads by TMA (`tma=true|false`); None
    # keeps fa-to-ptx's default.
    tma: Optional[bool] = None
    # The sm_90a TMA wgmma forward's producer warpgroup
    # (`producer-warp=true|false`); None keeps fa-to-ptx's default.
    producer_warp: Optional[bool] = None
    # The sm_90a TMA wgmma forward's query tiles per GPU block
    # (`tiles-per-block=0|1|2`): 2 computes two tiles per block, the second
    # tile's loads overlapping the first's end; 0 is fa-to-ptx's default
    # (2 for the head-dim-128 producer kernels, else 1; fa-to-ptx's default
    # `persistent=auto` makes the head-dim-128 ones persistent instead,
    # extra=("persistent=false",) keeps two); None keeps it. 2 with
    # producer_warp=False is a ValueError.
    tiles_per_block: Optional[int] = None
    # The sm_90a wgmma backward's dq through f32 atomics in _dkdv
    # (`dq-atomics=true|false`; fa-to-ptx's default true applies it where
    # the kernels support it, head dim 64 or 128); None keeps the default.
    dq_atomics: Optional[bool] = None
    # The sm_90a TMA wgmma backward's producer warpgroup in _dkdv
    # (`backward-producer-warp=true|false|auto`): True, False or "auto"
    # (fa-to-ptx's default: head dim 128 without a mask or with a top-left
    # causal one, where it was measured faster); None keeps the default. True needs the
    # dq-atomics backward (a ValueError with deterministic=True).
    backward_producer_warp: Optional[Union[bool, str]] = None
    # The backward's dq in a separate kernel over query blocks, bitwise
    # reproducible (`deterministic=true|false`); None keeps fa-to-ptx's
    # default (false). fa_opt.attention's backward asks for it by itself
    # under torch.use_deterministic_algorithms(True).
    deterministic: Optional[bool] = None
    # Bits of the sm_90a TMA kernels' index type (`index-bitwidth=0|32|64`):
    # 32 makes their offsets 32-bit (tensors of 2^31 elements or more are
    # launched in batch chunks by fa_opt.runtime); 0 is fa-to-ptx's default
    # (32 for the forward at D = Dv = 128 and at D = Dv = 64 with a causal
    # mask, and for every TMA backward); None keeps it.
    index_bitwidth: Optional[int] = None
    # Further fa-to-ptx options, "key=value" strings added to the pipeline:
    # a tuple (or list) of strings whose key is lower-case words joined by
    # '-' and whose value has no space or quote (ValueError), each key at
    # most once and none that a field above sets (ValueError: use the
    # field); anything else but strings is a TypeError. Stored sorted by
    # key (fa-to-ptx's options do not depend on their order), so equal
    # option sets compare equal and share one cache key.
    extra: tuple = field(default=())
    # A second forward kernel for short key sequences, compiled next to the
    # default one and launched when seqlen_k <= SHORT_FORWARD_MAX_SEQLEN_K
    # (see short_forward_options: where it applies and what it is). A
    # choice of the compile driver (fa_opt), not an fa-to-ptx option: True
    # adds it where it applies, False never.
    short_forward: bool = True

    def __post_init__(self):
        self._check_extra()
        if not isinstance(self.short_forward, bool):
            raise TypeError("short_forward must be True or False, got "
                            f"{self.short_forward!r}")
        # chip and features go into --fa-to-ptx="..." as they are: one word
        # each, so that neither can carry further options.
        if not isinstance(self.chip, str) or not _CHIP.fullmatch(self.chip):
            raise ValueError("chip must be a CUDA architecture name such as "
                             f"'sm_90a' or 'sm_80', got {self.chip!r}")
        if self.features is not None and (
                not isinstance(self.features, str)
                or not _FEATURES.fullmatch(self.features)):
            raise ValueError("features must be a PTX feature string such as "
                             f"'+ptx80', or None, got {self.features!r}")
        for name in ("block_m", "block_n"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value,
                                                         numbers.Integral):
                raise TypeError(f"{name} must be a positive integer or None "
                                f"(the pipeline's default), got {value!r}")
            if value < 1:
                raise ValueError(f"{name} must be a positive integer or "
                                 f"None, got {value!r}")
            object.__setattr__(self, name, int(value))
        for name in ("tma", "producer_warp", "dq_atomics", "deterministic"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, bool):
                raise TypeError(f"{name} must be True, False or None, got "
                                f"{value!r}")
        for name, choices in (("tiles_per_block", (0, 1, 2)),
                              ("index_bitwidth", (0, 32, 64))):
            value = getattr(self, name)
            if value is None:
                continue
            words = ", ".join(map(str, choices[:-1])) + f" or {choices[-1]}"
            if isinstance(value, bool) or not isinstance(value,
                                                         numbers.Integral):
                raise TypeError(f"{name} must be an integer ({words}) or "
                                f"None, got {value!r}")
            if value not in choices:
                raise ValueError(f"{name} must be {words}, got {value!r}")
            object.__setattr__(self, name, int(value))
        tiles = self.tiles_per_block
        if tiles == 2 and self.producer_warp is False:
            raise ValueError("tiles_per_block=2 needs the producer "
                             "warpgroup: it cannot be combined with "
                             "producer_warp=False")
        value = self.backward_producer_warp
        if not (value is None or isinstance(value, bool) or value == "auto"):
            raise TypeError("backward_producer_warp must be True, False, "
                            "'auto' or None, got "
                            f"{self.backward_producer_warp!r}")
        if value is True and (self.deterministic
                              or self.dq_atomics is False):
            raise ValueError("backward_producer_warp=True is a form of the "
                             "dq-atomics backward: it cannot be combined "
                             "with " + ("deterministic=True"
                                        if self.deterministic
                                        else "dq_atomics=False"))
        if self.dq_atomics and self.deterministic:
            raise ValueError("dq_atomics=True adds dq with f32 atomics, which "
                             "is not bitwise reproducible: it cannot be "
                             "combined with deterministic=True")

    def _check_extra(self):
        extra = self.extra
        if isinstance(extra, (str, bytes)) or not isinstance(extra,
                                                             (tuple, list)):
            raise TypeError("extra must be a tuple of 'key=value' strings, "
                            f"got {extra!r}")
        seen = set()
        for item in extra:
            if not isinstance(item, str):
                raise TypeError("extra must be a tuple of 'key=value' "
                                f"strings, got the item {item!r}")
            key = option_key(item)
            if key in OPTION_FIELDS:
                field = OPTION_FIELDS[key]
                raise ValueError(
                    f"extra: {key} has its own field: use "
                    f"CompileOptions({field}=...)" if field else
                    f"extra: {key} is chosen by the compile driver (the "
                    f"cache entry's folder; fa_opt.compiler."
                    f"export_artifact or 'compile --out' copies an entry "
                    f"elsewhere)")
            if key in seen:
                raise ValueError(f"extra: {key} given twice")
            seen.add(key)
        object.__setattr__(self, "extra", tuple(sorted(extra,
                                                       key=option_key)))

    def pipeline_options(self) -> list:
        """The ``key=value`` options of ``--fa-to-ptx``, output-dir excluded."""
        opts = [f"chip={self.chip}"]
        if self.block_m is not None:
            opts.append(f"block-m={int(self.block_m)}")
        if self.block_n is not None:
            opts.append(f"block-n={int(self.block_n)}")
        if self.features is not None:
            opts.append(f"features={self.features}")
        if self.tma is not None:
            opts.append(f"tma={'true' if self.tma else 'false'}")
        if self.producer_warp is not None:
            opts.append("producer-warp="
                        f"{'true' if self.producer_warp else 'false'}")
        if self.tiles_per_block is not None:
            opts.append(f"tiles-per-block={self.tiles_per_block}")
        if self.dq_atomics is not None:
            opts.append("dq-atomics="
                        f"{'true' if self.dq_atomics else 'false'}")
        if self.backward_producer_warp is not None:
            value = self.backward_producer_warp
            if isinstance(value, bool):
                value = "true" if value else "false"
            opts.append(f"backward-producer-warp={value}")
        if self.deterministic is not None:
            opts.append("deterministic="
                        f"{'true' if self.deterministic else 'false'}")
        if self.index_bitwidth is not None:
            opts.append(f"index-bitwidth={self.index_bitwidth}")
        opts.extend(self.extra)
        return opts

    def to_dict(self) -> dict:
        d = asdict(self)
        d["extra"] = list(self.extra)
        return d


#: The longest key sequence (seqlen_k) that the short forward runs
#: (CompileOptions.short_forward). H100, bf16 D 64 causal forward, fa-run
#: TFLOP/s against the default kernel: +14% at T 1k, 0 to +2% at T 2k
#: (+4-5% in the paired rounds against SDPA cuDNN), -5% at T 3k
#: (docs/PERFORMANCE.md, forty-second session).
SHORT_FORWARD_MAX_SEQLEN_K = 2048


def short_forward_options(config: AttentionConfig, options: CompileOptions
                          ) -> Optional[CompileOptions]:
    """The options of the short forward of ``config``, or None where it does
    not apply.

    The default sm_90a forward at head dim 64 runs 192-query tiles, one
    block of four warpgroups (a producer and three consumers) per
    multiprocessor, so every block start and end is exposed; over a short
    key sequence that is a large share of a block. The short forward runs
    64-query tiles with 128-key blocks, one warpgroup per block and no
    producer warpgroup, three blocks per multiprocessor, whose starts and
    ends overlap the other blocks' work.

    It applies with ``options.short_forward`` on sm_90a, at head dim 64
    (q/k and v), bf16 or f16, when seqlen_k is dynamic or at most
    SHORT_FORWARD_MAX_SEQLEN_K, and when the options leave the forward's
    shape to the pipeline (no block_m, block_n, producer_warp, extra
    option, ``tma=False`` or tiles_per_block other than 0, fa-to-ptx's
    default). The options returned
    are ``options`` with block_m 64, block_n 128, producer_warp False and
    short_forward False."""
    if not options.short_forward or options.chip != "sm_90a":
        return None
    if config.head_dim != 64 or config.head_dim_v != 64 or \
            config.dtype not in ("bf16", "f16"):
        return None
    if config.seqlen_k is not None and \
            config.seqlen_k > SHORT_FORWARD_MAX_SEQLEN_K:
        return None
    if options.block_m is not None or options.block_n is not None or \
            options.producer_warp is not None or \
            options.tiles_per_block not in (None, 0) or \
            options.tma is False or \
            options.extra:
        return None
    return replace(options, block_m=64, block_n=128, producer_warp=False,
                   tiles_per_block=None, short_forward=False)


def chip_for_capability(major: int, minor: int) -> str:
    """The chip name fa-opt targets for a compute capability: the
    architecture-specific ``a`` variant from sm_90 on (wgmma, TMA)."""
    return f"sm_{major}{minor}" + ("a" if major >= 9 else "")
