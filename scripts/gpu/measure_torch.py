#!/usr/bin/env python3
"""Measures, on a real NVIDIA GPU, what the roofline backend of `plan profile` estimates.

Not part of the build or the tests: it needs PyTorch, torchvision and a CUDA device, which CI
does not have. Run it where a GPU is at hand and compare its JSON with the roofline estimates
of the same GPU (profiler/roofline/CALIBRATION.md, "Measured on a GPU"):

    python3 scripts/gpu/measure_torch.py [cnn] [cnn-unfolded] [llm] [link] > measured.json

CNNs: the torchvision builds of zoo architectures with random weights (timing does not depend
on the values), TF32 convolutions and matmuls (the roofline is calibrated to TF32 TensorRT
engines), channels-last, cuDNN autotuning, and each forward captured in a CUDA graph so that
launch overhead does not count, as in TensorRT, and BatchNorm folded into the convolutions
(cnn-unfolded: as eager PyTorch runs them). Reported: the median of 50 graph replays.

LLMs: Llama-shaped decoders (the architectures of profiler/llm's mistral-7b and vicuna-13b,
SHAPES) in bf16 with random weights,
written out layer by layer: the matmuls and the attention are what an engine such as vLLM
runs. Prefill: one sequence of N tokens, causal flash attention. Decode: one new token for
each of B sequences over a preallocated KV cache of C tokens each, captured in a CUDA graph
(vLLM captures decode steps in graphs too).

link: host↔GPU copy bandwidth (a warm model start loads the weights from host memory; a KV
swap moves caches both ways), which the LLM profiles' load_warm_us assumes.
"""
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def timed_graph(fn, reps=50, warm=5):
    """Median ms of fn captured in a CUDA graph."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warm):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def fold_bn(m):
    """Folds every BatchNorm that follows a convolution into it (torch.fx), as TensorRT does
    when it builds an engine; eager PyTorch would otherwise launch a kernel per BatchNorm."""
    from torch.fx.experimental.optimization import fuse

    try:
        return fuse(m)
    except Exception as e:  # models fx cannot trace stay as they are
        print(f"fold_bn: {type(m).__name__}: {e}", file=sys.stderr)
        return m


def cnns(batches, fold=True):
    import torchvision.models as tv

    zoo = {
        "resnet50": (tv.resnet50, 224),
        "resnet101": (tv.resnet101, 224),
        "wide-resnet101-2": (tv.wide_resnet101_2, 224),
        "efficientnet-b0": (tv.efficientnet_b0, 224),
        "convnext-l": (tv.convnext_large, 224),
        "inception-v3": (lambda: tv.inception_v3(aux_logits=False, init_weights=False), 299),
    }
    out = []
    for name, (build, hw) in zoo.items():
        m = build().cuda().eval()
        if fold:
            m = fold_bn(m)
        m = m.to(memory_format=torch.channels_last)
        for b in batches:
            x = torch.randn(b, 3, hw, hw, device="cuda").to(memory_format=torch.channels_last)
            with torch.inference_mode():
                ms = timed_graph(lambda: m(x))
            out.append({"model": name, "batch": b, "ms": round(ms, 4)})
            print(f"cnn {name} b={b}: {ms:.3f} ms", file=sys.stderr)
        del m
        torch.cuda.empty_cache()
    return out


class Decoder:
    """Weights of a Llama/Mistral-shaped decoder (bf16, random)."""

    def __init__(self, layers=32, d=4096, heads=32, kv_heads=8, mlp=14336, vocab=32000):
        self.d, self.h, self.kvh, self.hd = d, heads, kv_heads, d // heads
        dev, dt = "cuda", torch.bfloat16

        def w(*shape):
            return (torch.randn(*shape, device=dev, dtype=dt) * 0.02)

        self.layers = []
        for _ in range(layers):
            self.layers.append({
                "qkv": w(d + 2 * kv_heads * self.hd, d),
                "o": w(d, d),
                "gate_up": w(2 * mlp, d),
                "down": w(d, mlp),
                "n1": torch.ones(d, device=dev, dtype=dt),
                "n2": torch.ones(d, device=dev, dtype=dt),
            })
        self.emb = w(vocab, d)
        self.head = w(vocab, d)

    def params(self):
        n = self.emb.numel() + self.head.numel()
        for L in self.layers:
            n += sum(t.numel() for t in L.values())
        return n

    def forward(self, ids, k_cache=None, v_cache=None, pos=None):
        """ids: [B, T]. Without caches: causal prefill. With caches [layers][B, kvh, C+1, hd]:
        one decode token per sequence at position pos, attending to the whole cache."""
        B, T = ids.shape
        x = F.embedding(ids, self.emb)
        for i, L in enumerate(self.layers):
            h = F.rms_norm(x, (self.d,), L["n1"])
            qkv = h @ L["qkv"].t()
            q, k, v = qkv.split([self.d, self.kvh * self.hd, self.kvh * self.hd], dim=-1)
            q = q.view(B, T, self.h, self.hd).transpose(1, 2)
            k = k.view(B, T, self.kvh, self.hd).transpose(1, 2)
            v = v.view(B, T, self.kvh, self.hd).transpose(1, 2)
            if k_cache is None:
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            else:
                k_cache[i][:, :, pos:pos + 1] = k
                v_cache[i][:, :, pos:pos + 1] = v
                a = F.scaled_dot_product_attention(q, k_cache[i], v_cache[i], enable_gqa=True)
            x = x + a.transpose(1, 2).reshape(B, T, self.d) @ L["o"].t()
            h = F.rms_norm(x, (self.d,), L["n2"])
            gu = h @ L["gate_up"].t()
            g, u = gu.chunk(2, dim=-1)
            x = x + (F.silu(g) * u) @ L["down"].t()
        # vLLM computes logits for the last token of each sequence only.
        return x[:, -1] @ self.head.t()


# The shapes of profiler/llm's models that fit one 80 GB GPU in bf16.
SHAPES = {
    "mistral-7b": dict(layers=32, d=4096, heads=32, kv_heads=8, mlp=14336, vocab=32000),
    "vicuna-13b": dict(layers=40, d=5120, heads=40, kv_heads=40, mlp=13824, vocab=32000),
}


def llm(name, prefill_tokens, decode_batches, contexts):
    m = Decoder(**SHAPES[name])
    res = {"model": name, "params_billion": round(m.params() / 1e9, 3), "prefill": [], "decode": []}
    with torch.inference_mode():
        for n in prefill_tokens:
            ids = torch.randint(0, 32000, (1, n), device="cuda")
            ms = timed_graph(lambda: m.forward(ids), reps=20)
            res["prefill"].append({"tokens": n, "ms": round(ms, 4)})
            print(f"llm {name} prefill {n}: {ms:.3f} ms", file=sys.stderr)
        for context in contexts:
            for b in decode_batches:
                kv_bytes = 2 * len(m.layers) * b * m.kvh * context * m.hd * 2
                if kv_bytes > 40e9:
                    continue
                kc = [torch.zeros(b, m.kvh, context, m.hd, device="cuda", dtype=torch.bfloat16) for _ in m.layers]
                vc = [torch.zeros(b, m.kvh, context, m.hd, device="cuda", dtype=torch.bfloat16) for _ in m.layers]
                ids = torch.randint(0, 32000, (b, 1), device="cuda")
                ms = timed_graph(lambda: m.forward(ids, kc, vc, context - 1), reps=30)
                res["decode"].append({"batch": b, "context": context, "ms": round(ms, 4)})
                print(f"llm {name} decode b={b} ctx={context}: {ms:.3f} ms", file=sys.stderr)
                del kc, vc
                torch.cuda.empty_cache()
    del m
    torch.cuda.empty_cache()
    return res


def host_link(total_gb=14.48, chunk_gb=1.0):
    """Host↔GPU copy bandwidth, GB/s: what a warm model start (weights from host memory) and
    a KV-cache swap cost. Pinned host memory in 1 GB chunks, as engines stage weights."""
    n = int(chunk_gb * 1e9) // 2
    host = torch.empty(n, dtype=torch.bfloat16, pin_memory=True)
    pageable = torch.empty(n, dtype=torch.bfloat16)
    dev = torch.empty(n, dtype=torch.bfloat16, device="cuda")
    chunks = int(round(total_gb / chunk_gb))
    res = {"bytes": chunks * n * 2}
    for name, src, dst in (("h2d_pinned", host, dev), ("d2h_pinned", dev, host), ("h2d_pageable", pageable, dev)):
        dst.copy_(src, non_blocking=True)
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(chunks):
            dst.copy_(src, non_blocking=True)
        torch.cuda.synchronize()
        s = time.perf_counter() - t
        res[name + "_gbps"] = round(chunks * n * 2 / s / 1e9, 2)
        print(f"host link {name}: {res[name + '_gbps']} GB/s", file=sys.stderr)
    return res


def main():
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cudnn.benchmark = True
    t0 = time.time()
    out = {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
    }
    parts = sys.argv[1:] or ["cnn", "llm"]
    if "cnn" in parts:
        out["cnn"] = cnns([1, 2, 4, 8])
    if "cnn-unfolded" in parts:
        out["cnn_unfolded"] = cnns([1, 8], fold=False)
    if "link" in parts:
        out["host_link"] = host_link()
    if "llm" in parts:
        out["llm"] = [llm(n, [1, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192], [1, 16, 64, 128, 256], [512, 2048])
                      for n in SHAPES]
    out["seconds"] = round(time.time() - t0, 1)
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
