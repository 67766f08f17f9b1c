# plan — build, test and benchmark.
#   make          fetch pinned assets (npm pack, sha256-checked) and build bin/plan
#   make install  build, then install bin/plan as PREFIX/bin/plan (PREFIX=/usr/local; DESTDIR for
#                 staging) and, where `make assets` fetched ONNX Runtime, its library as
#                 PREFIX/lib/plan/libonnxruntime.so, where the installed binary looks for it
#   make demo     the above, then solve, simulate (plots) and check the embedded demo (out/demo/)
#   make native   translate the pinned highs.wasm to C (wasm2c, Debian package wabt) and compile
#                 it once into third_party/highs/native/libhighs_w2c.a for the native solver
#                 engine (build tag highs_native). On by default where wasm2c is installed;
#                 NATIVE=0 builds and tests the pure-Go (wazero) engine only.
#   make test     everything CI runs: gofmt, vet, staticcheck, unit tests with -race (schema drift
#                 included), short fuzz runs, and `plan check` over the golden plans
#   make bench    Go benchmarks of the hot paths and the solver
#   make generate regenerate the protobuf/gRPC Go code from the .proto files (protoc from the
#                 Debian package protobuf-compiler; the Go plugins at the pinned versions below)

GO        ?= go
FUZZTIME  ?= 5s
BENCHTIME ?= 1x
# Trace length per load point of the serve-vs-simulate agreement check: at load 0.9 the PPipe
# comparison sits 2–3 points apart, so short runs scatter around the 3-point bound.
AGREEMENT_DURATION ?= 10s
PKGS      := ./...
PREFIX    ?= /usr/local
ORT_LIB   := third_party/onnxruntime/libonnxruntime.so
# `plan version` of a built binary: the version and commit stamped here (-ldflags -X), since
# `go build -buildvcs=false` or a build outside a checkout records neither (issue 37 item 9).
# Outside a git checkout both are empty and plan reports the module's build info ("(devel)").
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)
VERSION_PKG := github.com/plan-dev/plan/cmd/plan/internal/cli
LDFLAGS   := -X $(VERSION_PKG).stampVersion=$(VERSION) -X $(VERSION_PKG).stampCommit=$(COMMIT)
WASM      := third_party/highs/highs.wasm
EMBED     := solver/internal/highs/embed/highs.wasm
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
PROTOC_GEN_GO      ?= google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC ?= google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.0
GOBIN_DIR          := $(shell $(GO) env GOPATH 2>/dev/null)/bin

# Native HiGHS: wasm2c output is ~50 MB of C, split into NATIVE_PARTS files so that it compiles
# in parallel and in ~0.5 GB per compiler instead of 3.5 GB. Compiled once here, not by cgo on
# every `go test` rebuild; cgo links the archive (solver/internal/highs/native.go).
WASM2C       ?= wasm2c
NATIVE       ?= $(if $(shell command -v $(WASM2C) 2>/dev/null),1,0)
NATIVE_DIR   := third_party/highs/native
NATIVE_LIB   := $(NATIVE_DIR)/libhighs_w2c.a
NATIVE_PARTS := 0 1 2 3 4 5 6 7
NATIVE_OBJS  := $(patsubst %,$(NATIVE_DIR)/highs_%.o,$(NATIVE_PARTS) main) $(NATIVE_DIR)/rt.o
# -ffp-contract=off: no fused multiply-add, so floating point matches wasm (and wazero) exactly
# (without -ffast-math, -O3's vector code and -march=native's instructions round as wasm does:
# TestEnginesAgree). -O3 -march=native against -O2: LP relaxation 34.0 → 29.7 ms, facility
# location MIP 1.43 → 1.29 s (medians of 3 interleaved runs); the archive is built where it runs.
NATIVE_CFLAGS ?= -O3 -march=native -fno-strict-aliasing -ffp-contract=off -w
# guard: 8 GiB of address space reserved per instance and no checks: a bad access (a HiGHS bug)
# faults on a page without access, and the glue's SIGSEGV handler, chained in front of the Go
# runtime's, turns it into that call's trap, an ErrAborted as in wazero (TestOutOfBoundsAccessTraps).
# Where 8 GiB cannot be reserved (ulimit -v) the default engine falls back to wazero.
# bounds: every wasm memory access is compared with the memory size. On the LP relaxations of
# the hc2-g1 and P3-4types-1model MILPs (same simplex iterations, BenchmarkLPFile against
# scripts/highs-reference.sh's native HiGHS) guard runs at 1.18-1.20x native HiGHS per
# iteration, bounds at 1.50-1.54x.
NATIVE_MEMCHECK ?= guard
NATIVE_JOBS  ?= $(shell nproc 2>/dev/null || echo 2)
ifeq ($(NATIVE),1)
TAGS       := highs_native
NATIVE_DEP := native
endif
comma := ,

export CGO_ENABLED ?= 1

.PHONY: all assets native build install demo test lint unit agreement fuzz golden bench clean generate protoc-plugins

all: build

assets:
	./scripts/fetch-assets.sh

native: assets
	@command -v $(WASM2C) >/dev/null || { echo "make native: $(WASM2C) not found: apt-get install wabt (or make NATIVE=0)" >&2; exit 1; }
	@$(MAKE) --no-print-directory -j$(NATIVE_JOBS) $(NATIVE_LIB)

