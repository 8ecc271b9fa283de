// RUN: fa-opt %s --fa-tile-attention-backward="block-m=32 block-n=16" --canonicalize --cse --split-input-file | FileCheck %s

// The non-causal backward tiling: delta = rowsum(do * o) once; a batch loop
// and a key/value-block loop (outer) carrying the whole f32 dq and the dk,
// dv results; a query-block loop (inner) from row 0 carrying dq and the f32
// dk, dv accumulators of the key block; per tile p = exp(scale * q k^T - lse)
// (0 where lse = -inf), dv += p^T do, dp = do v^T, ds = scale * p * (dp -
// delta), dk += ds^T q, dq[rows] += ds k.

// CHECK-DAG: #[[ID3:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[ROW3:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[D0D2:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[D1D2:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[D2D0:.+]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG: #[[D2D1:.+]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-LABEL: func.func @tile_backward_bf16
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<2x100x32xbf16>, %[[K:[a-zA-Z0-9_]+]]: tensor<2x90x32xbf16>, %[[V:[a-zA-Z0-9_]+]]: tensor<2x90x24xbf16>, %[[O:[a-zA-Z0-9_]+]]: tensor<2x100x24xbf16>, %[[DO:[a-zA-Z0-9_]+]]: tensor<2x100x24xbf16>, %[[LSE:[a-zA-Z0-9_]+]]: tensor<2x100xf32>)
// CHECK-DAG: %[[NEG_INF:[a-zA-Z0-9_]+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[ZERO:[a-zA-Z0-9_]+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[SCALE:[a-zA-Z0-9_]+]] = arith.constant 2.500000e-01 : f32
// CHECK-DAG: %[[BM:[a-zA-Z0-9_]+]] = arith.constant 32 : index
// CHECK-DAG: %[[BN:[a-zA-Z0-9_]+]] = arith.constant 16 : index
// CHECK-DAG: %[[C0:[a-zA-Z0-9_]+]] = arith.constant 0 : index
// CHECK-DAG: %[[TQ:[a-zA-Z0-9_]+]] = arith.constant 100 : index
// CHECK-DAG: %[[TK:[a-zA-Z0-9_]+]] = arith.constant 90 : index
//   delta = rowsum(do * o), f32 [2, 100]
// CHECK: %[[DELTA:[a-zA-Z0-9_]+]] = linalg.generic {indexing_maps = [#[[ID3]], #[[ID3]], #[[ROW3]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[DO]], %[[O]] : tensor<2x100x24xbf16>, tensor<2x100x24xbf16>) outs(%{{.+}} : tensor<2x100xf32>)
//   the whole dq, f32, zero-filled; dk (f32 result) and dv (bf16 result)
// CHECK: %[[DQ_EMPTY:[a-zA-Z0-9_]+]] = tensor.empty() : tensor<2x100x32xf32>
// CHECK: %[[DQ0:[a-zA-Z0-9_]+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[DQ_EMPTY]] : tensor<2x100x32xf32>)
// CHECK: %[[DK_INIT:[a-zA-Z0-9_]+]] = tensor.empty() : tensor<2x90x32xf32>
// CHECK: %[[DV_INIT:[a-zA-Z0-9_]+]] = tensor.empty() : tensor<2x90x24xbf16>
// CHECK: %[[NEST:[a-zA-Z0-9_]+]]:3 = scf.for %[[B:[a-zA-Z0-9_]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %[[DQ0]], %{{.+}} = %[[DK_INIT]], %{{.+}} = %[[DV_INIT]])
//   key/value blocks outer
// CHECK: scf.for %[[J0:[a-zA-Z0-9_]+]] = %[[C0]] to %[[TK]] step %[[BN]] iter_args(%[[DQ_J:[a-zA-Z0-9_]+]] = %{{.+}}, %[[DK_OUT:[a-zA-Z0-9_]+]] = %{{.+}}, %[[DV_OUT:[a-zA-Z0-9_]+]] = %{{.+}}) -> (tensor<2x100x32xf32>, tensor<2x90x32xf32>, tensor<2x90x24xbf16>)
// CHECK: %[[COLS:[a-zA-Z0-9_]+]] = arith.minsi %{{.+}}, %[[BN]] : index
// CHECK: %[[KT:[a-zA-Z0-9_]+]] = tensor.extract_slice %[[K]][%[[B]], %[[J0]], 0] [1, %[[COLS]], 32] [1, 1, 1] : tensor<2x90x32xbf16> to tensor<?x32xbf16>
// CHECK: %[[VT:[a-zA-Z0-9_]+]] = tensor.extract_slice %[[V]][%[[B]], %[[J0]], 0] [1, %[[COLS]], 24] [1, 1, 1] : tensor<2x90x24xbf16> to tensor<?x24xbf16>
// CHECK: %[[DK0:[a-zA-Z0-9_]+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<?x32xf32>)
// CHECK: %[[DV0:[a-zA-Z0-9_]+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<?x24xf32>)
//   query blocks inner, from row 0
// CHECK: %[[QL:[a-zA-Z0-9_]+]]:3 = scf.for %[[I0:[a-zA-Z0-9_]+]] = %[[C0]] to %[[TQ]] step %[[BM]] iter_args(%[[DQ:[a-zA-Z0-9_]+]] = %[[DQ_J]], %[[DK:[a-zA-Z0-9_]+]] = %[[DK0]], %[[DV:[a-zA-Z0-9_]+]] = %[[DV0]]) -> (tensor<2x100x32xf32>, tensor<?x32xf32>, tensor<?x24xf32>)
// CHECK: %[[ROWS:[a-zA-Z0-9_]+]] = arith.minsi %{{.+}}, %[[BM]] : index
// CHECK: %[[QT:[a-zA-Z0-9_]+]] = tensor.extract_slice %[[Q]][%[[B]], %[[I0]], 0] [1, %[[ROWS]], 32]
// CHECK: %[[DOT:[a-zA-Z0-9_]+]] = tensor.extract_slice %[[DO]][%[[B]], %[[I0]], 0] [1, %[[ROWS]], 24]
// CHECK: %[[LSET:[a-zA-Z0-9_]+]] = tensor.extract_slice %[[LSE]][%[[B]], %[[I0]]] [1, %[[ROWS]]] [1, 1] : tensor<2x100xf32> to tensor<?xf32>
// CHECK: %[[DELTAT:[a-zA-Z0-9_]+]] = tensor.extract_slice %[[DELTA]][%[[B]], %[[I0]]] [1, %[[ROWS]]] [1, 1] : tensor<2x100xf32> to tensor<?xf32>
//   s = q k^T
// CHECK: %[[S:[a-zA-Z0-9_]+]] = linalg.generic {indexing_maps = [#[[D0D2]], #[[D1D2]], #[[ROW3]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[QT]], %[[KT]] : tensor<?x32xbf16>, tensor<?x32xbf16>) outs(%{{.+}} : tensor<?x?xf32>)
//   p = lse == -inf ? 0 : exp(scale * s - lse); no causal mask
// CHECK-NOT: linalg.index
// CHECK: %[[P:[a-zA-Z0-9_]+]] = linalg.generic {{.+}} ins(%[[S]], %[[LSET]] : tensor<?x?xf32>, tensor<?xf32>)
// CHECK: %[[SS:[a-zA-Z0-9_]+]] = arith.mulf %{{.+}}, %[[SCALE]] : f32
// CHECK: %[[SUB:[a-zA-Z0-9_]+]] = arith.subf %[[SS]], %[[L:[a-zA-Z0-9_]+]] : f32
// CHECK: %[[E:[a-zA-Z0-9_]+]] = math.exp %[[SUB]] : f32
// CHECK: %[[NOKEY:[a-zA-Z0-9_]+]] = arith.cmpf oeq, %[[L]], %[[NEG_INF]] : f32
// CHECK: arith.select %[[NOKEY]], %[[ZERO]], %[[E]] : f32
// CHECK-NOT: linalg.index
//   dv += p^T do
// CHECK: %[[DVN:[a-zA-Z0-9_]+]] = linalg.generic {indexing_maps = [#[[D2D0]], #[[D2D1]], #[[ROW3]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[P]], %[[DOT]] : tensor<?x?xf32>, tensor<?x24xbf16>) outs(%[[DV]] : tensor<?x24xf32>)
//   dp = do v^T
// CHECK: %[[DP:[a-zA-Z0-9_]+]] = linalg.generic {indexing_maps = [#[[D0D2]], #[[D1D2]], #[[ROW3]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[DOT]], %[[VT]] : tensor<?x24xbf16>, tensor<?x24xbf16>) outs(%{{.+}} : tensor<?x?xf32>)
//   ds = scale * p * (dp - delta)
// CHECK: %[[DS:[a-zA-Z0-9_]+]] = linalg.generic {{.+}} ins(%[[P]], %[[DP]], %[[DELTAT]] : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf32>)
// CHECK: arith.subf
// CHECK: arith.mulf %{{.+}}, %[[SCALE]] : f32
// CHECK: arith.mulf
//   dk += ds^T q
// CHECK: %[[DKN:[a-zA-Z0-9_]+]] = linalg.generic {indexing_maps = [#[[D2D0]], #[[D2D1]], #[[ROW3]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[DS]], %[[QT]] : tensor<?x?xf32>, tensor<?x32xbf16>) outs(%[[DK]] : tensor<?x32xf32>)
//   dq[rows] += ds k, in place in the whole dq
// CHECK: %[[DQT:[a-zA-Z0-9_]+]] = tensor.extract_slice %[[DQ]][%[[B]], %[[I0]], 0] [1, %[[ROWS]], 32] [1, 1, 1] : tensor<2x100x32xf32> to tensor<?x32xf32>
// CHECK: %[[DQTN:[a-zA-Z0-9_]+]] = linalg.generic {indexing_maps = [#[[D0D2]], #[[D2D1]], #[[ROW3]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[DS]], %[[KT]] : tensor<?x?xf32>, tensor<?x32xbf16>) outs(%[[DQT]] : tensor<?x32xf32>)
// CHECK: %[[DQN:[a-zA-Z0-9_]+]] = tensor.insert_slice %[[DQTN]] into %[[DQ]][%[[B]], %[[I0]], 0] [1, %[[ROWS]], 32] [1, 1, 1] : tensor<?x32xf32> into tensor<2x100x32xf32>
// CHECK: scf.yield %[[DQN]], %[[DKN]], %[[DVN]]
//   end of the key block: dv to bf16, dk and dv inserted
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK: %[[DK_INS:[a-zA-Z0-9_]+]] = tensor.insert_slice %[[QL]]#1 into %[[DK_OUT]][%[[B]], %[[J0]], 0] [1, %[[COLS]], 32] [1, 1, 1] : tensor<?x32xf32> into tensor<2x90x32xf32>
// CHECK: %[[DV_INS:[a-zA-Z0-9_]+]] = tensor.insert_slice %{{.+}} into %[[DV_OUT]][%[[B]], %[[J0]], 0] [1, %[[COLS]], 24] [1, 1, 1] : tensor<?x24xbf16> into tensor<2x90x24xbf16>
// CHECK: scf.yield %[[QL]]#0, %[[DK_INS]], %[[DV_INS]]
//   dq to bf16 after the loops
// CHECK: %[[DQ_BF16:[a-zA-Z0-9_]+]] = linalg.generic {{.+}} ins(%[[NEST]]#0 : tensor<2x100x32xf32>) outs(%{{.+}} : tensor<2x100x32xbf16>)
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK: return %[[DQ_BF16]], %[[NEST]]#1, %[[NEST]]#2 : tensor<2x100x32xbf16>, tensor<2x90x32xf32>, tensor<2x90x24xbf16>
// CHECK-NOT: fa.attention_backward
func.func @tile_backward_bf16(%q: tensor<2x100x32xbf16>, %k: tensor<2x90x32xbf16>, %v: tensor<2x90x24xbf16>, %o: tensor<2x100x24xbf16>, %do: tensor<2x100x24xbf16>, %lse: tensor<2x100xf32>) -> (tensor<2x100x32xbf16>, tensor<2x90x32xf32>, tensor<2x90x24xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse scale(0.25) : tensor<2x100x32xbf16>, tensor<2x90x32xbf16>, tensor<2x90x24xbf16>, tensor<2x100x24xbf16>, tensor<2x100x24xbf16>, tensor<2x100xf32> -> tensor<2x100x32xbf16>, tensor<2x90x32xf32>, tensor<2x90x24xbf16>
  return %dq, %dk, %dv : tensor<2x100x32xbf16>, tensor<2x90x32xf32>, tensor<2x90x24xbf16>
}

