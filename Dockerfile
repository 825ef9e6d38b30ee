# syntax=docker/dockerfile:1
# SavewebHQ production image: `tracker`, `hqctl` and `source` on PATH, running as 65532.
#
#   docker build --build-arg VERSION=1.2.3 --build-arg COMMIT="$(git rev-parse HEAD)" -t saveweb-hq:1.2.3 .
#
# Two stages: uv resolves the locked dependencies into /app/.venv in a builder that has the
# uv binary; the runtime stage copies only that virtual environment. Both stages use the same
# Python base image so the venv's interpreter symlinks stay valid.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG UV_IMAGE=ghcr.io/astral-sh/uv:0.9

FROM ${UV_IMAGE} AS uv

FROM ${PYTHON_IMAGE} AS build
COPY --from=uv /uv /usr/local/bin/uv
ENV UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never \
    UV_PROJECT_ENVIRONMENT=/app/.venv
WORKDIR /src
# Dependencies first: this layer is reused until pyproject.toml or uv.lock change.
COPY pyproject.toml uv.lock README.md ./
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev --no-install-project
COPY src ./src
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev --no-editable

FROM ${PYTHON_IMAGE} AS runtime
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="SavewebHQ" \
      org.opencontainers.image.description="PostgreSQL job coordinator for Saveweb archive workers" \
      org.opencontainers.image.source="https://github.com/saveweb/hq" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"
RUN groupadd --system --gid 65532 saveweb \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin saveweb
COPY --from=build /app/.venv /app/.venv
COPY --chmod=0755 docker/entrypoint.sh /usr/local/bin/docker-entrypoint.sh
ENV PATH=/app/.venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HQ_VERSION=${VERSION} \
    HQ_COMMIT=${COMMIT}
WORKDIR /app
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["serve"]
