"""fa_opt: exact attention compiled by fa-opt, launched from PyTorch.

Importing the package needs neither torch nor a GPU: the compile driver
(:mod:`fa_opt.compiler`), the cache and the manifest reader are plain Python.
The PyTorch entry points load on first use:

* :func:`attention` -- ``attention(q, k, v, *, causal=False, scale=None)``,
  an autograd function (forward returns o, saves lse);
* :func:`scaled_dot_product_attention` -- drop-in for
  ``torch.nn.functional.scaled_dot_product_attention``.
"""

__version__ = "0.1.0"

from .config import AttentionConfig, CompileOptions  # noqa: E402

_LAZY = {
    "attention": "ops",
    "scaled_dot_product_attention": "ops",
    "add_kernel_dir": "runtime",
    "set_shape_policy": "runtime",
    "set_compile_options": "runtime",
    "registry": "runtime",
}


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fa_opt' has no attribute '{name}'")
    import importlib
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = ["AttentionConfig", "CompileOptions", "__version__", *_LAZY]
