# kubeplug — see README.md. Every target works on a fresh clone with only Go installed.

GO        ?= go
BUILD     := $(CURDIR)/build
KUBEPLUG  := $(BUILD)/kubeplug
GUESTDIR  := $(BUILD)/guests
# Every directory under guests/ and examples/ with a main.go is a module.
GUEST_SRC := $(sort $(patsubst %/main.go,%,$(wildcard guests/*/main.go examples/*/main.go)))
GUESTS    := $(foreach d,$(GUEST_SRC),$(GUESTDIR)/$(notdir $(d)).wasm)
# Extism plugins written in AssemblyScript, each as <dir>:<its Go twin>: the
# plugin must pass its twin's tests (run against the plugin) and case files.
AS_TWINS  := examples/warnretain-as:examples/warnretain
AS_GUESTS := $(foreach t,$(AS_TWINS),$(GUESTDIR)/$(notdir $(firstword $(subst :, ,$(t)))).wasm)
# GUEST_TOOLCHAIN=tinygo builds guests with TinyGo instead of stock Go.
GUEST_TOOLCHAIN ?= go
BENCHTIME ?= 2s
# Fuzz budgets are counts of executions, not durations: go1.26's fuzzing
# coordinator can fail a clean run with "context deadline exceeded" when a
# -fuzztime duration ends (go.dev/issue/75804, fixed in go1.27); a count sets
# no deadline. Each target's count is about 8 s of work on 2 cores; make test
# runs it FUZZ_SCALE times, make fuzz FUZZ_LONG_SCALE times (about 5 min).
# A new input that widens coverage is minimized for at most FUZZ_MINIMIZE
# (make test) or FUZZ_LONG_MINIMIZE (make fuzz), and so is a failing one.
FUZZ_SCALE         ?= 1
FUZZ_MINIMIZE      ?= 1s
FUZZ_LONG_SCALE    ?= 40
FUZZ_LONG_MINIMIZE ?= 5s
# module-dir:package:target:count for every fuzz target.
FUZZ_TARGETS := \
	.:./abi:FuzzDecode:300000 \
	.:./abi:FuzzParseFieldPath:150000 \
	host:./runtime:FuzzDecodeOutput:80000 \
	host:./runtime:FuzzDecodeJSONOutput:60000 \
	host:./runtime/internal/checkpoint:FuzzInsert:50000 \
	host:./runtime/internal/checkpoint:FuzzInsertCharges:2000 \
	host:./runtime/internal/projection:FuzzProjection:300000 \
	host:./config:FuzzParse:50000 \
	host:./casetest:FuzzParse:15000 \
	host:./admission:FuzzScanReview:30000

# The one version of a build, git describe of the checkout: a release tag
# (v1.2.0), the commits since it (v1.2.0-3-gabc1234), -dirty with changes not
# committed, the abbreviated commit where no v* tag is reachable; a VERSION
# file instead outside a git checkout (a source archive). make build stamps it
# into kubeplug, make image into the binary, the image's labels and its tag;
# the chart's appVersion and the base's newTag name the release it is or
# follows. make -s version prints it. Tags of the nested Go modules
# (sdk/v1.0.0) are not versions of kubeplug: --match leaves them out.
ifndef VERSION
VERSION := $(shell cat VERSION 2>/dev/null || git describe --tags --match 'v[0-9]*' --always --dirty 2>/dev/null)
endif
ifndef COMMIT
COMMIT := $(shell git rev-parse HEAD 2>/dev/null)
endif
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

.PHONY: version rbac pgo faults cluster bench-scale all build image guests test test-unit test-guests test-cases test-check test-fuzz fuzz e2e bench generate check-generate demo fmt vet clean

all: build guests

build:
	cd host && $(GO) build -ldflags '$(LDFLAGS)' -o $(KUBEPLUG) ./cmd/kubeplug

version:
	@echo $(VERSION)

