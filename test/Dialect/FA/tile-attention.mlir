// RUN: fa-opt %s --fa-tile-attention="block-m=32 block-n=16" --canonicalize --cse --split-input-file | FileCheck %s

// The non-causal tiling: a batch loop, a query-block loop, a key-block loop
// carrying (m, l, acc), and the online-softmax update.

// CHECK-LABEL: func.func @tile_bf16_lse
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<2x100x32xbf16>, %[[K:[a-zA-Z0-9_]+]]: tensor<2x90x32xbf16>, %[[V:[a-zA-Z0-9_]+]]: tensor<2x90x24xbf16>)
// CHECK-DAG: %[[NEG_INF:[a-zA-Z0-9_]+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[SCALE:[a-zA-Z0-9_]+]] = arith.constant 2.500000e-01 : f32
// CHECK-DAG: %[[BM:[a-zA-Z0-9_]+]] = arith.constant 32 : index
// CHECK-DAG: %[[BN:[a-zA-Z0-9_]+]] = arith.constant 16 : index
// CHECK: %[[O_INIT:[a-zA-Z0-9_]+]] = tensor.empty() : tensor<2x100x24xbf16>
// CHECK: %[[LSE_INIT:[a-zA-Z0-9_]+]] = tensor.empty() : tensor<2x100xf32>
// CHECK: scf.for %[[B:[a-zA-Z0-9_]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %[[O_INIT]], %{{.+}} = %[[LSE_INIT]])
// CHECK: scf.for %[[I0:[a-zA-Z0-9_]+]] = %{{.+}} to %{{.+}} step %[[BM]]
// CHECK: %[[ROWS:[a-zA-Z0-9_]+]] = arith.minsi %{{.+}}, %[[BM]] : index
// CHECK: %[[QT:[a-zA-Z0-9_]+]] = tensor.extract_slice %[[Q]][%[[B]], %[[I0]], 0] [1, %[[ROWS]], 32] [1, 1, 1] : tensor<2x100x32xbf16> to tensor<?x32xbf16>
// CHECK: %[[M0:[a-zA-Z0-9_]+]] = linalg.fill ins(%[[NEG_INF]] : f32) outs(%{{.+}} : tensor<?xf32>)
// CHECK: %[[KV:[a-zA-Z0-9_]+]]:3 = scf.for %[[J0:[a-zA-Z0-9_]+]] = %{{.+}} to %{{.+}} step %[[BN]] iter_args(%[[M:[a-zA-Z0-9_]+]] = %[[M0]], %[[L:[a-zA-Z0-9_]+]] = %{{.+}}, %[[ACC:[a-zA-Z0-9_]+]] = %{{.+}}) -> (tensor<?xf32>, tensor<?xf32>, tensor<?x24xf32>)
// CHECK: %[[KT:[a-zA-Z0-9_]+]] = tensor.extract_slice %[[K]][%[[B]], %[[J0]], 0]
// CHECK: %[[VT:[a-zA-Z0-9_]+]] = tensor.extract_slice %[[V]][%[[B]], %[[J0]], 0]
//   s = q k^T, f32 accumulation
// CHECK: %[[S:[a-zA-Z0-9_]+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[QT]], %[[KT]] : tensor<?x32xbf16>, tensor<?x32xbf16>)
// CHECK: arith.extf
// CHECK: arith.extf
// CHECK: arith.mulf
// CHECK: arith.addf
//   scale, and no causal mask
// CHECK-NOT: linalg.index
// CHECK: %[[SS:[a-zA-Z0-9_]+]] = linalg.generic {{.+}} ins(%[[S]] : tensor<?x?xf32>)
// CHECK: arith.mulf %{{.+}}, %[[SCALE]]
//   m' = max(m, rowmax(s)), reducing into m
// CHECK: %[[MNEW:[a-zA-Z0-9_]+]] = linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]} ins(%[[SS]] : tensor<?x?xf32>) outs(%[[M]] : tensor<?xf32>)
// CHECK: arith.maximumf
//   alpha = m == -inf ? 0 : exp(m - m')
// CHECK: %[[ALPHA:[a-zA-Z0-9_]+]] = linalg.generic {{.+}} ins(%[[M]], %[[MNEW]] : tensor<?xf32>, tensor<?xf32>)
// CHECK: %[[FIRST:[a-zA-Z0-9_]+]] = arith.cmpf oeq, %{{.+}}, %[[NEG_INF]]
// CHECK: %[[E:[a-zA-Z0-9_]+]] = math.exp
// CHECK: arith.select %[[FIRST]], %{{.+}}, %[[E]]
//   p = exp(s - m')
// CHECK: %[[P:[a-zA-Z0-9_]+]] = linalg.generic {{.+}} ins(%[[SS]], %[[MNEW]] : tensor<?x?xf32>, tensor<?xf32>)
// CHECK: math.exp
//   l' = alpha * l + rowsum(p)
// CHECK: %[[LS:[a-zA-Z0-9_]+]] = linalg.generic {{.+}} ins(%[[ALPHA]] : tensor<?xf32>) outs(%[[L]] : tensor<?xf32>)
// CHECK: %[[LNEW:[a-zA-Z0-9_]+]] = linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]} ins(%[[P]] : tensor<?x?xf32>) outs(%[[LS]] : tensor<?xf32>)
//   acc' = alpha * acc + p v
// CHECK: %[[AS:[a-zA-Z0-9_]+]] = linalg.generic {{.+}} ins(%[[ALPHA]] : tensor<?xf32>) outs(%[[ACC]] : tensor<?x24xf32>)
// CHECK: %[[ANEW:[a-zA-Z0-9_]+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[P]], %[[VT]] : tensor<?x?xf32>, tensor<?x24xbf16>) outs(%[[AS]] : tensor<?x24xf32>)
// CHECK: scf.yield %[[MNEW]], %[[LNEW]], %[[ANEW]]
//   o = acc / l in bf16, lse = m + log(l)
// CHECK: linalg.generic {{.+}} ins(%[[KV]]#2, %[[KV]]#1 : tensor<?x24xf32>, tensor<?xf32>)
// CHECK: arith.divf
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[%[[B]], %[[I0]], 0] [1, %[[ROWS]], 24] [1, 1, 1] : tensor<?x24xbf16> into tensor<2x100x24xbf16>
// CHECK: linalg.generic {{.+}} ins(%[[KV]]#0, %[[KV]]#1 : tensor<?xf32>, tensor<?xf32>)
// CHECK: math.log
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[%[[B]], %[[I0]]] [1, %[[ROWS]]] [1, 1] : tensor<?xf32> into tensor<2x100xf32>
// CHECK-NOT: fa.attention
func.func @tile_bf16_lse(%q: tensor<2x100x32xbf16>, %k: tensor<2x90x32xbf16>, %v: tensor<2x90x24xbf16>) -> (tensor<2x100x24xbf16>, tensor<2x100xf32>) {
  %o, %lse = fa.attention %q, %k, %v scale(0.25) : tensor<2x100x32xbf16>, tensor<2x90x32xbf16>, tensor<2x90x24xbf16> -> tensor<2x100x24xbf16>, tensor<2x100xf32>
  return %o, %lse : tensor<2x100x24xbf16>, tensor<2x100xf32>
}

