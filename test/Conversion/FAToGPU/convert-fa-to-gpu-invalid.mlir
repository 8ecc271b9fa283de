// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu -verify-diagnostics
// RUN: not fa-opt %s -split-input-file -convert-fa-to-gpu="block-m=2048" 2>&1 | FileCheck %s --check-prefix=BLOCKM
// RUN: not fa-opt %s -split-input-file -convert-fa-to-gpu="max-shared-bytes=0" 2>&1 | FileCheck %s --check-prefix=SMEM
// SMEM: error: convert-fa-to-gpu: expected a positive max-shared-bytes (bytes of workgroup memory per block), got 0

// BLOCKM: error: 'fa.attention' op expected block-m in [1, 1024], or 0 for the default of the head dim, got 2048

// RUN: not fa-opt %s -split-input-file -convert-fa-to-gpu="block-n=2048" 2>&1 | FileCheck %s --check-prefix=BLOCKN
// BLOCKN: error: 'fa.attention_backward' op expected block-n in [1, 1024], or 0 for the default, got 2048

// The forward bounds block-n too: a huge one once overflowed the tensor-core
// kernel's workgroup-memory size (and hung or crashed building its copies).
// RUN: not fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=true block-n=1152921504606846976" 2>&1 | FileCheck %s --check-prefix=HUGEN
// HUGEN: error: 'fa.attention' op expected block-n in [1, 1024], or 0 for the default of the head dim, got 1152921504606846976

func.func @mask_rejected(%q: tensor<2x128x64xf16>, %k: tensor<2x128x64xf16>,
                         %v: tensor<2x128x64xf16>, %m: tensor<2x128x128xi1>)
    -> tensor<2x128x64xf16> {
  // expected-error @below {{fa-to-ptx does not support the mask operand yet}}
  %o = fa.attention %q, %k, %v mask(%m : tensor<2x128x128xi1>)
      : tensor<2x128x64xf16>, tensor<2x128x64xf16>, tensor<2x128x64xf16>
      -> tensor<2x128x64xf16>
  return %o : tensor<2x128x64xf16>
}

// -----

func.func @dynamic_head_dim(%q: tensor<2x128x?xf16>, %k: tensor<2x128x?xf16>,
                            %v: tensor<2x128x64xf16>) -> tensor<2x128x64xf16> {
  // expected-error @below {{fa-to-ptx expects static head dims, got D = ? and Dv = 64}}
  %o = fa.attention %q, %k, %v scale(0.125)
      : tensor<2x128x?xf16>, tensor<2x128x?xf16>, tensor<2x128x64xf16>
      -> tensor<2x128x64xf16>
  return %o : tensor<2x128x64xf16>
}

// -----

// expected-error @below {{convert-fa-to-gpu erases the host function @host_with_other_ops, expected it to hold only fa.attention, fa.attention_backward, constants and func.return, got 'arith.addf'}}
func.func @host_with_other_ops(%q: tensor<128x64xf32>, %k: tensor<128x64xf32>,
                               %v: tensor<128x64xf32>) -> tensor<128x64xf32> {
  %o = fa.attention %q, %k, %v
      : tensor<128x64xf32>, tensor<128x64xf32>, tensor<128x64xf32>
      -> tensor<128x64xf32>
  %r = arith.addf %o, %o : tensor<128x64xf32>
  return %r : tensor<128x64xf32>
}

// -----

// expected-error @below {{convert-fa-to-gpu erases the host function @called_host, expected no uses of it}}
func.func @called_host(%q: tensor<128x64xf32>) -> tensor<128x64xf32> {
  %o = fa.attention %q, %q, %q
      : tensor<128x64xf32>, tensor<128x64xf32>, tensor<128x64xf32>
      -> tensor<128x64xf32>
  return %o : tensor<128x64xf32>
}

func.func @caller(%q: tensor<128x64xf32>) -> tensor<128x64xf32> {
  %o = func.call @called_host(%q) : (tensor<128x64xf32>) -> tensor<128x64xf32>
  return %o : tensor<128x64xf32>
}

// -----

func.func @name_clash(%q: tensor<128x64xf32>) -> tensor<128x64xf32> {
  // expected-error @below {{expected no symbol named @name_clash_attention_0 (the kernel name) in the module}}
  %o = fa.attention %q, %q, %q
      : tensor<128x64xf32>, tensor<128x64xf32>, tensor<128x64xf32>
      -> tensor<128x64xf32>
  return %o : tensor<128x64xf32>
}

func.func private @name_clash_attention_0()

// -----