# The stamp names the memory-check mode, so that switching modes regenerates.
$(NATIVE_DIR)/.generated-$(NATIVE_MEMCHECK): $(WASM) solver/internal/highs/w2cgen/main.go
	$(GO) run ./solver/internal/highs/w2cgen -wasm $(WASM) -out $(NATIVE_DIR) -wasm2c $(WASM2C) \
	  -parts $(words $(NATIVE_PARTS)) $(if $(filter guard,$(NATIVE_MEMCHECK)),-guard-pages)
	touch $@

$(NATIVE_OBJS): $(NATIVE_DIR)/%.o: $(NATIVE_DIR)/.generated-$(NATIVE_MEMCHECK)
	$(CC) $(NATIVE_CFLAGS) -c $(NATIVE_DIR)/$*.c -o $@

$(NATIVE_LIB): $(NATIVE_OBJS)
	rm -f $@
	ar rcs $@ $^

build: assets $(NATIVE_DEP)
	mkdir -p $(dir $(EMBED)) bin
	cp $(WASM) $(EMBED)
	$(GO) build -tags highs_embed$(if $(TAGS),$(comma)$(TAGS)) -ldflags '$(LDFLAGS)' -o bin/plan ./cmd/plan
	@echo "built bin/plan"

# The binary finds the library in ../lib/plan beside its own directory (profiler/measure's
# search), so PREFIX/bin/plan runs the onnx backend without PLAN_ORT_LIB (issue 37 item 8).
install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 bin/plan $(DESTDIR)$(PREFIX)/bin/plan
	@if [ -f $(ORT_LIB) ]; then \
	  install -d $(DESTDIR)$(PREFIX)/lib/plan && \
	  install -m 0644 $(ORT_LIB) $(DESTDIR)$(PREFIX)/lib/plan/libonnxruntime.so && \
	  echo "installed $(DESTDIR)$(PREFIX)/bin/plan and $(DESTDIR)$(PREFIX)/lib/plan/libonnxruntime.so"; \
	else \
	  echo "installed $(DESTDIR)$(PREFIX)/bin/plan (no $(ORT_LIB): the onnx profiler backend needs PLAN_ORT_LIB)"; \
	fi

# The README's first command. internal/readme runs scripts/demo.sh for it (after its own build).
demo: build
	./scripts/demo.sh bin/plan

test: assets $(NATIVE_DEP) lint unit agreement fuzz golden

# vet and staticcheck see the pure-Go build of every package, and the native engine's files too
# when it is built.
lint: $(NATIVE_DEP)
	@unformatted=$$(gofmt -l $$(git ls-files '*.go') 2>/dev/null); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)
	$(if $(TAGS),$(GO) vet -tags $(TAGS) ./solver/...)
	$(if $(TAGS),$(GO) run $(STATICCHECK) -tags $(TAGS) ./solver/...)

# The generated-code drift test (serve/kservegrpc TestGeneratedCode) needs the plugins.
unit: $(NATIVE_DEP) protoc-plugins
	$(GO) test -race -count=1 -timeout 45m -tags '$(TAGS)' $(PKGS)

# serve vs simulate attainment on the demo plan (issue 6). It needs real timers, so it runs
# without -race (under which it skips itself), after the unit tests have freed the cores.
# Wall-clock runs share the machine with whatever else runs, so two retries are allowed (at
# load 0.9 the PPipe comparison sits 2–3 points apart, close to its 3-point bound).
agreement:
	PLAN_AGREEMENT=1 PLAN_AGREEMENT_DURATION=$(AGREEMENT_DURATION) $(GO) test -count=1 -run '^TestAgreement(PARD|Cascade|DyOrc)?$$' -v ./serve/load || \
	  { echo "agreement: retrying (1 of 2)"; PLAN_AGREEMENT=1 PLAN_AGREEMENT_DURATION=$(AGREEMENT_DURATION) $(GO) test -count=1 -run '^TestAgreement(PARD|Cascade|DyOrc)?$$' -v ./serve/load; } || \
	  { echo "agreement: retrying (2 of 2)"; PLAN_AGREEMENT=1 PLAN_AGREEMENT_DURATION=$(AGREEMENT_DURATION) $(GO) test -count=1 -run '^TestAgreement(PARD|Cascade|DyOrc)?$$' -v ./serve/load; }

# Every Fuzz target runs for FUZZTIME on top of its seed corpus (the seeds already ran in unit).
fuzz:
	./scripts/fuzz-all.sh $(FUZZTIME)

golden: build
	./scripts/check-golden.sh bin/plan

bench: assets $(NATIVE_DEP)
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) -benchmem -tags '$(TAGS)' $(PKGS)

protoc-plugins:
	$(GO) install $(PROTOC_GEN_GO)
	$(GO) install $(PROTOC_GEN_GO_GRPC)

# Generated files are committed; TestGeneratedCode fails when they drift from the .proto files.
generate: protoc-plugins
	cd serve/kservegrpc/inferencepb && PATH="$(GOBIN_DIR):$$PATH" protoc --go_out=. --go_opt=paths=source_relative \
	  --go-grpc_out=. --go-grpc_opt=paths=source_relative grpc_service.proto
	cd export/internal/tritonpb && PATH="$(GOBIN_DIR):$$PATH" protoc --go_out=. --go_opt=paths=source_relative model_config.proto

clean:
	rm -rf bin $(EMBED) $(NATIVE_DIR)
