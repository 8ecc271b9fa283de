"""Importing fa_opt needs neither torch nor a GPU; the torch entry points
say so when torch is missing."""

import os
import subprocess
import sys
import textwrap

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run_without_torch(body):
    """Runs ``body`` in a fresh interpreter where ``import torch`` fails
    (whether or not torch is installed here)."""
    code = "import sys\nsys.modules['torch'] = None\n" + textwrap.dedent(body)
    proc = subprocess.run([sys.executable, "-c", code], cwd=PYTHON_DIR,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_star_import_without_torch():
    out = _run_without_torch("""
        ns = {}
        exec("from fa_opt import *", ns)
        import fa_opt
        assert set(fa_opt.__all__) <= set(ns), fa_opt.__all__
        assert "attention" not in fa_opt.__all__
        assert "scaled_dot_product_attention" not in fa_opt.__all__
        assert callable(ns["add_kernel_dir"]) and ns["AttentionConfig"]
        assert sys.modules["torch"] is None  # nothing tried to import it
        print("ok")
        """)
    assert out.strip() == "ok"


def test_all_names_resolve():
    import fa_opt
    for name in fa_opt.__all__:
        assert getattr(fa_opt, name) is not None
    assert {"attention", "scaled_dot_product_attention"} <= set(dir(fa_opt))


def test_torch_entry_points_say_torch_is_required():
    out = _run_without_torch("""
        import fa_opt
        for name in ("attention", "scaled_dot_product_attention"):
            for how in ("attr", "from"):
                try:
                    if how == "attr":
                        getattr(fa_opt, name)
                    else:
                        exec(f"from fa_opt import {name}", {})
                except ImportError as err:
                    msg = str(err)
                    assert isinstance(err, ModuleNotFoundError) and err.name == "torch"
                    assert f"fa_opt.{name} requires PyTorch (torch)" in msg, msg
                    assert "fa-opt[gpu]" in msg, msg
                else:
                    raise AssertionError(f"{name} imported without torch")
        try:
            import fa_opt.ops
        except ImportError as err:
            assert "requires PyTorch (torch)" in str(err) and "[gpu]" in str(err)
        else:
            raise AssertionError("fa_opt.ops imported without torch")
        # The torch-free parts still work afterwards.
        fa_opt.set_shape_policy("dynamic")
        print("ok")
        """)
    assert out.strip() == "ok"


def test_other_import_errors_are_not_masked():
    from fa_opt.deps import is_missing_torch
    assert is_missing_torch(ModuleNotFoundError("x", name="torch"))
    assert is_missing_torch(ModuleNotFoundError("x", name="torch.cuda"))
    assert not is_missing_torch(ModuleNotFoundError("x", name="torchvision"))
    assert not is_missing_torch(ModuleNotFoundError("x", name="cuda"))
    assert not is_missing_torch(ImportError("x", name="torch"))