// -----

// Causal, top-left: the key loop stops at min(i0 + rows, Tk); only a block
// with a key past the first row's diagonal (j0 + cols - 1 > i0) is masked
// element-wise.

// CHECK-LABEL: func.func @tile_causal_top_left
// CHECK-DAG: %[[TK:[a-zA-Z0-9_]+]] = arith.constant 90 : index
// CHECK: scf.for %[[I0:[a-zA-Z0-9_]+]] = %{{.+}} to %{{.+}} step %{{.+}}
// CHECK: %[[ROWS:[a-zA-Z0-9_]+]] = arith.minsi
// CHECK: %[[END:[a-zA-Z0-9_]+]] = arith.addi %[[I0]], %[[ROWS]] : index
// CHECK: %[[CLAMP:[a-zA-Z0-9_]+]] = arith.maxsi %[[END]], %{{.+}} : index
// CHECK: %[[KVEND:[a-zA-Z0-9_]+]] = arith.minsi %[[CLAMP]], %[[TK]] : index
// CHECK: scf.for %[[J0:[a-zA-Z0-9_]+]] = %{{.+}} to %[[KVEND]] step
// CHECK: %[[COLS:[a-zA-Z0-9_]+]] = arith.minsi %{{.+}}, %{{.+}} : index
// CHECK: %[[LAST:[a-zA-Z0-9_]+]] = arith.addi %[[J0]], %[[COLS]] : index
// CHECK: %[[LASTK:[a-zA-Z0-9_]+]] = arith.subi %[[LAST]], %{{.+}} : index
// CHECK: %[[STRADDLES:[a-zA-Z0-9_]+]] = arith.cmpi sgt, %[[LASTK]], %[[I0]] : index
// CHECK: scf.if %[[STRADDLES]] -> (tensor<?x?xf32>)
// CHECK: linalg.index 0
// CHECK: linalg.index 1
// CHECK: arith.cmpi sgt
// CHECK: arith.select
// CHECK: } else {
// CHECK-NOT: linalg.index
// CHECK: arith.mulf
// CHECK: scf.yield
func.func @tile_causal_top_left(%q: tensor<100x8xf32>, %k: tensor<90x8xf32>, %v: tensor<90x8xf32>) -> tensor<100x8xf32> {
  %o = fa.attention %q, %k, %v causal(top_left) : tensor<100x8xf32>, tensor<90x8xf32>, tensor<90x8xf32> -> tensor<100x8xf32>
  return %o : tensor<100x8xf32>
}