# The host's container image, without a container daemon: build/image/oci
# (an OCI layout: an image index of linux/amd64 and linux/arm64, each
# image's CycloneDX SBOM attached as a referrer), build/image/kubeplug.tar
# (docker load: this machine's platform), the SBOMs and the index's digest.
# The same commit gives the same digests (SOURCE_DATE_EPOCH: the commit's
# time). SIGN_KEY=key.pem (a PEM EC private key) signs the index, each image
# and each SBOM in the layout, in the format modules are signed in (cosign's
# bundle as a referrer); without it the image is unsigned, and says so.
# PLATFORMS=linux/amd64 builds fewer.
PLATFORMS ?= linux/amd64,linux/arm64
image: guests
	cd host && $(GO) run ./cmd/kubeplug-image -out $(BUILD)/image -modules $(GUESTDIR) \
		-version '$(VERSION)' -commit '$(COMMIT)' -platforms '$(PLATFORMS)' $(if $(SIGN_KEY),-sign-key '$(abspath $(SIGN_KEY))')

guests: $(GUESTS) $(AS_GUESTS)

# Guests are rebuilt every time: go build is incremental and knows the
# dependencies far better than make does.
$(GUESTDIR)/%.wasm: FORCE
	@mkdir -p $(GUESTDIR)
	@src=$$(for d in $(GUEST_SRC); do [ "$$(basename $$d)" = "$*" ] && echo $$d; done); \
	if [ "$(GUEST_TOOLCHAIN)" = tinygo ]; then \
		echo "tinygo $$src -> $@"; tinygo build -target=wasip1 -buildmode=c-shared -o $@ ./$$src; \
	else \
		echo "go $$src -> $@"; GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -o $@ ./$$src; \
	fi
FORCE:

# An AssemblyScript plugin is built from source with the versions its
# package-lock.json pins (npm ci, once per change of the lock), then asc.
$(AS_GUESTS): $(GUESTDIR)/%.wasm: FORCE
	@mkdir -p $(GUESTDIR)
	@echo "asc examples/$* -> $@"
	@cd examples/$* && \
	if [ ! node_modules/.package-lock.json -nt package-lock.json ]; then npm ci --no-audit --no-fund --loglevel=error; fi && \
	npm run --silent build -- --outFile $@

# make test: unit tests of both modules, every guest tested natively and again
# against its compiled .wasm, and every guest's case files through kubeplug test.
test: check-generate test-unit test-guests test-cases test-check test-fuzz e2e

test-unit:
	$(GO) vet ./... && $(GO) test ./...
	cd host && $(GO) vet ./... && $(GO) test ./...
	cd host && $(GO) test -race -run 'TestPoolUnderConcurrentCalls|TestExtismPoolUnderConcurrentCalls' ./runtime
	cd host && $(GO) test -race -run 'TestSwapUnderLoad' ./controller
	cd host/metrics/alerts && $(GO) vet ./... && $(GO) test ./...

