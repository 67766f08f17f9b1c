#!/usr/bin/env python3
"""Writes kubeconform schemas for built-in Kubernetes kinds from the Kubernetes OpenAPI v3
documents (api/openapi-spec/v3 of the k8s.io/kubernetes module zip): standalone (every $ref
inlined) and strict (additionalProperties false wherever an object lists its properties), as
kubeconform's own "-standalone-strict" schemas are, named <kind>_<version>.json as its
-schema-location template "{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json" expects.

usage: k8s-jsonschema.py SPEC_DIR OUT_DIR GROUP/VERSION/Kind...   (core group: v1/Kind)
"""
import json
import os
import sys

spec_dir, out_dir, kinds = sys.argv[1], sys.argv[2], sys.argv[3:]


def spec_file(gv):
    group, _, version = gv.rpartition("/")
    if not group:
        return "api__%s_openapi.json" % version
    return "apis__%s__%s_openapi.json" % (group.replace(".", "_"), version)


def convert(node, schemas, depth=0):
    if depth > 60:
        raise SystemExit("schema nests deeper than 60 levels")
    if isinstance(node, list):
        return [convert(x, schemas, depth + 1) for x in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return convert(schemas[node["$ref"].rsplit("/", 1)[1]], schemas, depth + 1)
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1:
        merged = dict(convert(all_of[0], schemas, depth + 1))
        for k, v in node.items():
            if k not in ("allOf", "default"):
                merged[k] = convert(v, schemas, depth + 1)
        return merged
    out = {}
    for k, v in node.items():
        if k in ("default", "x-kubernetes-group-version-kind", "description"):
            continue
        out[k] = convert(v, schemas, depth + 1) if k != "properties" else {p: convert(s, schemas, depth + 1) for p, s in v.items()}
    if out.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["oneOf"] = [{"type": "string"}, {"type": "integer"}]
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


os.makedirs(out_dir, exist_ok=True)
for k in kinds:
    gv, _, kind = k.rpartition("/")
    with open(os.path.join(spec_dir, spec_file(gv))) as f:
        schemas = json.load(f)["components"]["schemas"]
    group, _, version = gv.rpartition("/")
    name = None
    for n, s in schemas.items():
        for gvk in s.get("x-kubernetes-group-version-kind", []):
            if gvk.get("group", "") == group and gvk["version"] == version and gvk["kind"] == kind:
                name = n
    if name is None:
        raise SystemExit("%s: no schema in %s" % (k, spec_file(gv)))
    out = convert(schemas[name], schemas)
    with open(os.path.join(out_dir, "%s_%s.json" % (kind.lower(), version)), "w") as f:
        json.dump(out, f)