// -----

// Causal, bottom-right (offset Tk - Tq = -10): the query loop of key block
// j0 starts at clamp(j0 + 10, 0, Tq), the first row that sees key j0; only a
// tile whose last key is past its first row's diagonal
// (j0 + cols - 1 > i0 - 10) is masked element-wise.

// CHECK-LABEL: func.func @tile_backward_causal_bottom_right
// CHECK-DAG: %[[ZERO:[a-zA-Z0-9_]+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[C0:[a-zA-Z0-9_]+]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:[a-zA-Z0-9_]+]] = arith.constant 1 : index
// CHECK-DAG: %[[TQ:[a-zA-Z0-9_]+]] = arith.constant 100 : index
// CHECK-DAG: %[[OFF:[a-zA-Z0-9_-]+]] = arith.constant -10 : index
// CHECK: scf.for %[[B:[a-zA-Z0-9_]+]] = %[[C0]] to
// CHECK: scf.for %[[J0:[a-zA-Z0-9_]+]] = %[[C0]] to %{{.+}} step
// CHECK: %[[COLS:[a-zA-Z0-9_]+]] = arith.minsi
// CHECK: %[[FIRST:[a-zA-Z0-9_]+]] = arith.subi %[[J0]], %[[OFF]] : index
// CHECK: %[[CLAMP:[a-zA-Z0-9_]+]] = arith.maxsi %[[FIRST]], %[[C0]] : index
// CHECK: %[[QSTART:[a-zA-Z0-9_]+]] = arith.minsi %[[CLAMP]], %[[TQ]] : index
// CHECK: scf.for %[[I0:[a-zA-Z0-9_]+]] = %[[QSTART]] to %[[TQ]] step
// CHECK: %[[END:[a-zA-Z0-9_]+]] = arith.addi %[[J0]], %[[COLS]] : index
// CHECK: %[[LASTK:[a-zA-Z0-9_]+]] = arith.subi %[[END]], %[[C1]] : index
// CHECK: %[[DIAG:[a-zA-Z0-9_]+]] = arith.addi %[[I0]], %[[OFF]] : index
// CHECK: %[[STRADDLES:[a-zA-Z0-9_]+]] = arith.cmpi sgt, %[[LASTK]], %[[DIAG]] : index
// CHECK: %[[P:[a-zA-Z0-9_]+]] = scf.if %[[STRADDLES]] -> (tensor<?x?xf32>)
//   then: element-wise mask, key j0 + c hidden past query (i0 + r) - 10
// CHECK: math.exp
// CHECK: %[[R:[a-zA-Z0-9_]+]] = linalg.index 0 : index
// CHECK: %[[C:[a-zA-Z0-9_]+]] = linalg.index 1 : index
// CHECK: %[[QI:[a-zA-Z0-9_]+]] = arith.addi %[[I0]], %[[R]] : index
// CHECK: %[[KJ:[a-zA-Z0-9_]+]] = arith.addi %[[J0]], %[[C]] : index
// CHECK: %[[LAST:[a-zA-Z0-9_]+]] = arith.addi %[[QI]], %[[OFF]] : index
// CHECK: %[[HIDDEN:[a-zA-Z0-9_]+]] = arith.cmpi sgt, %[[KJ]], %[[LAST]] : index
// CHECK: arith.select %[[HIDDEN]], %[[ZERO]], %{{.+}} : f32
//   else: no mask
// CHECK: } else {
// CHECK-NOT: linalg.index
// CHECK: math.exp
// CHECK-NOT: linalg.index
// CHECK: scf.yield
// CHECK: }
// CHECK: linalg.generic {{.+}} ins(%[[P]], %{{.+}} : tensor<?x?xf32>, tensor<?x24xf32>)
func.func @tile_backward_causal_bottom_right(%q: tensor<2x100x32xf32>, %k: tensor<2x90x32xf32>, %v: tensor<2x90x24xf32>, %o: tensor<2x100x24xf32>, %do: tensor<2x100x24xf32>, %lse: tensor<2x100xf32>) -> (tensor<2x100x32xf32>, tensor<2x90x32xf32>, tensor<2x90x24xf32>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(bottom_right) : tensor<2x100x32xf32>, tensor<2x90x32xf32>, tensor<2x90x24xf32>, tensor<2x100x24xf32>, tensor<2x100x24xf32>, tensor<2x100xf32> -> tensor<2x100x32xf32>, tensor<2x90x32xf32>, tensor<2x90x24xf32>
  return %dq, %dk, %dv : tensor<2x100x32xf32>, tensor<2x90x32xf32>, tensor<2x90x24xf32>
}