test-guests: build guests
	@set -e; for d in $(GUEST_SRC); do \
		echo "== $$d against $(GUESTDIR)/$$(basename $$d).wasm"; \
		KUBEPLUG_BIN=$(KUBEPLUG) KUBEPLUG_TEST_WASM=$(GUESTDIR)/$$(basename $$d).wasm $(GO) test -count=1 ./$$d/...; \
	done
	@set -e; for t in $(AS_TWINS); do \
		d=$${t%%:*}; twin=$${t#*:}; \
		echo "== $$twin's tests against $(GUESTDIR)/$$(basename $$d).wasm"; \
		KUBEPLUG_BIN=$(KUBEPLUG) KUBEPLUG_TEST_WASM=$(GUESTDIR)/$$(basename $$d).wasm $(GO) test -count=1 ./$$twin/...; \
	done

test-cases: build guests
	@set -e; for d in $(GUEST_SRC); do \
		if [ -d $$d/testdata ]; then \
			echo "== kubeplug test --module $(GUESTDIR)/$$(basename $$d).wasm $$d/testdata"; \
			$(KUBEPLUG) test --module $(GUESTDIR)/$$(basename $$d).wasm $$d/testdata; \
		fi; \
	done
	@set -e; for t in $(AS_TWINS); do \
		d=$${t%%:*}; twin=$${t#*:}; \
		echo "== kubeplug test --module $(GUESTDIR)/$$(basename $$d).wasm $$twin/testdata"; \
		$(KUBEPLUG) test --module $(GUESTDIR)/$$(basename $$d).wasm $$twin/testdata; \
	done

# kubeplug check (crashes, stale caches, unobserved states, interleavings, a
# missed state then a stale cache) on
# every module with case files, each within CHECK_BUDGET. Its fixture modules
# (host/check/testdata/guests) are built and caught by host's go test; the
# finding kept as a case in host/check/testdata must still be reported.
CHECK_BUDGET ?= 50s
test-check: build guests
	@set -e; for d in $(GUEST_SRC); do \
		if [ -d $$d/testdata ]; then \
			echo "== kubeplug check --module $(GUESTDIR)/$$(basename $$d).wasm $$d/testdata"; \
			$(KUBEPLUG) check -v --budget $(CHECK_BUDGET) --module $(GUESTDIR)/$$(basename $$d).wasm $$d/testdata; \
		fi; \
	done
	@set -e; for t in $(AS_TWINS); do \
		d=$${t%%:*}; twin=$${t#*:}; \
		echo "== kubeplug check --module $(GUESTDIR)/$$(basename $$d).wasm $$twin/testdata"; \
		$(KUBEPLUG) check -v --budget $(CHECK_BUDGET) --module $(GUESTDIR)/$$(basename $$d).wasm $$twin/testdata; \
	done
	@echo "== kubeplug check --module $(GUESTDIR)/retention.wasm host/check/testdata/retention-unobserved.yaml (a finding kept as a case: must be reported)"
	@out=$$($(KUBEPLUG) check --module $(GUESTDIR)/retention.wasm host/check/testdata/retention-unobserved.yaml); code=$$?; \
	echo "$$out"; [ $$code = 1 ] && echo "$$out" | grep -q "replay: .*'unobserved:phase=1@"

# Every fuzz target for its count (make test), or FUZZ_LONG_SCALE times it
# (make fuzz).
test-fuzz:
	@$(MAKE) --no-print-directory run-fuzz FUZZX=$(FUZZ_SCALE) FUZZMIN=$(FUZZ_MINIMIZE)

fuzz:
	@$(MAKE) --no-print-directory run-fuzz FUZZX=$(FUZZ_LONG_SCALE) FUZZMIN=$(FUZZ_LONG_MINIMIZE)

run-fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		dir=$${t%%:*}; rest=$${t#*:}; pkg=$${rest%%:*}; rest=$${rest#*:}; name=$${rest%%:*}; count=$${rest#*:}; \
		n=$$(( count * $(FUZZX) )); \
		echo "== fuzz $$name in $$dir/$$pkg for $${n} executions"; \
		(cd $$dir && $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $${n}x -fuzzminimizetime $(FUZZMIN) $$pkg); \
	done

# End-to-end tests on a real control plane started in-process (e2e/ is its
# own module: k8s.io/kubernetes stays out of every other module's graph).
# The first build of the control plane takes 8-10 minutes on 2 cores.
# e2e/hostile runs alone, after the rest: its corpus keeps both cores busy
# on purpose, which would starve the timing of the packages beside it.
e2e: build image
	cd e2e && $(GO) vet ./... && \
	KUBEPLUG_BIN=$(KUBEPLUG) KUBEPLUG_IMAGE=$(BUILD)/image/oci $(GO) test -count=1 -timeout 30m $$($(GO) list ./... | grep -v '/hostile$$') && \
	KUBEPLUG_BIN=$(KUBEPLUG) $(GO) test -count=1 -timeout 10m ./hostile

bench: build guests
	cd host && $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./runtime ./snapshot ./bench/...
	cd host && $(GO) test -run '^$$' -bench AdmitRoundTrip -benchtime 10000x ./admission
	cd host && $(GO) test -run '^$$' -bench BenchmarkSwap -benchtime 5x ./app
	cd host && $(GO) test -run '^$$' -bench ParseWideMapping -benchtime 5x ./casetest

# Profile-guided optimisation of the guests (RATIONALE.md, "Why are the
# reference guests built with a committed default.pgo?"): a CPU profile of
# each guest's code run natively by its benchmark, written to the guest's
# main package directory as default.pgo, which go build uses by itself
# (-pgo=auto) in make guests, the benchmarks and a user's own build.
# Regenerate after changing a guest, the SDK or abi's codec. dir:package:benchmark.
PGO_PROFILES := \
	internal/benchpolicy/guest:./bench:BenchmarkReconcileStatefulSet100Native \
	guests/retention:./bench/retention:BenchmarkRetention100Native \
	guests/templateupdate:./bench/templateupdate:BenchmarkTemplateupdate100Native \
	guests/reclaim:./bench/reclaim:BenchmarkReclaim10000Native \
	examples/warnretain:./bench/extism:BenchmarkWarnretainNative
PGO_BENCHTIME ?= 5s
pgo:
	@mkdir -p $(BUILD)
	@set -e; for t in $(PGO_PROFILES); do \
		dir=$${t%%:*}; rest=$${t#*:}; pkg=$${rest%%:*}; name=$${rest#*:}; \
		echo "== $$dir/default.pgo from $$name in host/$$pkg"; \
		(cd host && $(GO) test -run '^$$' -bench "^$$name\$$" -benchtime $(PGO_BENCHTIME) -o $(BUILD)/pgo.test \
			-cpuprofile $(CURDIR)/$$dir/default.pgo $$pkg); \
	done; rm -f $(BUILD)/pgo.test

# The host at scale (e2e/scale, BENCHMARKS.md): for each N, N StatefulSets of
# 3 replicas with their pods, bound claims and CSI volumes on a fresh
# in-process control plane, the host beside a bare client-go informer
# process; each N's report (about 3 minutes at N=1000, 15 at N=10000), then
# the table. Profiles and logs go to build/bench-scale/.
N ?= 1000 5000 10000
bench-scale: build
	@mkdir -p $(BUILD)/bench-scale
	@set -e; for n in $(N); do \
		echo "== N=$$n ($$(uptime | sed 's/.*load/load/'))"; \
		log=$(BUILD)/bench-scale/N$$n.log; \
		(cd e2e && SCALE_N=$$n SCALE_PROFILES=$(BUILD)/bench-scale KUBEPLUG_BIN=$(KUBEPLUG) \
			$(GO) test -count=1 -run '^$$' -bench '^BenchmarkScale$$' -benchtime 1x -timeout 60m ./scale) \
			> $$log 2>&1 || { cat $$log; exit 1; }; \
		cat $$log; \
	done
	@echo; echo "| N sets | objects | load | host synced (× reference) | all reconciled | host peak RSS (× reference) | heap B/object | writes in 2 resyncs | scale-down p50 / p99 / max | guest share of CPU |"; \
	echo "|---|---|---|---|---|---|---|---|---|---|"; \
	for n in $(N); do grep -h '^| ' $(BUILD)/bench-scale/N$$n.log; done

# The fault campaign's long form (e2e/faults): FAULTS_N seeded runs of the
# live host under workload and faults, then the figures. FAULTS_SEED=<seed>
# replays one run (a failed run prints its seed); FAULTS_BASE=<seed> starts
# the seeds there. make test runs the short form (3 runs).
FAULTS_N ?= 50
faults: build
	cd e2e && FAULTS_N=$(FAULTS_N) KUBEPLUG_BIN=$(KUBEPLUG) $(GO) test -count=1 -v -run '^TestFaultCampaign$$' -timeout 6h ./faults

generate:
	hack/gen-abi.sh

# The RBAC of the kustomize base and its overlays, from their own host.yaml
# files with kubeplug rbac (hack/gen-rbac.sh); e2e/internal/manifests fails
# when a file differs from what this writes.
rbac: build guests
	hack/gen-rbac.sh

# Generated code must match its sources: regenerate into a scratch copy and compare.
check-generate:
	@tmp=$$(mktemp) && hack/gen-abi.sh $$tmp && \
	if ! cmp -s abi/zz_generated_msgp.go $$tmp; then \
		echo "abi/zz_generated_msgp.go is stale: run 'make generate'"; rm -f $$tmp; exit 1; fi; rm -f $$tmp

# The main job: the host and its modules on an embedded control plane,
# narrated. See e2e/demo. KEEP=1 leaves the control plane and the host
# running after the last scene, for kubectl, until Ctrl-C.
demo: build guests
	cd e2e && $(GO) run ./cmd/demo -kubeplug $(KUBEPLUG) -guests $(GUESTDIR) $(if $(filter-out 0,$(KEEP)),-keep)

# A one-node cluster in one process, kept running until Ctrl-C, with a
# kubeconfig in build/cluster/kubeconfig: the control plane with the
# controllers an install needs, and a node that runs the image make image
# built (build/image/oci) as processes, so kubectl apply -k deploy/ and helm
# install work on it (README.md, "Install on make cluster"). Run as root.
cluster: build image
	cd e2e && $(GO) run ./cmd/cluster -kubeconfig $(BUILD)/cluster/kubeconfig -image $(BUILD)/image/oci

fmt:
	gofmt -l -w abi sdk host guests examples e2e 2>/dev/null || true

clean:
	rm -rf $(BUILD)
