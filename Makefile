# dra-capacity: `make run` starts the sandbox (a local cluster with the product installed; docs/sandbox.md),
# `make serve` the webhook alone on https://127.0.0.1:8443 with self-signed certificates;
# `make test` installs everything into .venv and runs ruff, mypy and pytest, then builds the real control plane
# and runs the real-cluster tier, then builds the image and checks it (image-test). `make quick` is the fast
# loop (no Go, no cluster). See docs/testing.md.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: install run serve test quick lint typecheck unit slow controlplane realcluster realnode-bins realnode differential binder-chaos-real mutation bench bench-side-by-side-quick clean

LOCK := $(VENV).lock

# One set-up at a time: `make run &` then `make test` must not build .venv twice at once (two `python -m venv`
# into one directory leave it without pip). The second waits on the lock, then finds the stamp fresh.
$(STAMP): pyproject.toml scripts/fetch_helm.py
	@flock $(LOCK) $(MAKE) --no-print-directory venv-locked

.PHONY: venv-locked
venv-locked:
	@if [ -f $(STAMP) ] && [ $(STAMP) -nt pyproject.toml ] && [ $(STAMP) -nt scripts/fetch_helm.py ]; then \
		echo "$(VENV) is up to date"; \
	else \
		set -e; \
		test -x $(BIN)/python || $(PYTHON) -m venv $(VENV); \
		$(BIN)/python -m pip install --quiet --upgrade pip; \
		$(BIN)/python -m pip install --quiet -e '.[dev]'; \
		$(BIN)/python scripts/fetch_helm.py $(BIN)/helm; \
		touch $(STAMP); \
	fi

install: $(STAMP)

# The sandbox: builds the control plane on first use, state in .run/ (FRESH=1 wipes it), Ctrl-C stops it.
# REALNODE=1 adds one real kubelet node (root only: the sandbox says why not otherwise; docs/sandbox.md).
SANDBOX_FLAGS ?=
run: $(STAMP) $(if $(REALNODE),$(if $(filter 0,$(shell id -u)),realnode-bins))
	$(BIN)/dra-capacity sandbox $(if $(FRESH),--fresh) $(if $(REALNODE),--real-node) $(SANDBOX_FLAGS)

serve: $(STAMP)
	$(BIN)/dra-capacity serve --listen 127.0.0.1:8443 --health-listen 127.0.0.1:8081 --tls-dir .run/tls --self-signed

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-logo

typecheck: $(STAMP)
	$(BIN)/mypy

# Test tiers (docs/testing.md). PYTEST_WORKERS: pytest-xdist processes for the unit and double tests.
PYTEST_WORKERS ?= auto

unit: $(STAMP)
	$(BIN)/pytest -n $(PYTEST_WORKERS) -m "not realcluster and not slow"

slow: $(STAMP)
	$(BIN)/pytest -n $(PYTEST_WORKERS) -m "slow and not realcluster"

quick: lint typecheck unit

# The real control plane: kube-apiserver, kube-controller-manager, kube-scheduler, etcd and kwok, built from
# tests/controlplane/ into ~/.cache/dra-capacity/controlplane/<version>/ (a no-op when built).
controlplane:
	$(PYTHON) scripts/controlplane.py build

# The harness puts webhooks behind a Service through a network namespace (`ip`, from iproute2; installed here
# when missing and root, else the harness falls back to url: webhooks and the netns test fails saying so).
realcluster: $(STAMP) controlplane
	@command -v ip >/dev/null || [ "$$(id -u)" != 0 ] || { apt-get update -qq && apt-get install -y -qq iproute2; }
	$(BIN)/pytest -m "realcluster and not realnode"

