// fa-lower-tensor-map-params: the last N arguments of a kernel with
// fa.tensor_map_params = N become by-value 128-byte grid constants, and
// the module's workgroup-memory globals get 1024-byte alignment.
// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fa-lower-tensor-map-params))' -verify-diagnostics | FileCheck %s
// On the whole module it reaches the same kernels, and top-level ones too.
// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(fa-lower-tensor-map-params)' -verify-diagnostics | FileCheck %s --check-prefixes=CHECK,TOP
// One error line, no dump of the op:
// RUN: not fa-opt %s -split-input-file -pass-pipeline='builtin.module(fa-lower-tensor-map-params)' 2>&1 >/dev/null | FileCheck %s --check-prefix=ONELINE
// ONELINE-NOT: see current operation

// CHECK-LABEL: gpu.module @tma
// CHECK: llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 1024 : i64}
// CHECK: llvm.mlir.global internal @other_shared() {addr_space = 3 : i32, alignment = 1024 : i64}
// CHECK: llvm.mlir.global internal @big_shared() {addr_space = 3 : i32, alignment = 4096 : i64}
// CHECK: llvm.mlir.global internal @global_space() {addr_space = 1 : i32, alignment = 16 : i64}
// CHECK: llvm.func @k(%arg0: !llvm.ptr, %arg1: i64,
// CHECK-SAME: %arg2: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
// CHECK-SAME: %arg3: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant})
// CHECK-NOT: fa.tensor_map_params
// CHECK-SAME: nvvm.kernel
gpu.module @tma {
  llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  llvm.mlir.global internal @other_shared() {addr_space = 3 : i32, alignment = 256 : i64} : !llvm.array<4 x i8>
  llvm.mlir.global internal @big_shared() {addr_space = 3 : i32, alignment = 4096 : i64} : !llvm.array<4 x i8>
  llvm.mlir.global internal @global_space() {addr_space = 1 : i32, alignment = 16 : i64} : !llvm.array<4 x i8>
  llvm.func @k(%a: !llvm.ptr, %n: i64, %qmap: !llvm.ptr, %kmap: !llvm.ptr) attributes {fa.tensor_map_params = 2 : i64, nvvm.kernel} {
    llvm.return
  }
}

// -----

// Negative: no kernel with the attribute, so nothing changes (the 16-byte
// workgroup global keeps its alignment, pointer arguments stay plain).
// CHECK-LABEL: gpu.module @no_tma
// CHECK: llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64}
// CHECK: llvm.func @k(%arg0: !llvm.ptr, %arg1: !llvm.ptr) attributes {nvvm.kernel}
gpu.module @no_tma {
  llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  llvm.func @k(%a: !llvm.ptr, %m: !llvm.ptr) attributes {nvvm.kernel} {
    llvm.return
  }
}

// -----

// Zero tensor maps: the attribute goes, no argument changes.
// CHECK-LABEL: gpu.module @zero
// CHECK: llvm.func @k(%arg0: !llvm.ptr) attributes {nvvm.kernel}
gpu.module @zero {
  llvm.func @k(%a: !llvm.ptr) attributes {fa.tensor_map_params = 0 : i64, nvvm.kernel} {
    llvm.return
  }
}

// -----

gpu.module @not_kernel {
  // expected-error @+1 {{fa-lower-tensor-map-params: 'fa.tensor_map_params' on 'f', which is not a kernel (no 'nvvm.kernel'): only kernel parameters can be grid constants}}
  llvm.func @f(%a: !llvm.ptr) attributes {fa.tensor_map_params = 1 : i64} {
    llvm.return
  }
}

// -----

gpu.module @too_many {
  // expected-error @+1 {{fa-lower-tensor-map-params: expected 'fa.tensor_map_params' on 'k' to be an integer in [0, 1] (the number of tensor-map arguments that close the argument list), got 2 : i64}}
  llvm.func @k(%a: !llvm.ptr) attributes {fa.tensor_map_params = 2 : i64, nvvm.kernel} {
    llvm.return
  }
}

// -----

gpu.module @negative {
  // expected-error @+1 {{fa-lower-tensor-map-params: expected 'fa.tensor_map_params' on 'k' to be an integer in [0, 1] (the number of tensor-map arguments that close the argument list), got -1 : i64}}
  llvm.func @k(%a: !llvm.ptr) attributes {fa.tensor_map_params = -1 : i64, nvvm.kernel} {
    llvm.return
  }
}

// -----

gpu.module @not_integer {
  // expected-error @+1 {{fa-lower-tensor-map-params: expected 'fa.tensor_map_params' on 'k' to be an integer in [0, 1] (the number of tensor-map arguments that close the argument list), got "q"}}
  llvm.func @k(%a: !llvm.ptr) attributes {fa.tensor_map_params = "q", nvvm.kernel} {
    llvm.return
  }
}

// -----

gpu.module @not_pointer {
  // expected-error @+1 {{fa-lower-tensor-map-params: expected argument 1 of 'k' (a tensor map) to be a generic !llvm.ptr, got 'i64'}}
  llvm.func @k(%a: !llvm.ptr, %n: i64) attributes {fa.tensor_map_params = 1 : i64, nvvm.kernel} {
    llvm.return
  }
}

// -----

gpu.module @global_pointer {
  // expected-error @+1 {{fa-lower-tensor-map-params: expected argument 0 of 'k' (a tensor map) to be a generic !llvm.ptr, got '!llvm.ptr<1>'}}
  llvm.func @k(%a: !llvm.ptr<1>) attributes {fa.tensor_map_params = 1 : i64, nvvm.kernel} {
    llvm.return
  }
}

// -----

gpu.module @other_byval {
  // expected-error @+1 {{fa-lower-tensor-map-params: argument 0 of 'k' (a tensor map) is already by-value of another type: i32}}
  llvm.func @k(%a: !llvm.ptr {llvm.byval = i32}) attributes {fa.tensor_map_params = 1 : i64, nvvm.kernel} {
    llvm.return
  }
}

// -----

// Before convert-gpu-to-nvvm: a gpu.func carrying the attribute is an error,
// not silently left alone.
gpu.module @too_early {
  // expected-error @+1 {{fa-lower-tensor-map-params: 'fa.tensor_map_params' on 'gpu.func': the pass lowers llvm.func kernels, so run it after convert-gpu-to-nvvm}}
  gpu.func @k(%a: !llvm.ptr) kernel attributes {fa.tensor_map_params = 1 : i64} {
    gpu.return
  }
}

// -----

// A declaration (no body) is lowered like a definition.
// CHECK-LABEL: gpu.module @declaration
// CHECK: llvm.func @k(!llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}) attributes {nvvm.kernel}
gpu.module @declaration {
  llvm.func @k(!llvm.ptr) attributes {fa.tensor_map_params = 1 : i64, nvvm.kernel}
}

// -----

// Outside any gpu.module (only the whole-module run reaches it).
// TOP-LABEL: llvm.func @top(
// TOP-SAME: %arg0: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}) attributes {nvvm.kernel}
llvm.func @top(%a: !llvm.ptr) attributes {fa.tensor_map_params = 1 : i64, nvvm.kernel} {
  llvm.return
}
