#!/usr/bin/env bash
# Checks every export of every golden plan with the targets' own tools:
#   - kubeconform -strict against KServe's CRDs (InferenceService, InferenceGraph) and KEDA's
#     (ScaledObject), turned into JSON Schemas by kubeconform's own openapi2jsonschema.py
#     (additionalProperties false wherever the CRD lists properties, so an unknown field
#     fails), and the built-in kinds of deploy/ (Deployment, Service, ConfigMap,
#     HorizontalPodAutoscaler v2) from Kubernetes' OpenAPI v3 documents through
#     scripts/k8s-jsonschema.py (standalone, strict);
#   - protoc --encode of every Triton config.pbtxt: protoc's text-format parser against
#     export/internal/tritonpb/model_config.proto (our subset of Triton's model_config.proto:
#     Triton's own file is not obtainable from the allowed sources; its Go module
#     github.com/triton-inference-server/common is not served by the Go module proxy).
# Ray Serve's config schema is pydantic code inside Ray (no package of it from the allowed
# sources): serve-config.yaml is checked by plan's own schema and run-time rules only.
#
# Tools, pinned, all from the allowed sources:
#   kubeconform  go install github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM
#   KServe CRDs  the Go module zip of github.com/kserve/kserve@$KSERVE (config/crd/full)
#   KEDA CRDs    the Go module zip of github.com/kedacore/keda/v2@$KEDA (config/crd/bases)
#   K8s OpenAPI  the Go module zip of k8s.io/kubernetes@$KUBERNETES (api/openapi-spec/v3)
#   converter    openapi2jsonschema.py from the kubeconform module zip (needs Debian python3-yaml)
#   protoc       Debian protobuf-compiler
# With --install the script installs the Go ones itself (.ci/run installs the Debian ones).
# Exit 0 when every file passes, 1 when one fails, 3 when a tool is missing (the Go test
# that runs this skips on 3 unless PLAN_REQUIRE_ALL=1).
set -euo pipefail
cd "$(dirname "$0")/.."
KUBECONFORM=v0.7.0
KSERVE=v0.15.2
KEDA=v2.17.2
KUBERNETES=v1.34.0
export PATH="$(go env GOPATH)/bin:$PATH"

if [ "${1:-}" = "--install" ]; then
  command -v kubeconform >/dev/null || go install "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM"
fi
missing=()
command -v kubeconform >/dev/null || missing+=("kubeconform (go install github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM)")
command -v protoc >/dev/null || missing+=("protoc (Debian protobuf-compiler)")
python3 -c 'import yaml' 2>/dev/null || missing+=("python3 with yaml (Debian python3-yaml)")
if [ ${#missing[@]} -gt 0 ]; then
  printf 'check-exports: missing %s\n' "${missing[@]}" >&2
  exit 3
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The modules' zips, through the Go module proxy, outside this module's go.mod.
modjson() {
  (cd "$work" && [ -f go.mod ] || (cd "$work" && go mod init check-exports >/dev/null 2>&1)
   cd "$work" && go mod download -json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
}
kserve_dir=$(modjson "github.com/kserve/kserve@$KSERVE")
kc_dir=$(modjson "github.com/yannh/kubeconform@$KUBECONFORM")
keda_dir=$(modjson "github.com/kedacore/keda/v2@$KEDA")
k8s_dir=$(modjson "k8s.io/kubernetes@$KUBERNETES")
mkdir -p "$work/schemas"
(cd "$work/schemas" && python3 "$kc_dir/scripts/openapi2jsonschema.py" \
  "$kserve_dir/config/crd/full/serving.kserve.io_inferenceservices.yaml" \
  "$kserve_dir/config/crd/full/serving.kserve.io_inferencegraphs.yaml" \
  "$keda_dir/config/crd/bases/keda.sh_scaledobjects.yaml" >/dev/null)
python3 scripts/k8s-jsonschema.py "$k8s_dir/api/openapi-spec/v3" "$work/schemas" \
  apps/v1/Deployment v1/Service v1/ConfigMap autoscaling/v2/HorizontalPodAutoscaler

# TAGS: the build tags (the Go test passes its own, so that the build reuses the packages
# compiled for it instead of compiling the solver's dependents again without them).
# -ldflags=-w: no DWARF (no debugger runs it), which halves the link (plan's 7.8 -> 3.8 CPU-s).
go build -tags "${TAGS:-}" -ldflags=-w -o "$work/plan" ./cmd/plan
shopt -s nullglob
plans=(testdata/golden/*.json testdata/golden/legacy/*.json)
if [ ${#plans[@]} -eq 0 ]; then
  echo "check-exports: no golden plans" >&2
  exit 1
fi
fail=0 kserve=0 triton=0
manifests=()
for p in "${plans[@]}"; do
  name=$(basename "$(dirname "$p")")-$(basename "$p" .json)
  for target in triton kserve ray; do
    "$work/plan" export "$p" --to "$target" -o "$work/out/$name/$target" -q
  done
  manifests+=("$work/out/$name/kserve" "$work/out/$name/triton/deploy" "$work/out/$name/ray/deploy")
  kserve=$((kserve + $(find "$work/out/$name/kserve" "$work/out/$name/triton/deploy" "$work/out/$name/ray/deploy" -name '*.yaml' | wc -l)))
  while IFS= read -r -d '' cfg; do
    if ! protoc --proto_path=export/internal/tritonpb --encode=inference.ModelConfig model_config.proto <"$cfg" >/dev/null; then
      echo "FAIL protoc: $p: ${cfg#"$work/out/"}" >&2
      fail=1
    fi
    triton=$((triton + 1))
  done < <(find "$work/out/$name/triton" -name config.pbtxt -print0)
done
# One kubeconform over every plan's manifests: it compiles each schema once (17 runs, one a
# plan, spent 15 of the script's 31 s compiling the same schemas). A failure names its file,
# whose path names the plan: $work/out/<dir>-<plan>/<target>/...
if ! kubeconform -strict -summary -schema-location "$work/schemas/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json" "${manifests[@]}"; then
  echo "FAIL kubeconform (the paths above name the plans)" >&2
  fail=1
fi
echo "check-exports: ${#plans[@]} plan(s): $kserve Kubernetes manifest(s) through kubeconform $KUBECONFORM -strict (KServe $KSERVE, KEDA $KEDA CRDs; Kubernetes $KUBERNETES), $triton Triton config(s) through $(protoc --version)"
if [ "$fail" -ne 0 ]; then
  echo "check-exports: FAIL" >&2
  exit 1
fi
echo "check-exports: ok"
