#!/usr/bin/env python3
"""CPU equivalence check of fa-raise-attention: original vs raised function.

For every public function with static tensor shapes in an MLIR file (all
`// -----` splits), and every function with dynamic dims that a directive
`// EQUIV-SHAPES: @name(3x4x45x32, ...) -> (12x45x32, ...)` gives concrete
shapes for (the module's @main casts its static constants to the dynamic
argument types and the results back), this script draws fresh random inputs (the seed is
printed, `--seed` replays it), writes a module whose `@main` calls the
function on them as constants and prints every result through the MLIR
runner utilities, and runs that module twice:

1. original: the input as written, lowered by `fa-opt --fa-to-cpu` (TOSA
   first goes through `--tosa-to-linalg-pipeline`; fa-to-cpu decomposes
   `linalg.softmax` itself);
2. raised: `fa-opt --fa-raise-attention` first, which must produce at least
   one `fa.attention` in every function (checked on its output), then the
   same lowering, where fa-to-cpu tiles fa.attention with the online softmax.

A function passes when both runs print finite results of the same shape and
max |raised - original| <= tol (absolute; 1e-5 when the inputs are f32,
4e-3 when one is f16, 4e-2 when one is bf16: the original rounds the
probabilities (and often the scores) to the input type before the second
product, fa.attention keeps them in f32). Inputs:
float arguments are standard normal, rounded to their element type; i1
arguments are random with probability 0.75 of true, index 0 of their last
dim always true and index 1 always false (no fully masked row, whether the
mask keeps keys where it is true or hides them there, as masked_fill does). The last line is
'N passed, N failed'; the exit status is non-zero when any check fails.

Usage: raise_equivalence_check.py FILE [--tol T] [--seed S] [--fa-opt P]
       [--mlir-runner P] [--lib-dir D] [--blocks M,N]
"""

import argparse
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attention_cpu_check import dense_hex, parse_prints, round_to  # noqa: E402

TENSOR = re.compile(r"tensor<([0-9x]*?)x?(f16|bf16|f32|f64|i1)>")
DYN_TENSOR = re.compile(r"tensor<([0-9?x]*?)x?(f16|bf16|f32|f64|i1)>")
EQUIV = re.compile(r"//\s*EQUIV-SHAPES:\s*@([\w$.]+)\s*\(([^)]*)\)\s*->\s*\(([^)]*)\)")
FUNC = re.compile(r"func\.func\s+@([\w$.]+)\s*\(([^)]*)\)\s*(?:->\s*\(?([^{]*?)\)?)?\s*(?:attributes\s*\{[^}]*\}\s*)?\{")


def parse_type(text):
    m = TENSOR.fullmatch(text.strip())
    if not m:
        return None
    shape = [int(x) for x in m.group(1).split("x") if x] if m.group(1) else []
    return shape, m.group(2)


def specialize(dyn_types, shapes_text):
    """Static (shape, elt) for each dynamic type string, from 'AxBxC, ...'
    (each given shape must agree with the static dims of its type)."""
    shapes = [[int(d) for d in t.strip().split("x")]
              for t in shapes_text.split(",") if t.strip()]
    if len(shapes) != len(dyn_types):
        return None
    out = []
    for text, shape in zip(dyn_types, shapes):
        m = DYN_TENSOR.fullmatch(text.strip())
        dims = m.group(1).split("x") if m and m.group(1) else []
        if not m or len(dims) != len(shape) or any(
                d != "?" and int(d) != s for d, s in zip(dims, shape)):
            return None
        out.append((shape, m.group(2)))
    return out


def functions(chunk):
    """(name, [(shape, elt)], [(shape, elt)], [dynamic type or None]...)
    of each static function, and of each dynamic one an EQUIV-SHAPES
    directive specializes."""
    directives = {m.group(1): (m.group(2), m.group(3))
                  for m in EQUIV.finditer(chunk)}
    out = []
    for m in FUNC.finditer(chunk):
        name, args, results = m.group(1), m.group(2), m.group(3) or ""
        arg_texts = [a.split(":", 1)[1].strip().rstrip(",")
                     for a in args.split("%")[1:]]
        res_texts = [r.strip() for r in
                     re.split(r",\s*(?=tensor)", results.strip()) if r.strip()]
        arg_types = [parse_type(a) for a in arg_texts]
        res_types = [parse_type(r) for r in res_texts]
        dyn = None
        if (None in arg_types or None in res_types) and name in directives:
            arg_types = specialize(arg_texts, directives[name][0])
            res_types = specialize(res_texts, directives[name][1])
            if arg_types is None or res_types is None:
                raise SystemExit("error: EQUIV-SHAPES of @%s does not fit its "
                                 "signature" % name)
            dyn = (arg_texts, res_texts)
        if None in arg_types or None in res_types or not res_types:
            continue
        out.append((name, arg_types, res_types, dyn))
    return out


