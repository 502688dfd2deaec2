# dra-capacity: `make run` serves the webhook on https://127.0.0.1:8443 with self-signed certificates;
# `make test` installs everything into .venv and runs ruff, mypy and pytest.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: install run test lint typecheck unit bench clean

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

run: $(STAMP)
	$(BIN)/dra-capacity serve --listen 127.0.0.1:8443 --tls-dir .run/tls --self-signed

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-logo

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest

test: lint typecheck unit

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
	$(BIN)/python bench/binder_bench.py
	$(BIN)/python bench/mutate_pods_bench.py
	$(BIN)/python bench/cluster_warnings.py
	$(BIN)/python bench/cluster_warnings.py --http

clean:
	rm -rf $(VENV) $(LOCK) .run build *.egg-info .mypy_cache .pytest_cache .ruff_cache

# The container image, built with podman (not part of `make test`). `make image` falls back to a local Debian
# base built with mmdebstrap when BASE_IMAGE cannot be pulled; `make image-test` runs the image read-only as
# UID 65532 with a kubelet-style Secret mount and checks /readyz and two DeviceClass reviews over TLS.
IMAGE ?= localhost/dra-capacity:dev

.PHONY: image image-test

image: $(STAMP)
	IMAGE=$(IMAGE) PYTHON=$(BIN)/python scripts/image_build.sh

image-test: image
	$(BIN)/python scripts/image_test.py --image $(IMAGE)
