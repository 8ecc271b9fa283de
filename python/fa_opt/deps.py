"""Optional dependencies: a clear ImportError when torch is missing.

Importing :mod:`fa_opt`, compiling and reading manifests need no third-party
package; running kernels needs torch and cuda-bindings, the ``gpu`` extra of
the package.
"""

from __future__ import annotations

#: How to get the optional GPU dependencies (torch, cuda-bindings).
GPU_INSTALL_HINT = ("pip install 'fa-opt[gpu]' (from a checkout: "
                    "pip install -e 'python/[gpu]'), or install torch "
                    "yourself (https://pytorch.org)")


def missing_torch_message(what: str) -> str:
    return (f"{what} requires PyTorch (torch), which is not installed; "
            f"install it with: {GPU_INSTALL_HINT}")


def is_missing_torch(err: ImportError) -> bool:
    """Whether ``err`` is torch itself (or a submodule) not being found, as
    opposed to another import failing."""
    name = getattr(err, "name", None) or ""
    return isinstance(err, ModuleNotFoundError) and (
        name == "torch" or name.startswith("torch."))


def torch_required(what: str) -> ModuleNotFoundError:
    """The error to raise (``from err``) for a missing torch: a
    ModuleNotFoundError, hence an ImportError, naming ``what`` and the
    install command."""
    return ModuleNotFoundError(missing_torch_message(what), name="torch")
