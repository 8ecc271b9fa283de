"""The compile driver: runs the fa-opt tool stage by stage.

Stages (one function each, as a backend compiler of Triton does):

1. :func:`make_mlir` -- the ``func.func`` holding the ``fa.attention``
   (forward with lse) of an :class:`~fa_opt.config.AttentionConfig`, and
   :func:`make_backward_mlir` -- the ``fa.attention_backward`` of it;
2. :func:`make_ptx` -- ``fa-opt --fa-to-ptx="chip=... output-dir=..."``: PTX
   plus manifest per kernel (docs/ARTIFACTS.md).

:func:`compile_attention` runs them under the disk cache and returns an
:class:`Artifact`. The tool is ``$FA_OPT`` if set, else ``fa-opt`` on PATH.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import shutil
import stat
import subprocess
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from . import __version__, cache
from .config import (SHORT_FORWARD_MAX_SEQLEN_K, AttentionConfig,
                     CompileOptions, short_forward_options)
from .manifest import (BackwardManifest, Manifest, read_any_manifest,
                       read_manifest)

PIPELINE = "fa-to-ptx"


class FaOptNotFoundError(RuntimeError):
    """No fa-opt binary to compile with."""


class CompilationError(RuntimeError):
    """fa-opt failed; the message holds its command line and stderr."""


def find_fa_opt() -> str:
    """``$FA_OPT`` (must be an executable file), else ``fa-opt`` on PATH."""
    env = os.environ.get("FA_OPT")
    if env:
        if os.path.isfile(env) and os.access(env, os.X_OK):
            return os.path.abspath(env)
        raise FaOptNotFoundError(
            f"FA_OPT is set to '{env}', which is not an executable file")
    found = shutil.which("fa-opt")
    if found:
        return os.path.abspath(found)
    raise FaOptNotFoundError(
        "fa-opt not found: set FA_OPT to the fa-opt binary or put it on PATH "
        "(build it with scripts/build.sh), or point FA_OPT_KERNEL_DIRS at "
        "folders of precompiled kernels (python -m fa_opt compile --out DIR)")


_IDENTITY_MEMO: Dict[tuple, dict] = {}


def tool_identity(path: str) -> dict:
    """What identifies the compiler: the SHA-256 of the binary and its
    ``--version`` text (the LLVM/MLIR it was built against; fa-opt links
    libMLIR.so, so this changes with an LLVM upgrade that leaves the binary
    alone). Memoized per (path, size, mtime)."""
    st = os.stat(path)
    memo_key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
    identity = _IDENTITY_MEMO.get(memo_key)
    if identity is None:
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        try:
            version = subprocess.run(
                [path, "--version"], capture_output=True, text=True,
                timeout=60).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            version = ""
        identity = {"sha256": digest.hexdigest(), "version": version}
        _IDENTITY_MEMO[memo_key] = identity
    return identity


# --- stage 1: MLIR ------------------------------------------------------------

def _tensor(dims, elt: str) -> str:
    return "tensor<" + "x".join("?" if d is None else str(d) for d in dims) + \
        f"x{elt}>"


def func_name(config: AttentionConfig, direction: str = "fwd") -> str:
    """A symbol unique to the config, readable in kernel names:
    ``fa_<dir>_<dtype>_d<D>_<causal>_<hash8>``."""
    digest = cache.cache_key(config.to_dict())[:8]
    return f"fa_{direction}_{config.short_name()}_{digest}"


def _types(config: AttentionConfig):
    b, tq, tk = config.batch, config.seqlen_q, config.seqlen_k
    q = _tensor((b, tq, config.head_dim), config.dtype)
    k = _tensor((b, tk, config.head_dim), config.dtype)
    v = _tensor((b, tk, config.head_dim_v), config.dtype)
    o = _tensor((b, tq, config.head_dim_v), config.o_dtype)
    lse = _tensor((b, tq), "f32")
    return q, k, v, o, lse


def mlir_float(value: float) -> str:
    """An f64 as an MLIR float literal that round-trips exactly:
    ``%.17e`` (17 significant digits, always with a '.', e.g.
    ``1.00000000000000008e-05``). Python's repr is not one: MLIR rejects
    ``5e-05`` and ``1e+16`` (no '.')."""
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"not a finite float: {value!r}")
    return "%.17e" % value


def _attrs(config: AttentionConfig) -> str:
    return f"scale({mlir_float(config.scale)}) causal({config.causal})"


def make_mlir(config: AttentionConfig, direction: str = "fwd") -> str:
    """Stage 1 (forward): rank-3 ``[batch, T, D]`` tensors, the batch dims
    flattened as the kernel ABI has them; the scale spelled out
    (:func:`mlir_float`: a literal MLIR parses back to the same double).
    ``direction`` names the function (:func:`func_name`): ``fwd_short``
    for the short forward, whose kernel then has a name of its own."""
    q, k, v, o, lse = _types(config)
    name = func_name(config, direction)
    return (
        f"// fa_opt {__version__}: forward of {config.to_dict()}\n"
        f"func.func @{name}(%q: {q}, %k: {k}, %v: {v}) -> ({o}, {lse}) {{\n"
        f"  %o, %lse = fa.attention %q, %k, %v {_attrs(config)}\n"
        f"      : {q}, {k}, {v} -> {o}, {lse}\n"
        f"  return %o, %lse : {o}, {lse}\n"
        f"}}\n")


def make_backward_mlir(config: AttentionConfig) -> str:
    """Stage 1 (backward): ``fa.attention_backward(q, k, v, o, do, lse)``,
    do in o's type, the gradients in the input type (the kernels accumulate
    in f32 and round once, as autograd wants gradients in the input
    dtype)."""
    q, k, v, o, lse = _types(config)
    dq, dk, dv = q, k, v
    name = func_name(config, "bwd")
    return (
        f"// fa_opt {__version__}: backward of {config.to_dict()}\n"
        f"func.func @{name}(%q: {q}, %k: {k}, %v: {v}, %o: {o}, %do: {o}, "
        f"%lse: {lse}) -> ({dq}, {dk}, {dv}) {{\n"
        f"  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse "
        f"{_attrs(config)}\n"
        f"      : {q}, {k}, {v}, {o}, {o}, {lse} -> {dq}, {dk}, {dv}\n"
        f"  return %dq, %dk, %dv : {dq}, {dk}, {dv}\n"
        f"}}\n")


# --- stage 2: PTX -------------------------------------------------------------

def fa_to_ptx_command(tool: str, input_file: str, options: CompileOptions,
                      output_dir: str) -> List[str]:
    opts = " ".join(options.pipeline_options() + [f"output-dir={output_dir}"])
    return [tool, input_file, f"--{PIPELINE}={opts}", "-o", os.devnull]


def make_ptx(mlir_text: str, options: CompileOptions, tool: str,
             work_dir: str, stem: str) -> List[str]:
    """Stage 2: writes ``work_dir/<stem>.mlir``, runs fa-to-ptx into
    ``work_dir`` and returns the manifest files it wrote (sorted)."""
    input_name = f"{stem}.mlir"
    with open(os.path.join(work_dir, input_name), "w", encoding="utf-8") as f:
        f.write(mlir_text)
    before = set(os.listdir(work_dir))
    # Relative paths with cwd=work_dir: no quoting issues in pass options.
    command = fa_to_ptx_command(tool, input_name, options, ".")
    proc = subprocess.run(command, cwd=work_dir, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise CompilationError(
            f"fa-opt failed (exit {proc.returncode}) on {stem}.mlir:\n"
            f"  command: {' '.join(command)}\n  in: {work_dir}\n"
            f"{proc.stderr.strip()}\n--- input ---\n{mlir_text}")
    manifests = sorted(n for n in set(os.listdir(work_dir)) - before
                       if n.endswith(".manifest"))
    if not manifests:
        raise CompilationError(
            f"fa-opt wrote no kernel manifest for {stem}.mlir "
            f"(command: {' '.join(command)})")
    return manifests


# --- the whole compile --------------------------------------------------------

@dataclass
class Artifact:
    """A compiled configuration: a folder with ``fa_opt.json``.

    ``manifests``: the parsed manifests by file name, when whoever made the
    artifact has read them already (:func:`artifact_problem` does, for the
    registry's index); the others are read from the folder when asked
    for."""

    directory: str
    entry: dict
    config: AttentionConfig
    manifests: Dict[str, object] = field(default_factory=dict, repr=False,
                                         compare=False)

    @property
    def chip(self) -> str:
        return self.entry["options"]["chip"]

    def _manifest(self, name: str, reader):
        m = self.manifests.get(name)
        if m is None:
            m = reader(os.path.join(self.directory, name))
        return m

    def forward_manifest(self) -> Manifest:
        return self._manifest(self.entry["forward"][0], read_manifest)

    def short_forward(self) -> Optional[Tuple[int, Manifest]]:
        """``(max_seqlen_k, manifest)`` of the short forward (see
        :func:`fa_opt.config.short_forward_options`), None when the entry
        has none or it is not usable (:attr:`short_forward_error`)."""
        if self.short_forward_error is not None or \
                not self.entry.get("forward_short"):
            return None
        short = self.entry["forward_short"]
        return short["max_seqlen_k"], self._manifest(short["manifest"],
                                                     read_manifest)

    @functools.cached_property
    def short_forward_error(self) -> Optional[str]:
        """Why the entry has no usable short forward where one was
        compiled or asked for: the compile's error (``forward_short_error``
        of fa_opt.json) or :func:`short_forward_problem` (checked once);
        None when it has one or none was to be had."""
        problem = self.entry.get("forward_short_error")
        if problem is None:
            problem = short_forward_problem(self.directory, self.entry,
                                            self.forward_manifest(),
                                            self.manifests)
        return problem

    def backward_manifest(self) -> Optional[BackwardManifest]:
        """The backward kernels (one version-2 manifest naming them in
        launch order), None when fa-opt compiled none."""
        for name in self.entry.get("backward") or ():
            m = self._manifest(name, read_any_manifest)
            if isinstance(m, BackwardManifest):
                return m
        return None

    @property
    def backward_error(self) -> Optional[str]:
        return self.entry.get("backward_error")


#: Manifests are a few hundred bytes; anything larger is not one.
MAX_MANIFEST_BYTES = 1 << 20


def entry_problem(entry) -> Optional[str]:
    """Why a parsed ``fa_opt.json`` is not an entry this package can use
    (None when it is): a config, options with a chip, and the manifests'
    names are what lookups read."""
    if not isinstance(entry, dict):
        return "not a JSON object"
    if not isinstance(entry.get("config"), dict):
        return "no 'config' object"
    options = entry.get("options")
    if not isinstance(options, dict) or not isinstance(options.get("chip"),
                                                       str):
        return "no 'options' object with a 'chip'"
    forward = entry.get("forward")
    if not isinstance(forward, list) or not forward or \
            not all(isinstance(name, str) for name in forward):
        return "no 'forward' list of manifest names"
    backward = entry.get("backward")
    if backward is not None and (not isinstance(backward, list) or not all(
            isinstance(name, str) for name in backward)):
        return "'backward' is not a list of manifest names"
    return None


def artifact_problem(directory: str, entry,
                     parsed: Optional[Dict[str, object]] = None
                     ) -> Optional[str]:
    """Why the folder ``directory`` with the parsed ``fa_opt.json``
    ``entry`` is not a usable compiled configuration (None when it is):
    :func:`entry_problem`, or a manifest it names that is missing, does not
    parse (:class:`~fa_opt.manifest.ManifestError`), is of the wrong kind
    (the first forward name must be a forward manifest, a backward name a
    backward one), lies outside the folder, or names a PTX file that is
    missing. Reads only the manifests, not the PTX; with ``parsed`` (a
    dict), puts each manifest it read there by file name (for
    :attr:`Artifact.manifests`)."""
    problem = entry_problem(entry)
    if problem:
        return problem
    names = [(name, "forward") for name in entry["forward"][:1]] + \
        [(name, "backward") for name in entry.get("backward") or ()]
    for name, kind in names:
        problem, _ = _manifest_problem(directory, name, kind, parsed)
        if problem:
            return problem
    return None


def _manifest_problem(directory: str, name, kind: str,
                      parsed: Optional[Dict[str, object]] = None):
    """``(problem, manifest)``: why the manifest file ``name`` of the folder
    is not a usable ``kind`` ("forward" or "backward") manifest (see
    :func:`artifact_problem`), else ``(None, the parsed manifest)``."""
    if not isinstance(name, str) or os.path.basename(name) != name or \
            name in (".", ".."):
        return f"the {kind} manifest name '{name}' is not a file name", None
    path = os.path.join(directory, name)
    # A FIFO would block the read, /dev/zero never end.
    try:
        st = os.stat(path)
    except OSError as err:
        return f"{kind} manifest '{name}': {err.strerror or err}", None
    if not stat.S_ISREG(st.st_mode):
        return f"{kind} manifest '{name}' is not a regular file", None
    if st.st_size > MAX_MANIFEST_BYTES:
        return f"{kind} manifest '{name}' has {st.st_size} bytes, " \
            f"more than a manifest ({MAX_MANIFEST_BYTES})", None
    try:
        m = read_any_manifest(path)
    except (OSError, ValueError) as err:  # ManifestError is a ValueError
        return f"{kind} manifest '{name}': {err}", None
    if (kind == "forward") != isinstance(m, Manifest):
        return f"'{name}' is not a {kind} manifest", None
    if parsed is not None:
        parsed[name] = m
    if not os.path.isfile(m.ptx):
        return f"{kind} manifest '{name}' names the PTX file " \
            f"'{os.path.basename(m.ptx)}', which is missing", None
    return None, m


#: What the short forward's manifest must share with the default forward's:
#: both are launched with the same tensors (fa_opt.ops.forward sizes o
#: from the default one).
_SHORT_SAME = ("chip", "dtype", "o_dtype", "causal", "scale", "batch",
               "batch_shape", "seqlen_q", "seqlen_k", "head_dim",
               "head_dim_v", "has_lse", "params")


def short_forward_problem(directory: str, entry, default: Manifest,
                          parsed: Optional[Dict[str, object]] = None
                          ) -> Optional[str]:
    """Why the entry's ``forward_short`` is not usable (None when it is or
    when the entry has none): not an object with a ``manifest`` file name
    and a ``max_seqlen_k`` count, a manifest that fails
    :func:`artifact_problem`'s check, or one that differs from the default
    forward ``default`` in what a launch with the same tensors needs
    (element types, mask, scale, static dims, head dims, lse, params). A
    short forward with a problem is left out: the default forward runs
    every length."""
    short = entry.get("forward_short")
    if short is None:
        return None
    limit = short.get("max_seqlen_k") if isinstance(short, dict) else None
    if not isinstance(short, dict) or not isinstance(
            short.get("manifest"), str) or not isinstance(limit, int) or \
            isinstance(limit, bool) or limit < 0:
        return "'forward_short' is not an object with a 'manifest' name " \
            "and a 'max_seqlen_k' count"
    problem, m = _manifest_problem(directory, short["manifest"], "forward",
                                   parsed)
    if problem:
        return "short " + problem
    for key in _SHORT_SAME:
        if getattr(m, key) != getattr(default, key):
            return f"the short forward '{short['manifest']}' has {key} " \
                f"{getattr(m, key)!r}, the default forward " \
                f"{getattr(default, key)!r}"
    return None


def key_material(config: AttentionConfig, options: CompileOptions,
                 identity: dict) -> dict:
    """Everything the cache key hashes. The short forward enters as what
    it is (its options, bound and MLIR, or None where it does not apply),
    not as the ``short_forward`` flag: a config it cannot apply to has one
    key with the flag on or off."""
    short = short_forward_options(config, options)
    plain = options.to_dict()
    plain.pop("short_forward")
    return {"format": cache.CACHE_FORMAT, "package": __version__,
            "config": config.to_dict(), "pipeline": PIPELINE,
            "options": plain, "fa_opt": identity,
            "mlir": [make_mlir(config), make_backward_mlir(config)],
            "short_forward": None if short is None else {
                "options": short.to_dict(),
                "max_seqlen_k": SHORT_FORWARD_MAX_SEQLEN_K,
                "mlir": make_mlir(config, "fwd_short")}}


def compile_attention(config: AttentionConfig,
                      options: Optional[CompileOptions] = None,
                      tool: Optional[str] = None,
                      cache_root: Optional[str] = None,
                      backward: bool = True) -> Artifact:
    """Compiles (or finds in the cache) the forward and, if ``backward`` and
    the tool can, the backward kernels of ``config``."""
    options = options or CompileOptions()
    tool = tool or find_fa_opt()
    identity = tool_identity(tool)
    material = key_material(config, options, identity)
    material["backward"] = bool(backward)
    key = cache.cache_key(material)
    # A broken entry (a file deleted or truncated since) reads as missing:
    # compiled again and replaced below.
    entry = cache.lookup(key, cache_root, check=artifact_problem)
    if entry is None:
        staging = cache.new_staging_dir(cache_root)
        try:
            start = time.perf_counter()
            forward = make_ptx(make_mlir(config), options, tool, staging,
                               "forward")
            entry = {"format": cache.CACHE_FORMAT, "package": __version__,
                     "key": key, "config": config.to_dict(),
                     "options": options.to_dict(), "pipeline": PIPELINE,
                     "fa_opt": dict(identity, path=tool),
                     "forward": forward, "backward": None}
            short = short_forward_options(config, options)
            if short is not None:
                # The default forward serves every length; a short one
                # that failed (or wrote what does not check) is noted and
                # left out, with the files it wrote.
                before = set(os.listdir(staging))
                try:
                    entry["forward_short"] = {
                        "manifest": make_ptx(
                            make_mlir(config, "fwd_short"), short, tool,
                            staging, "forward_short")[0],
                        "max_seqlen_k": SHORT_FORWARD_MAX_SEQLEN_K}
                    problem, parsed = None, {}
                    if not artifact_problem(staging, entry, parsed):
                        problem = short_forward_problem(
                            staging, entry, parsed[forward[0]])
                    if problem:
                        raise CompilationError(problem)
                except CompilationError as err:
                    entry.pop("forward_short", None)
                    entry["forward_short_error"] = _error_summary(str(err))
                    for name in set(os.listdir(staging)) - before:
                        if not name.endswith(".mlir"):
                            os.remove(os.path.join(staging, name))
            if backward:
                try:
                    entry["backward"] = make_ptx(
                        make_backward_mlir(config), options, tool, staging,
                        "backward")
                except CompilationError as err:
                    entry["backward_error"] = _error_summary(str(err))
            entry["compile_seconds"] = round(time.perf_counter() - start, 3)
            # What fa-opt wrote must read back before it is cached.
            problem = artifact_problem(staging, entry)
            if problem:
                raise CompilationError(
                    f"fa-opt ({tool}) wrote kernels that cannot be used for "
                    f"{config.short_name()}: {problem}")
            directory = cache.publish(staging, key, entry, cache_root,
                                      check=artifact_problem)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        entry = cache.lookup(key, cache_root, check=artifact_problem) or entry
    else:
        directory = cache.entry_dir(key, cache_root)
    return Artifact(directory=directory, entry=entry, config=config)


def _error_summary(text: str) -> str:
    """A compile error's first line, and its first ``error:`` line when it
    has one further down."""
    first = text.splitlines()[0] if text else ""
    return "\n".join(line for line in dict.fromkeys(
        (first, _first_error_line(text))) if line)


def _first_error_line(text: str) -> str:
    for line in text.splitlines():
        if "error:" in line:
            return line.strip()
    return ""


def export_artifact(artifact: Artifact, out_dir: str) -> str:
    """Copies a compiled entry into ``out_dir/<key>/`` (a precompiled
    folder to carry to a machine without fa-opt). The copy is made in a
    staging folder of ``out_dir`` and renamed into place, as the cache
    does: concurrent exports of one entry are safe, a complete copy already
    there is kept, and a broken one (see :func:`artifact_problem`) is
    replaced. Raises OSError when ``out_dir`` cannot be written."""
    target = os.path.join(out_dir, os.path.basename(artifact.directory))
    entry = cache.lookup(os.path.basename(target), out_dir,
                         check=artifact_problem)
    if entry is not None:
        return target
    os.makedirs(out_dir, exist_ok=True)
    staging = cache.new_staging_dir(out_dir)
    try:
        shutil.copytree(artifact.directory, staging, dirs_exist_ok=True)
        return cache.install(staging, target, check=artifact_problem)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
