# -*- Python -*-
# lit configuration of the fa-opt test suite.

import os
import shutil

import lit.formats
from lit.llvm import llvm_config

config.name = "FA"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.fa_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%mlir_lib_dir", config.mlir_lib_dir))
config.substitutions.append(("%fa_lib_dir", config.fa_lib_dir))
config.substitutions.append(("%fa_src_root", os.path.dirname(config.test_source_root)))
config.substitutions.append(("%fa_obj_root", config.fa_obj_root))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

# Our tools first, then LLVM 22's (FileCheck, not, count, mlir-runner).
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.fa_tools_dir, append_path=True)

tool_dirs = [config.fa_tools_dir, config.llvm_tools_dir]
tools = ["fa-opt", "mlir-runner"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

def add_cuda_tool(name, extra_dirs=()):
    """Makes CUDA's `name` available as %name and feature `name`: from the
    configured toolkit, /usr/local/cuda/bin, `extra_dirs`, else PATH."""
    dirs = [config.cuda_bin_dir, "/usr/local/cuda/bin", *extra_dirs]
    found = next((os.path.join(d, name) for d in dirs
                  if d and os.access(os.path.join(d, name), os.X_OK)),
                 None) or shutil.which(name)
    if found:
        config.available_features.add(name)
        config.substitutions.append(("%" + name, found))


def wheel_bin_dir():
    """bin/ of NVIDIA's CUDA 13 pip wheels for config.python_executable."""
    import subprocess
    try:
        purelib = subprocess.check_output(
            [config.python_executable, "-c",
             "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            text=True).strip()
    except Exception:
        return None
    return os.path.join(purelib, "nvidia", "cu13", "bin")


# ptxas validates emitted PTX (`REQUIRES: ptxas`); cuobjdump shows the SASS
# of assembled kernels (`REQUIRES: cuobjdump`), from the toolkit or the
# nvidia-cuda-cuobjdump wheel that scripts/setup.sh installs (the toolkit
# here ships only nvcc and ptxas).
add_cuda_tool("ptxas")
add_cuda_tool("cuobjdump", [d for d in [wheel_bin_dir()] if d])

# numpy: the CPU execution harness computes its float64 reference with it.
try:
    import subprocess
    subprocess.check_call([config.python_executable, "-c", "import numpy"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    config.available_features.add("numpy")
except Exception:
    pass

# The CUDA-driver runtime (runtime/, tools/fa-run), built when CUDA's headers
# are found: its host-only unit tests and fa-run's error paths need no GPU.
# Tests that use them say `REQUIRES: fa-runtime`.
fa_runtime_unittests = os.path.join(config.fa_tools_dir, "fa-runtime-unittests")
if os.path.exists(fa_runtime_unittests):
    config.available_features.add("fa-runtime")
    config.substitutions.append(("%fa_runtime_unittests", fa_runtime_unittests))
    config.substitutions.append(
        ("%fa_run", os.path.join(config.fa_tools_dir, "fa-run")))

# FAPlugin.so, the dialect + pass plugin, loaded into the stock mlir-opt of
# LLVM 22. Tests that use it say `REQUIRES: fa-plugin` and run
# `%mlir_opt_plugin`, i.e. mlir-opt with both plugin flags.
fa_plugin = os.path.join(config.fa_lib_dir, "FAPlugin.so")
stock_mlir_opt = os.path.join(config.llvm_tools_dir, "mlir-opt")
if os.path.exists(fa_plugin) and os.path.exists(stock_mlir_opt):
    config.available_features.add("fa-plugin")
    config.substitutions.append(("%fa_plugin", fa_plugin))
    config.substitutions.append(
        ("%mlir_opt_plugin",
         "%s --load-dialect-plugin=%s --load-pass-plugin=%s"
         % (stock_mlir_opt, fa_plugin, fa_plugin)))

# fa-api-test, the C++ program on the pipeline API (always built).
config.substitutions.append(
    ("%fa_api_test", os.path.join(config.fa_tools_dir, "fa-api-test")))

# fa-capi-test, the C program on libFACAPI.so. `REQUIRES: fa-capi`.
fa_capi_test = os.path.join(config.fa_tools_dir, "fa-capi-test")
if os.path.exists(fa_capi_test):
    config.available_features.add("fa-capi")
    config.substitutions.append(("%fa_capi_test", fa_capi_test))
