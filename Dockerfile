# dra-capacity image: the `dra-capacity` command (webhook `serve`, `bind`, `certs`, `validate`, `simulate`).
#
# Two stages. `build` turns the project and its pinned dependencies into wheels and installs them, from those
# wheels only (--no-index), into a virtualenv at /opt/dra-capacity. The final stage copies that virtualenv
# onto the same base and runs no command at all: no compiler, no pip download, no shell is needed there, so a
# distroless Python base works as well as the default slim one.
#
# BASE_IMAGE must provide `python3` (3.11 or newer) at the same path in both stages; the build stage also
# needs its `venv` module. `make image` builds a local Debian base with mmdebstrap when the default cannot be
# pulled (see scripts/image_build.sh and docs/install.md).
ARG BASE_IMAGE=docker.io/library/python:3.11-slim-bookworm

FROM ${BASE_IMAGE} AS build
# Optional: a pre-fetched wheelhouse in build/wheelhouse (make image fills it from the host's pip, build
# requirements included) plus PIP_NO_INDEX=1 lets the build run without registry access; by default pip
# downloads from the index as usual.
ARG PIP_NO_INDEX=0
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1 PIP_NO_INDEX=${PIP_NO_INDEX}
COPY . /src
# Wheels built, installed into /opt/dra-capacity from those wheels only (--no-index), byte-compiled: one step
# (scripts/image_build_stage.py says why and how).
RUN ["python3", "/src/scripts/image_build_stage.py"]

FROM ${BASE_IMAGE}
ENV PATH=/opt/dra-capacity/bin:/usr/local/bin:/usr/bin:/bin \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /opt/dra-capacity /opt/dra-capacity
LABEL org.opencontainers.image.title="dra-capacity" \
      org.opencontainers.image.description="KEP-6406 DRA extended-resource capacity: webhook, binder, certificates" \
      org.opencontainers.image.licenses="Apache-2.0"
# 65532: the conventional "nonroot" UID of distroless images; the chart's runAsUser matches it.
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["dra-capacity"]
CMD ["serve", "--listen", "0.0.0.0:8443", "--tls-dir", "/etc/dra-capacity/tls"]