# The real node (docs/testing.md, "The real node"): the kubelet and the DRA test plugin from tests/realnode/k8s
# (the control plane's release), containerd from tests/realnode/containerd, the pause and workload images,
# into ~/.cache/dra-capacity/realnode/<version>/ (scripts/realnode.py; a no-op when built). As root, Debian's
# runc, CNI plugins and busybox-static are installed when missing.
realnode-bins: controlplane
	@[ "$$(id -u)" != 0 ] || { missing=""; \
		[ -x /usr/sbin/runc ] || missing="$$missing runc"; \
		[ -x /usr/lib/cni/bridge ] || missing="$$missing containernetworking-plugins"; \
		[ -x /bin/busybox ] || missing="$$missing busybox-static"; \
		[ -z "$$missing" ] || { apt-get update -qq && apt-get install -y -qq $$missing; }; }
	nice -n 15 $(PYTHON) scripts/realnode.py build

# The real-node tier: one kubelet node beside the kwok ones (root; one per machine, behind a lock). The chart's
# test runs the product image on it (`make image`: built once per make run, image-test reuses it).
realnode: $(STAMP) realnode-bins image
	$(BIN)/pytest -m realnode

# Our validation against the real kube-apiserver, object by object, at a random seed (printed): the tests' own
# inputs, 10,000 DeviceClasses and 5,000 of each other kind. Exits 1 on a disagreement docs/divergences.md does
# not list. SEED=N reruns one; CLASSES= and OTHERS= size it.
CLASSES ?= 10000
OTHERS ?= 5000
# RELEASE=1.38 runs it against that release's kube-apiserver (built first; docs/testing.md, "Releases").
differential: $(STAMP) controlplane
	$(if $(RELEASE),$(PYTHON) scripts/controlplane.py build --release $(RELEASE))
	nice -n 10 $(BIN)/python scripts/differential.py --classes $(CLASSES) --others $(OTHERS) $(if $(SEED),--seed $(SEED)) $(if $(RELEASE),--release $(RELEASE))

# The binder's full chaos run on the real control plane: two real `bind` processes, the leader killed or frozen
# past its lease CYCLES times (CI runs 10 in the realcluster tier). SEED=N reruns one.
CYCLES ?= 30
binder-chaos-real: $(STAMP) controlplane
	PYTHONPATH=tests nice -n 10 $(BIN)/python scripts/binder_chaos_real.py --cycles $(CYCLES) $(if $(SEED),--seed $(SEED))

# The image tier last: it needs podman (image_build.sh installs it with apt-get as root); about 3 min cold,
# 1.5 warm here (docs/testing.md).
test: quick slow controlplane realcluster realnode releases image-test

# Mutation testing of the core modules (not part of `make test`: about half an hour on two cores). One module:
# `make mutation MODULES=webhook/deviceclass/dropping.py`. docs/testing.md, "Mutation testing".
mutation: $(STAMP)
	nice -n 15 $(BIN)/python scripts/mutation.py $(MODULES)

bench: $(STAMP)
	$(BIN)/python bench/cel_compile.py
	$(BIN)/python bench/admission_handler.py
	$(BIN)/python bench/webhook_bench.py
	$(BIN)/python bench/hostile.py
	$(BIN)/python bench/gpu_shares.py
	$(BIN)/python bench/claim_pods.py
	$(BIN)/python bench/allocator_core.py
	$(BIN)/python bench/quantity_ops.py
	$(BIN)/python bench/startup.py
	$(BIN)/python bench/simulate_dump.py
	$(BIN)/python bench/simulate_input_checks.py
	$(BIN)/python bench/top_bench.py
	$(BIN)/python bench/migrate_plan.py
	$(BIN)/python bench/binder_bench.py
	$(BIN)/python bench/mutate_pods_bench.py
	$(BIN)/python bench/cluster_warnings.py
	$(BIN)/python bench/cluster_warnings.py --http
	$(BIN)/python bench/kube_scheduler_side_by_side.py $(SIDE_BY_SIDE)

# The binder next to kube-scheduler on the real control plane, small (about a minute); `make bench` runs the
# full set (100 and 500 nodes), SIDE_BY_SIDE="--nodes 500 --rounds 2" any other.
bench-side-by-side-quick: $(STAMP) controlplane
	$(BIN)/python bench/kube_scheduler_side_by_side.py --nodes 10 --pods 40 --burst 80

clean:
	rm -rf $(VENV) $(LOCK) .run build *.egg-info .mypy_cache .pytest_cache .ruff_cache