// -----

// Dynamic sequence lengths and head dims, rank 2 (no batch dims), default
// scale 1/sqrt(D) computed at run time: the loops run to the tensor.dim
// values; the f32 results need no conversion.

// CHECK-LABEL: func.func @tile_backward_dynamic_rank2
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<?x?xf32>, %[[K:[a-zA-Z0-9_]+]]: tensor<?x?xf32>
// CHECK-DAG: %[[TQ:[a-zA-Z0-9_]+]] = tensor.dim %[[Q]], %{{.+}} : tensor<?x?xf32>
// CHECK-DAG: %[[TK:[a-zA-Z0-9_]+]] = tensor.dim %[[K]], %{{.+}} : tensor<?x?xf32>
// CHECK-DAG: math.rsqrt
// CHECK: %[[NEST:[a-zA-Z0-9_]+]]:3 = scf.for %{{.+}} = %{{.+}} to %[[TK]] step
// CHECK: scf.for %{{.+}} = %{{.+}} to %[[TQ]] step
// CHECK-NOT: arith.truncf
// CHECK: return %[[NEST]]#0, %[[NEST]]#1, %[[NEST]]#2 : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
func.func @tile_backward_dynamic_rank2(%q: tensor<?x?xf32>, %k: tensor<?x?xf32>, %v: tensor<?x?xf32>, %o: tensor<?x?xf32>, %do: tensor<?x?xf32>, %lse: tensor<?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf32> -> tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
  return %dq, %dk, %dv : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
}