// -----

// Causal, bottom-right: the diagonal offset is Tk - Tq, read at run time for
// dynamic lengths.

// CHECK-LABEL: func.func @tile_causal_bottom_right_dynamic
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<?x?x64xf16>, %[[K:[a-zA-Z0-9_]+]]: tensor<?x?x64xf16>
// CHECK-DAG: %[[C1:[a-zA-Z0-9_]+]] = arith.constant 1 : index
// CHECK-DAG: %[[TQ:[a-zA-Z0-9_]+]] = tensor.dim %[[Q]], %[[C1]]
// CHECK-DAG: %[[TK:[a-zA-Z0-9_]+]] = tensor.dim %[[K]], %[[C1]]
// CHECK: %[[OFF:[a-zA-Z0-9_]+]] = arith.subi %[[TK]], %[[TQ]] : index
// CHECK: scf.for
// CHECK: scf.for %[[I0:[a-zA-Z0-9_]+]] =
// CHECK: %[[END0:[a-zA-Z0-9_]+]] = arith.addi %[[I0]], %{{.+}} : index
// CHECK: arith.addi %[[END0]], %[[OFF]] : index
// CHECK: %[[FIRSTVIS:[a-zA-Z0-9_]+]] = arith.addi %[[I0]], %[[OFF]] : index
// CHECK: arith.cmpi sgt, %{{.+}}, %[[FIRSTVIS]] : index
// CHECK: scf.if
func.func @tile_causal_bottom_right_dynamic(%q: tensor<?x?x64xf16>, %k: tensor<?x?x64xf16>, %v: tensor<?x?x64xf16>) -> tensor<?x?x64xf16> {
  %o = fa.attention %q, %k, %v causal(bottom_right) : tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16> -> tensor<?x?x64xf16>
  return %o : tensor<?x?x64xf16>
}

// -----

// The default scale of a dynamic head dim is computed at run time:
// rsqrt(D).

// CHECK-LABEL: func.func @tile_dynamic_head_dim_scale
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<?x?xf32>
// CHECK-DAG: %[[C1:[a-zA-Z0-9_]+]] = arith.constant 1 : index
// CHECK-DAG: %[[D:[a-zA-Z0-9_]+]] = tensor.dim %[[Q]], %[[C1]]
// CHECK: %[[DI:[a-zA-Z0-9_]+]] = arith.index_cast %[[D]] : index to i64
// CHECK: %[[DF:[a-zA-Z0-9_]+]] = arith.sitofp %[[DI]] : i64 to f32
// CHECK: %[[SCALE:[a-zA-Z0-9_]+]] = math.rsqrt %[[DF]] : f32
// CHECK: arith.mulf %{{.+}}, %[[SCALE]] : f32
func.func @tile_dynamic_head_dim_scale(%q: tensor<?x?xf32>, %k: tensor<?x?xf32>, %v: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %o = fa.attention %q, %k, %v : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %o : tensor<?x?xf32>
}

// -----

// A float mask is sliced per tile and added to the scaled scores; its
// broadcast batch dim reads index 0.

