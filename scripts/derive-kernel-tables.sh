#!/bin/sh
# derive-kernel-tables.sh derives profiler/kerneltab/data from NVIDIA AIConfigurator's
# published vLLM kernel tables (../shared/data/kernels, Apache-2.0; provenance in
# profiler/kerneltab/data/NOTICE.md). It keeps what the dense LLM step model reads:
#   gemm                    bfloat16 and fp8 (per-tensor) rows, and B200's nvfp4: m, n, k,
#                           latency
#   context_attention       full attention (window_size 0): batch_size, isl, num_heads,
#                           num_key_value_heads, head_dim, kv_cache_dtype, latency
#   generation_attention    full attention: batch_size, num_heads, num_key_value_heads,
#                           head_dim, kv_cache_dtype, step, latency
#   custom_allreduce        graph and eager rows: kernel_source, num_gpus, message_size, latency
#   nccl                    half-precision rows: op_name, num_gpus, message_size, latency
#   moe                     vLLM 0.24.0 (A100: 0.14.0) fused-MoE rows under skewed routing
#                           (power_law_1.01: real routers are not uniform) of the weight
#                           dtypes the step model plans (bfloat16, fp8, w4a16_mxfp4, nvfp4):
#                           moe_dtype, num_tokens, hidden_size, inter_size, topk,
#                           num_experts, moe_tp_size, moe_ep_size, latency; and
#                           fp8_block (DeepSeek-style 128x128 block FP8)
#   mla_context_module,     DeepSeek-V3's whole attention block per layer (projections, MLA
#   mla_generation_module   kernel), BF16 compute, BF16 and block-FP8 projections: the
#                           fastest measured backend per shape (vLLM's backends are a
#                           choice): gemm_type, kv_cache_dtype, num_heads, batch_size,
#                           isl or step, latency (H100, H200, B200, L40S; none for A100)
# Columns the A100 tables drop as constant (head_dim 128, kv_cache_dtype bfloat16,
# gemm_dtype bfloat16) are written back so every GPU's files have one schema. Repeated
# measurements of one shape (A100 context attention) are averaged. Output is gzip -n (no
# name or time stamp), so the same input gives byte-identical files.
#
# Usage: scripts/derive-kernel-tables.sh [KERNELS_DIR] (default ../shared/data/kernels)
set -eu
src=${1:-../shared/data/kernels}
out=profiler/kerneltab/data
[ -f "$src/README.md" ] || { echo "derive-kernel-tables: $src: no kernel tables (README.md missing)" >&2; exit 2; }
mkdir -p "$out"
for sys in h100_sxm h200_sxm b200_sxm a100_sxm l40s; do
	# gemm: dtype,m,n,k,latency
	awk -F, -v OFS=, '
		NR==1 { for (i=1;i<=NF;i++) c[$i]=i; print "gemm_dtype,m,n,k,latency"; next }
		{ d = ("gemm_dtype" in c) ? $c["gemm_dtype"] : "bfloat16"
		  if (d=="bfloat16" || d=="fp8" || d=="nvfp4") print d,$c["m"],$c["n"],$c["k"],$c["latency"] }' \
		"$src/${sys}__gemm.csv" | gzip -9 -n >"$out/${sys}__gemm.csv.gz"
	# context attention, averaged over repeated keys
	awk -F, -v OFS=, '
		NR==1 { for (i=1;i<=NF;i++) c[$i]=i; print "batch_size,isl,num_heads,num_key_value_heads,head_dim,kv_cache_dtype,latency"; next }
		("window_size" in c) && $c["window_size"]!=0 { next }
		{ hd = ("head_dim" in c) ? $c["head_dim"] : 128; kd = ("kv_cache_dtype" in c) ? $c["kv_cache_dtype"] : "bfloat16"
		  key = $c["batch_size"] OFS $c["isl"] OFS $c["num_heads"] OFS $c["num_key_value_heads"] OFS hd OFS kd
		  if (!(key in n)) order[++nk]=key
		  s[key]+=$c["latency"]; n[key]++ }
		END { for (i=1;i<=nk;i++) { k=order[i]; printf "%s,%.5g\n", k, s[k]/n[k] } }' \
		"$src/${sys}__context_attention.csv" | gzip -9 -n >"$out/${sys}__context_attention.csv.gz"
	awk -F, -v OFS=, '
		NR==1 { for (i=1;i<=NF;i++) c[$i]=i; print "batch_size,num_heads,num_key_value_heads,head_dim,kv_cache_dtype,step,latency"; next }
		("window_size" in c) && $c["window_size"]!=0 { next }
		{ hd = ("head_dim" in c) ? $c["head_dim"] : 128; kd = ("kv_cache_dtype" in c) ? $c["kv_cache_dtype"] : "bfloat16"
		  print $c["batch_size"],$c["num_heads"],$c["num_key_value_heads"],hd,kd,$c["step"],$c["latency"] }' \
		"$src/${sys}__generation_attention.csv" | gzip -9 -n >"$out/${sys}__generation_attention.csv.gz"
	awk -F, -v OFS=, '
		NR==1 { for (i=1;i<=NF;i++) c[$i]=i; print "kernel_source,num_gpus,message_size,latency"; next }
		{ print $c["kernel_source"],$c["num_gpus"],$c["message_size"],$c["latency"] }' \
		"$src/${sys}__custom_allreduce.csv" | gzip -9 -n >"$out/${sys}__custom_allreduce.csv.gz"
	awk -F, -v OFS=, '
		NR==1 { for (i=1;i<=NF;i++) c[$i]=i; print "op_name,num_gpus,message_size,latency"; next }
		$c["nccl_dtype"]=="half" { print $c["op_name"],$c["num_gpus"],$c["message_size"],$c["latency"] }' \
		"$src/${sys}__nccl.csv" | gzip -9 -n >"$out/${sys}__nccl.csv.gz"
	awk -F, -v OFS=, '
		NR==1 { for (i=1;i<=NF;i++) c[$i]=i; print "moe_dtype,num_tokens,hidden_size,inter_size,topk,num_experts,moe_tp_size,moe_ep_size,latency"; next }
		("version" in c) && $c["version"]!="0.24.0" { next }
		$c["distribution"]!="power_law_1.01" { next }
		{ d = ("moe_dtype" in c) ? $c["moe_dtype"] : "bfloat16"
		  if (d=="bfloat16" || d=="fp8" || d=="fp8_block" || d=="w4a16_mxfp4" || d=="nvfp4")
			print d,$c["num_tokens"],$c["hidden_size"],$c["inter_size"],$c["topk"],$c["num_experts"],$c["moe_tp_size"],$c["moe_ep_size"],$c["latency"] }' \
		"$src/${sys}__moe.csv" | gzip -9 -n >"$out/${sys}__moe.csv.gz"
	for phase in context generation; do
		f="$src/${sys}__mla_${phase}_module.csv"
		[ -f "$f" ] || continue
		axis=isl
		[ "$phase" = generation ] && axis=step
		awk -F, -v OFS=, -v axis="$axis" '
			NR==1 { for (i=1;i<=NF;i++) c[$i]=i; print "gemm_type,kv_cache_dtype,num_heads,batch_size," axis ",latency"; next }
			("mla_dtype" in c) && $c["mla_dtype"]!="bfloat16" { next }
			{ g = $c["gemm_type"]; if (g!="bfloat16" && g!="fp8_block") next
			  kd = ("kv_cache_dtype" in c) ? $c["kv_cache_dtype"] : "bfloat16"
			  key = g OFS kd OFS $c["num_heads"] OFS $c["batch_size"] OFS $c[axis]
			  if (!(key in best)) { order[++nk]=key; best[key]=$c["latency"] }
			  else if ($c["latency"]+0 < best[key]+0) best[key]=$c["latency"] }
			END { for (i=1;i<=nk;i++) print order[i], best[order[i]] }' "$f" | gzip -9 -n >"$out/${sys}__mla_${phase}.csv.gz"
	done
done
du -cb "$out"/*.gz | tail -1
