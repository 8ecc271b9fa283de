"""fa_opt: exact attention compiled by fa-opt, launched from PyTorch.

Importing the package needs neither torch nor a GPU: the compile driver
(:mod:`fa_opt.compiler`), the cache and the manifest reader are plain Python.
The PyTorch entry points load on first use (and raise an ImportError saying
how to install torch when it is missing):

* :func:`attention` -- ``attention(q, k, v, *, causal=False, scale=None)``,
  an autograd function (forward returns o, saves lse);
* :func:`scaled_dot_product_attention` -- drop-in for
  ``torch.nn.functional.scaled_dot_product_attention``.

``from fa_opt import *`` gives the torch-free names only (:data:`__all__`);
reach the two above as ``fa_opt.attention`` or ``from fa_opt import
attention``.
"""

__version__ = "0.1.0"

from .config import AttentionConfig, CompileOptions  # noqa: E402

#: Lazily loaded names that need torch (fa_opt.ops imports it).
_TORCH_LAZY = {
    "attention": "ops",
    "scaled_dot_product_attention": "ops",
}
#: Lazily loaded names that do not (fa_opt.runtime is plain Python).
_LAZY = {
    "add_kernel_dir": "runtime",
    "set_shape_policy": "runtime",
    "set_compile_options": "runtime",
    "registry": "runtime",
}


def __getattr__(name):
    module = _LAZY.get(name) or _TORCH_LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fa_opt' has no attribute '{name}'")
    import importlib
    try:
        mod = importlib.import_module(f".{module}", __name__)
    except ModuleNotFoundError as err:
        from .deps import is_missing_torch, torch_required
        if name in _TORCH_LAZY and is_missing_torch(err):
            raise torch_required(f"fa_opt.{name}") from err
        raise
    value = getattr(mod, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_TORCH_LAZY))


# Star-import must work without torch: only names that resolve without it.
__all__ = ["AttentionConfig", "CompileOptions", "__version__", *_LAZY]