func.func @backward_dynamic_head_dim(%q: tensor<2x128x?xf16>, %k: tensor<2x128x?xf16>,
                                     %v: tensor<2x128x64xf16>, %o: tensor<2x128x64xf16>,
                                     %do: tensor<2x128x64xf16>, %lse: tensor<2x128xf32>)
    -> (tensor<2x128x?xf16>, tensor<2x128x?xf16>, tensor<2x128x64xf16>) {
  // expected-error @below {{fa-to-ptx expects static head dims, got D = ? and Dv = 64}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse scale(0.125)
      : tensor<2x128x?xf16>, tensor<2x128x?xf16>, tensor<2x128x64xf16>,
        tensor<2x128x64xf16>, tensor<2x128x64xf16>, tensor<2x128xf32>
     -> tensor<2x128x?xf16>, tensor<2x128x?xf16>, tensor<2x128x64xf16>
  return %dq, %dk, %dv : tensor<2x128x?xf16>, tensor<2x128x?xf16>, tensor<2x128x64xf16>
}

// -----

// One f32 row of D = Dv = 8192 is 64 KiB: no backward tile fits in 48 KiB.
func.func @backward_head_dim_too_large(%q: tensor<4x8192xf32>, %k: tensor<4x8192xf32>,
                                       %v: tensor<4x8192xf32>, %o: tensor<4x8192xf32>,
                                       %do: tensor<4x8192xf32>, %lse: tensor<4xf32>)
    -> (tensor<4x8192xf32>, tensor<4x8192xf32>, tensor<4x8192xf32>) {
  // expected-error @below {{expected the backward tiles of one query and one key row (98316 bytes) to fit in 49152 bytes of shared memory, got D = 8192 and Dv = 8192}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse
      : tensor<4x8192xf32>, tensor<4x8192xf32>, tensor<4x8192xf32>,
        tensor<4x8192xf32>, tensor<4x8192xf32>, tensor<4xf32>
     -> tensor<4x8192xf32>, tensor<4x8192xf32>, tensor<4x8192xf32>
  return %dq, %dk, %dv : tensor<4x8192xf32>, tensor<4x8192xf32>, tensor<4x8192xf32>
}

// -----

// Two function names that become the same kernel name.
func.func @"a.b"(%q: tensor<2x16x64xf32>) -> tensor<2x16x64xf32> {
  %o = fa.attention %q, %q, %q
      : tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>
      -> tensor<2x16x64xf32>
  return %o : tensor<2x16x64xf32>
}

func.func @a_b(%q: tensor<2x16x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @below {{expected a kernel name of its own, but the kernels of @a_b and @a.b are both named @a_b_attention_0}}
  %o = fa.attention %q, %q, %q
      : tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>
      -> tensor<2x16x64xf32>
  return %o : tensor<2x16x64xf32>
}

// -----

// Static batch dims whose product overflows int64 (4294967296^2 = 2^64).
func.func @batch_overflow(%q: tensor<4294967296x4294967296x8x64xf32>,
                          %k: tensor<4294967296x4294967296x8x64xf32>,
                          %v: tensor<4294967296x4294967296x8x64xf32>)
    -> tensor<4294967296x4294967296x8x64xf32> {
  // expected-error @below {{expected the product of the batch dims to fit in 64 bits (at most 2^63 - 1)}}
  %o = fa.attention %q, %k, %v
      : tensor<4294967296x4294967296x8x64xf32>, tensor<4294967296x4294967296x8x64xf32>,
        tensor<4294967296x4294967296x8x64xf32> -> tensor<4294967296x4294967296x8x64xf32>
  return %o : tensor<4294967296x4294967296x8x64xf32>
}

// -----

func.func @batch_overflow_backward(
    %q: tensor<4294967296x4294967296x8x64xf32>, %k: tensor<4294967296x4294967296x8x64xf32>,
    %v: tensor<4294967296x4294967296x8x64xf32>, %o: tensor<4294967296x4294967296x8x64xf32>,
    %do: tensor<4294967296x4294967296x8x64xf32>, %lse: tensor<4294967296x4294967296x8xf32>)
    -> tensor<4294967296x4294967296x8x64xf32> {
  // expected-error @below {{expected the product of the batch dims to fit in 64 bits (at most 2^63 - 1)}}
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse
      : tensor<4294967296x4294967296x8x64xf32>, tensor<4294967296x4294967296x8x64xf32>,
        tensor<4294967296x4294967296x8x64xf32>, tensor<4294967296x4294967296x8x64xf32>,
        tensor<4294967296x4294967296x8x64xf32>, tensor<4294967296x4294967296x8xf32>
     -> tensor<4294967296x4294967296x8x64xf32>, tensor<4294967296x4294967296x8x64xf32>,
        tensor<4294967296x4294967296x8x64xf32>
  return %dq : tensor<4294967296x4294967296x8x64xf32>
}