# The container image, built with podman (`make test` ends with image-test). `make image` falls back to a local
# Debian base built with mmdebstrap when BASE_IMAGE cannot be pulled; `make image-test` runs the image read-only
# as UID 65532 with a kubelet-style Secret mount and checks /readyz and two DeviceClass reviews over TLS.
IMAGE ?= localhost/dra-capacity:dev

.PHONY: image image-test image-push

image: $(STAMP)
	IMAGE=$(IMAGE) PYTHON=$(BIN)/python scripts/image_build.sh

# `make image-push REGISTRY=registry.example.com/team`: tags the built image REGISTRY/dra-capacity:TAG (TAG: the
# chart's appVersion) and pushes it with podman; then `helm install ... --set image.repository=REGISTRY/dra-capacity`.
image-push:
	IMAGE=$(IMAGE) REGISTRY=$(REGISTRY) TAG=$(TAG) PUSH_FLAGS="$(PUSH_FLAGS)" scripts/image_push.sh

image-test: image
	$(BIN)/python scripts/image_test.py --image $(IMAGE)

# The other Kubernetes releases (pinned in scripts/controlplane.py RELEASES; the default one is `controlplane`):
# each release's control plane, the differential at CI's size (fixed seed) and the smoke set (helm install under
# the chart's RBAC, the README's sequence bound on shares) on it. `make test` runs RELEASES_CI; `make
# test-extended` (not run by CI) also RELEASES_EXTENDED. The 1.38 pin builds with GOTOOLCHAIN=go1.27.3, which
# the go command fetches through GOPROXY. Costs: docs/testing.md, "Releases".
RELEASES_CI ?= 1.38
RELEASES_EXTENDED ?= 1.36
export GOPROXY ?= https://proxy.golang.org,direct
RELEASE_SMOKE := tests/realcluster/test_chart_install.py::test_helm_install_upgrade_test_rollback_uninstall_under_the_charts_rbac \
	tests/e2e/test_sandbox_realcluster.py::test_readme_sequence_binds_16_shares_and_leaves_the_17th_pending

# The differential placement against that release's kube-scheduler (its scenarios are keyed by release).
RELEASE_SMOKE += tests/e2e/test_placement_vs_kube_scheduler.py
RELEASE_SMOKE += tests/e2e/test_binding_conditions_realcluster.py
# A zero capacity step: v1.36.3's API server panics on it (docs/divergences.md, 1.36), the others refuse it.
RELEASE_SMOKE += tests/differential/test_release_panics.py

.PHONY: releases releases-extended test-extended

releases: $(STAMP)
	@for r in $(RELEASES_CI); do \
		$(PYTHON) scripts/controlplane.py build --release $$r || exit 1; \
		nice -n 10 $(BIN)/python scripts/differential.py --release $$r --seed 20261202 --classes 1000 --others 300 $(RELEASE_DIFFERENTIAL_FLAGS) || exit 1; \
		DRA_CAPACITY_KUBERNETES_RELEASE=$$r $(BIN)/pytest -m realcluster $(RELEASE_SMOKE) || exit 1; \
	done

# 1.36 is judged by v1.36.3's handwritten validation (resourceapi/releases.py): texts and verdicts must agree.
releases-extended: $(STAMP)
	$(MAKE) --no-print-directory releases RELEASES_CI="$(RELEASES_EXTENDED)"

test-extended: test releases-extended

# The differential with each gate dra-capacity knows turned on alone (server and our side alike), at CI's size,
# on RELEASE (default: the default release). Not in `make test`: one control plane start per gate.
GATES_ONE_AT_A_TIME ?= DRAListTypeAttributes DRAFractionalCapacityRange DRAConsumableCapacity DRAPartitionableDevices DRADeviceTaints
.PHONY: differential-gates
differential-gates: $(STAMP) controlplane
	@for g in $(GATES_ONE_AT_A_TIME); do \
		nice -n 10 $(BIN)/python scripts/differential.py $(if $(RELEASE),--release $(RELEASE)) --feature-gates $$g=true --seed 20261202 --classes 300 --others 100 || exit 1; \
	done