def ttype(shape, elt):
    return "tensor<%s>" % "x".join([str(d) for d in shape] + [elt])


def random_input(rng, shape, elt):
    if elt == "i1":
        a = rng.random(shape) < 0.75
        if a.ndim:
            a[..., 0] = True
            if a.shape[-1] >= 2:
                a[..., 1] = False
        return a
    return round_to(rng.standard_normal(shape).astype(np.float32), elt)


def const_line(name, arr, shape, elt):
    ty = ttype(shape, elt)
    if elt == "i1":
        def nest(a):
            if a.ndim == 0:
                return "true" if a else "false"
            return "[%s]" % ", ".join(nest(x) for x in a)
        return "  %%%s = arith.constant dense<%s> : %s" % (name, nest(arr), ty)
    return "  %%%s = arith.constant %s : %s" % (name, dense_hex(arr, elt), ty)


def build_main(fname, arg_types, res_types, inputs, dyn=None):
    """@main: the inputs as constants, the call, each result printed. With
    `dyn` (the function's dynamic argument and result types), the constants
    are cast to the argument types and the results back to static shapes."""
    lines = ["func.func private @printMemrefI32(tensor<*xi32>)",
             "func.func @main() {"]
    for i, ((shape, elt), arr) in enumerate(zip(arg_types, inputs)):
        lines.append(const_line("a%d" % i, arr, shape, elt))
    atys = [ttype(s, e) for s, e in arg_types]
    rtys = [ttype(s, e) for s, e in res_types]
    args = ["%%a%d" % i for i in range(len(arg_types))]
    call_atys, call_rtys = atys, rtys
    if dyn:
        call_atys, call_rtys = dyn
        for i, (st, dt) in enumerate(zip(atys, call_atys)):
            lines.append("  %%a%d_d = tensor.cast %%a%d : %s to %s" %
                         (i, i, st, dt))
        args = ["%%a%d_d" % i for i in range(len(arg_types))]
    rnames = ["%%r%d%s" % (i, "_d" if dyn else "") for i in range(len(res_types))]
    lines.append("  %s = call @%s(%s) : (%s) -> (%s)" %
                 (", ".join(rnames), fname, ", ".join(args),
                  ", ".join(call_atys), ", ".join(call_rtys)))
    if dyn:
        for i, (dt, st) in enumerate(zip(call_rtys, rtys)):
            lines.append("  %%r%d = tensor.cast %%r%d_d : %s to %s" %
                         (i, i, dt, st))
    # Each result is printed exactly: as the bits of its f32 value.
    for i, (shape, elt) in enumerate(res_types):
        rank = len(shape)
        dims = ", ".join("d%d" % d for d in range(rank))
        idm = "affine_map<(%s) -> (%s)>" % (dims, dims)
        par = ", ".join(['"parallel"'] * rank)
        conv = {"f32": "", "f16": "arith.extf", "bf16": "arith.extf",
                "f64": "arith.truncf"}[elt]
        lines += [
            "  %%e%d = tensor.empty() : %s" % (i, ttype(shape, "i32")),
            "  %%c%d = linalg.generic {indexing_maps = [%s, %s], "
            "iterator_types = [%s]} ins(%%r%d : %s) outs(%%e%d : %s) {" %
            (i, idm, idm, par, i, ttype(shape, elt), i, ttype(shape, "i32")),
            "  ^bb0(%%x: %s, %%y: i32):" % elt,
        ]
        x = "%x"
        if conv:
            lines.append("    %%f = %s %%x : %s to f32" % (conv, elt))
            x = "%f"
        lines += [
            "    %%z = arith.bitcast %s : f32 to i32" % x,
            "    linalg.yield %z : i32",
            "  } -> %s" % ttype(shape, "i32"),
            "  %%u%d = tensor.cast %%c%d : %s to tensor<*xi32>" %
            (i, i, ttype(shape, "i32")),
            "  call @printMemrefI32(%%u%d) : (tensor<*xi32>) -> ()" % i,
        ]
    lines += ["  return", "}"]
    return "\n".join(lines) + "\n"


