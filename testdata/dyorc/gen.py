#!/usr/bin/env python3
"""Generates the DyOrc bundled examples (spec §5.2 stand-ins). Run from testdata/dyorc."""
import json

def lin(l1, lmax, mb):
    per = (lmax - l1) / (mb - 1)
    return {"base_us": round((l1 - per) * 1000), "per_item_us": round(per * 1000)}

S = {}
S["vit"] = {"weights_gb": 0.6, "max_batch": 64, "latency": lin(14, 127, 64), "out_kb": 512, "out_kind": "tensor"}
# Language models' work varies with each call's output length: U(0.5, 1.5) of the profile's.
S["llm7b"] = {"weights_gb": 13.5, "max_batch": 32, "latency": lin(1600, 6600, 32), "out_kb": 2, "out_kind": "general", "work_spread": 0.5}
S["sd15"] = {"weights_gb": 2.2, "max_batch": 8, "latency": lin(2500, 12000, 8), "out_kb": 400, "out_kind": "general"}
NCARDS = 25
for k in range(NCARDS):
    S["card%02d" % k] = {"weights_gb": 2.6, "max_batch": 32, "latency": lin(900, 3200, 32), "out_kb": 2, "out_kind": "general", "work_spread": 0.5}
for name, gb, mb, l1 in [("det", 0.2, 32, 10), ("ocr", 0.4, 32, 30), ("cap", 1.0, 32, 200), ("upscale", 0.1, 8, 80)]:
    S[name] = {"weights_gb": gb, "max_batch": mb, "latency": lin(l1, 4 * l1, mb), "out_kb": 256, "out_kind": "tensor"}

H = sum(1 / (k + 1) for k in range(NCARDS))
zipf = {"card%02d" % k: 1 / ((k + 1) * H) for k in range(NCARDS)}
# round to 6 places and put the rounding error on the first card so the weights sum to 1
zipf = {k: round(v, 6) for k, v in zipf.items()}
zipf["card00"] = round(zipf["card00"] + 1 - sum(zipf.values()), 6)

APPS = {
 "gill": {"slo": "60s", "rate_rps": 2, "steps": [
    {"id": "enc", "svc": "vit", "when": "in.images>0", "p": 0.5},
    {"id": "llm", "svc": "llm7b", "after": ["enc?", "$in"]},
    {"id": "gen", "svc": "sd15", "after": ["llm"], "when": "llm.img_tokens>0", "p": 0.25}]},
 "kc": {"slo": "60s", "rate_rps": 2, "steps": [
    {"id": "ask", "svc": "llm7b", "after": ["$in"]},
    {"id": "card", "choice": zipf, "after": ["ask"], "when": "ask.need", "p": 0.6},
    {"id": "ans", "svc": "llm7b", "after": ["card?", "$in"]}]},
 "debate": {"slo": "120s", "rate_rps": 1, "loop": {"id": "round", "max_iter": 4, "until": "consensus",
    "p_stop": [0.6, 0.6, 0.7, 1.0],
    "body": [{"id": "agent", "svc": "llm7b", "fanout": 3, "after": ["round.prev*", "$in"]}]}},
 "image": {"slo": "5s", "rate_rps": 20, "steps": [
    {"id": "det", "svc": "det", "after": ["$in"]},
    {"id": "read", "choice": {"ocr": 0.4, "cap": 0.6}, "after": ["det"]},
    {"id": "up", "svc": "upscale", "after": ["read"], "when": "read.lowres", "p": 0.3}]},
}

def used(apps):
    out = set()
    for a in apps.values():
        steps = a.get("steps") or a["loop"]["body"]
        for s in steps:
            if "svc" in s: out.add(s["svc"])
            out.update(s.get("choice", {}).keys())
    return out

def workload(name, desc, apps):
    u = used(apps)
    return {"apiVersion": "plan/v1", "kind": "Workload", "metadata": {"name": name, "description": desc},
            "workflows": {"services": {k: v for k, v in S.items() if k in u}, "apps": apps}}

def dump(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=2, sort_keys=False)
        f.write("\n")

dump("workload.json", workload("dyorc-mix", "DyOrc's applications (GILL, KnowledgeCard, Debate, image pipeline) sharing llm7b (MIX), spec §5.2 stand-ins", APPS))
for a in APPS:
    dump(a + ".json", workload("dyorc-" + a, "DyOrc application " + a + " alone (spec §5.2 stand-ins)", {a: APPS[a]}))
# The small example's rates are those its 4-GPU node serves within the SLOs: at GILL 2 and
# image 20 req/s (1.34x what DyOrc's capacity model gives 4 GPUs) plan solve predicts 96.4% of
# the image app within 5 s; at 1.2 and 12 req/s, 99.7% with headroom 1.25x.
small = {"gill": dict(APPS["gill"], rate_rps=1.2), "image": dict(APPS["image"], rate_rps=12)}
dump("small.json", workload("dyorc-small", "small DyOrc example: GILL and the image pipeline on one 4-GPU node", small))
dump("cluster.json", {"apiVersion": "plan/v1", "kind": "Cluster", "metadata": {"name": "a800-node",
      "description": "one node of 8 A800-80GB-like GPUs with NVLink (DyOrc spec §5.2)"},
      "gpus": [{"type": "A800", "count": 8, "per_server": 8, "memory_bytes": 85899345920}], "nic_gbps": 100})
dump("cluster-small.json", {"apiVersion": "plan/v1", "kind": "Cluster", "metadata": {"name": "a800-4",
      "description": "4 A800-80GB-like GPUs on one server"},
      "gpus": [{"type": "A800", "count": 4, "per_server": 4, "memory_bytes": 85899345920}], "nic_gbps": 100})
dump("cluster-32.json", {"apiVersion": "plan/v1", "kind": "Cluster", "metadata": {"name": "a800-32",
      "description": "4 nodes of 8 A800-80GB-like GPUs"},
      "gpus": [{"type": "A800", "count": 32, "per_server": 8, "memory_bytes": 85899345920}], "nic_gbps": 100})
