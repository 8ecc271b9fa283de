// A converted module whose manifest holds a newline in a string value
// (`extra`): fa-export-kernels refuses it, since the manifest would gain
// a line of its own ("version 99").
module attributes {fa.manifests = {k = {batch = 1 : i64, batch_shape = [1], block_m = 128 : i64, block_n = 64 : i64, causal = "none", dtype = "f16", grid = ["ceil_div(seqlen_q,block_m)", "batch", "1"], has_lse = 0 : i64, head_dim = 64 : i64, head_dim_v = 64 : i64, kernel = "k", o_dtype = "f16", params = ["q", "k", "v", "o"], row_align = 16 : i64, scale = 1.250000e-01 : f32, seqlen_k = 128 : i64, seqlen_q = 128 : i64, shared_bytes = 18432 : i64, threads = 128 : i64, extra = "line\0Aversion 99"}}, gpu.container_module} {
  gpu.binary @k [#gpu.object<#nvvm.target<chip = "sm_80">, assembly = ".version 8.1\0A.target sm_80\0A.address_size 64\0A.visible .entry k(\0A\09.param .u64 k_param_0\0A)\0A{\0A\09ret;\0A}\0A">]
}