def run(cmd, text):
    p = subprocess.run(cmd, input=text, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (os.path.basename(cmd[0]),
                                               p.stderr[-3000:]))
    return p.stdout


def lower_and_run(module, args, raise_first):
    opt = [args.fa_opt]
    if raise_first:
        raised = run(opt + ["-", "--fa-raise-attention"], module)
        module = raised
    else:
        raised = None
    pre = []
    if "tosa." in module:
        pre += ["--tosa-to-linalg-pipeline", "--tosa-to-arith",
                "--tosa-to-tensor"]
    if pre:
        module = run(opt + ["-"] + pre, module)
    low = run(opt + ["-", "--fa-to-cpu=block-m=%s block-n=%s" %
                     tuple(args.blocks.split(","))], module)
    libs = ",".join(os.path.join(args.lib_dir, l) for l in
                    ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so"))
    out = run([args.mlir_runner, "-e", "main", "-entry-point-result=void",
               "-shared-libs=" + libs], low)
    prints = [np.array(p, dtype=np.int64).astype(np.uint32).view(np.float32)
              .astype(np.float64) for p in parse_prints(out)]
    return prints, raised


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    ap.add_argument("--tol", type=float, default=1e-5,
                    help="tolerance of functions whose inputs are f32")
    ap.add_argument("--tol-f16", dest="tol_f16", type=float, default=4e-3,
                    help="tolerance when an input is f16 (default 4e-3)")
    ap.add_argument("--tol-bf16", dest="tol_bf16", type=float, default=4e-2,
                    help="tolerance when an input is bf16 (default 4e-2)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--blocks", default="7,13",
                    help="block-m,block-n of the tiling (default 7,13)")
    ap.add_argument("--fa-opt", dest="fa_opt", default="fa-opt")
    ap.add_argument("--mlir-runner", dest="mlir_runner", default="mlir-runner")
    ap.add_argument("--lib-dir", dest="lib_dir", default="/usr/lib/llvm-22/lib")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else int.from_bytes(
        os.urandom(4), "little")
    print("seed %d" % seed)
    rng = np.random.default_rng(seed)
    text = open(args.file).read()
    chunks = re.split(r"^// -----\s*$", text, flags=re.M)
    passed = failed = 0
    for chunk in chunks:
        # Comments only: drop RUN/CHECK lines so they do not leak.
        body = "\n".join(l for l in chunk.splitlines()
                         if not l.lstrip().startswith("//"))
        # EQUIV-SHAPES directives live in comments: read them from the
        # chunk itself.
        directives = "\n".join(l for l in chunk.splitlines()
                               if "EQUIV-SHAPES:" in l)
        for fname, arg_types, res_types, dyn in functions(
                body + "\n" + directives):
            inputs = [random_input(rng, s, e) for s, e in arg_types]
            module = body + "\n" + build_main(fname, arg_types, res_types,
                                              inputs, dyn)
            try:
                ref, _ = lower_and_run(module, args, False)
                got, raised = lower_and_run(module, args, True)
                fn = re.search(r"func\.func @%s\b.*?^  \}$|func\.func @%s\b.*?^\}$"
                               % (re.escape(fname), re.escape(fname)),
                               raised, re.S | re.M)
                if not fn or "fa.attention" not in fn.group(0):
                    raise RuntimeError("no fa.attention in @%s after "
                                       "fa-raise-attention" % fname)
                if len(ref) != len(res_types) or len(got) != len(ref):
                    raise RuntimeError("expected %d prints, got %d and %d"
                                       % (len(res_types), len(ref),
                                          len(got)))
                worst = 0.0
                for a, b in zip(ref, got):
                    if a.shape != b.shape:
                        raise RuntimeError("result sizes differ")
                    if not (np.isfinite(a).all() and np.isfinite(b).all()):
                        raise RuntimeError("non-finite result")
                    if a.size:
                        worst = max(worst, float(np.abs(a - b).max()))
                elts = {e for _, e in arg_types}
                tol = (args.tol_bf16 if "bf16" in elts else
                       args.tol_f16 if "f16" in elts else args.tol)
                ok = worst <= tol
                msg = "max|raised - original| = %.3g (tol %.1g)" % (
                    worst, tol)
            except RuntimeError as e:
                ok, msg = False, str(e)
            print("%s @%s: %s" % ("PASS" if ok else "FAIL", fname, msg))
            passed += ok
            failed += not ok
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