// CHECK-LABEL: func.func @tile_broadcast_float_mask
// CHECK-SAME: %[[MASK:[a-zA-Z0-9_]+]]: tensor<1x64x64xf32>
// CHECK: scf.for %[[B:[a-zA-Z0-9_]+]] =
// CHECK: scf.for %[[I0:[a-zA-Z0-9_]+]] =
// CHECK: scf.for %[[J0:[a-zA-Z0-9_]+]] =
// CHECK: %[[MT:[a-zA-Z0-9_]+]] = tensor.extract_slice %[[MASK]][0, %[[I0]], %[[J0]]]
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %[[MT]] : tensor<?x?xf32>, tensor<?x?xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @tile_broadcast_float_mask(%q: tensor<3x64x8xf32>, %k: tensor<3x64x8xf32>, %v: tensor<3x64x8xf32>, %m: tensor<1x64x64xf32>) -> tensor<3x64x8xf32> {
  %o = fa.attention %q, %k, %v mask(%m : tensor<1x64x64xf32>) : tensor<3x64x8xf32>, tensor<3x64x8xf32>, tensor<3x64x8xf32> -> tensor<3x64x8xf32>
  return %o : tensor<3x64x8xf32>
}

// -----

// A dynamic mask batch dim broadcasts when it is 1 at run time: the tile
// reads batch index select(dim == 1, 0, b).

// CHECK-LABEL: func.func @tile_dynamic_mask_batch
// CHECK-SAME: %[[MASK:[a-zA-Z0-9_]+]]: tensor<?x64x64xf32>
// CHECK: scf.for %[[B:[a-zA-Z0-9_]+]] =
// CHECK: scf.for %[[I0:[a-zA-Z0-9_]+]] =
// CHECK: scf.for %[[J0:[a-zA-Z0-9_]+]] =
// CHECK: %[[D:.+]] = tensor.dim %[[MASK]], %c0
// CHECK: %[[ONE:.+]] = arith.cmpi eq, %[[D]], %c1
// CHECK: %[[MB:.+]] = arith.select %[[ONE]], %c0, %[[B]] : index
// CHECK: %[[MT:[a-zA-Z0-9_]+]] = tensor.extract_slice %[[MASK]][%[[MB]], %[[I0]], %[[J0]]]
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %[[MT]] : tensor<?x?xf32>, tensor<?x?xf32>)
func.func @tile_dynamic_mask_batch(%q: tensor<3x64x8xf32>, %k: tensor<3x64x8xf32>, %v: tensor<3x64x8xf32>, %m: tensor<?x64x64xf32>) -> tensor<3x64x8xf32> {
  %o = fa.attention %q, %k, %v mask(%m : tensor<?x64x64xf32>) : tensor<3x64x8xf32>, tensor<3x64x8xf32>, tensor<3x64x8xf32> -> tensor<3x64x8xf32>
  return %o : tensor<3x64x8xf32>
}

// -----

// A declared result type more (or less) static than the operands imply: the
// tiled value is cast to it (the verifier accepts compatible shapes).

// CHECK-LABEL: func.func @tile_result_less_static
// CHECK: %[[T:[0-9a-z_]+]] = scf.for
// CHECK: %[[C:.+]] = tensor.cast %[[T]] : tensor<2x8x4xf32> to tensor<2x8x?xf32>
// CHECK: return %[[C]] : tensor<2x8x?xf32>
func.func @tile_result_less_static(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x?xf32> {
  %o = fa.attention %q, %k, %v : tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32> -> tensor<2x8x?xf32>
  return %o : tensor<2x8x?xf32>
}

// -----

// CHECK-LABEL: func.func @tile_result_more_static
// CHECK: %[[T:[0-9a-z_]+]]:2 = scf.for
// CHECK-DAG: %[[O:.+]] = tensor.cast %[[T]]#0 : tensor<?x8x?xf32> to tensor<2x8x4xf32>
// CHECK-DAG: %[[L:.+]] = tensor.cast %[[T]]#1 : tensor<?x8xf32> to tensor<2x8xf32>
// CHECK: return %[[O]], %[[L]] : tensor<2x8x4xf32>, tensor<2x8xf32>
func.func @tile_result_more_static(%q: tensor<?x8x4xf32>, %k: tensor<?x8x4xf32>, %v: tensor<?x8x?xf32>) -> (tensor<2x8x4xf32>, tensor<2x8xf32>) {
  %o, %lse = fa.attention %q, %k, %v : tensor<?x8x4xf32>, tensor<?x8x4xf32>, tensor<?x8x?xf32> -> tensor<2x8x4xf32>, tensor<2x8xf32>
  return %o, %lse : tensor<2x8x4xf32>, tensor<2x8xf32>
}

// -----

// Ops other than fa.attention are left untouched.

// CHECK-LABEL: func.func @no_attention_untouched
// CHECK-NEXT: %[[R:[a-zA-Z0-9_]+]] = linalg.matmul
// CHECK-NEXT: return %[[R]]
func.func @no_attention_untouched(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
