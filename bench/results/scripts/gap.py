# What a small elementwise kernel costs inside a CUDA graph, alone and between GEMMs.
import json, os, torch
dev = 'cuda'
def graph_time(fns, reps=7):
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for f in fns[:8]: f()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for f in fns: f()
    g.replay(); torch.cuda.synchronize()
    st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(reps):
        st.record(); g.replay(); en.record(); torch.cuda.synchronize()
        ts.append(st.elapsed_time(en) * 1e3)
    ts.sort(); return ts[len(ts)//2]
out = {}
for b in [1, 8, 32, 128]:
    x = torch.randn(b, 4096, device=dev, dtype=torch.bfloat16)
    y = torch.empty_like(x)
    u = torch.randn(b, 2*14336, device=dev, dtype=torch.bfloat16)
    z = torch.empty(b, 14336, device=dev, dtype=torch.bfloat16)
    w = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    # distinct weights so the GEMMs stream from memory (32 MB each, 16 of them)
    ws = [torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16) for _ in range(16)]
    def add(): x.add_(1e-3)
    def norm(): torch.mul(x, torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype), out=y)
    def act():
        a, c = u.chunk(2, -1); torch.mul(torch.nn.functional.silu(a), c, out=z)
    gem = [lambda i=i: torch.mm(x, ws[i], out=y) for i in range(16)]
    n = 128
    r = {}
    r['add_alone_us'] = graph_time([add]*n) / n
    r['norm_alone_us'] = graph_time([norm]*n) / n
    r['act_alone_us'] = graph_time([act]*n) / n
    g_only = graph_time([gem[i % 16] for i in range(n)]) / n
    r['gemm_alone_us'] = g_only
    for name, f in [('add', add), ('norm', norm), ('act', act)]:
        seq = []
        for i in range(n):
            seq += [gem[i % 16], f]
        r[name + '_between_gemms_us'] = graph_time(seq) / n - g_only
    out[b] = r
    print(b, json.dumps(r), flush=True)
json.dump(out, open(os.path.join(os.environ.get('OUT', '/tmp'), 'gap.json'), 'w'), indent=1)
