# dra-capacity image: the `dra-capacity` command (webhook `serve`, `validate`, `simulate`).
# Runs as a non-root user on a read-only root filesystem (the chart's PSS-restricted defaults).
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY resourceapi ./resourceapi
COPY webhook ./webhook
COPY allocator ./allocator
COPY certs ./certs
COPY dra_capacity ./dra_capacity
RUN python -m venv /opt/dra-capacity \
 && /opt/dra-capacity/bin/pip install --no-cache-dir .

FROM python:3.11-slim
ENV PATH=/opt/dra-capacity/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /opt/dra-capacity /opt/dra-capacity
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["dra-capacity"]
CMD ["serve", "--listen", "0.0.0.0:8443", "--tls-dir", "/etc/dra-capacity/tls"]
