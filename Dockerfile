# The arh image (docs/container.md): a build stage makes the wheel, the final stage installs only
# the wheel on a slim Python, runs as an unprivileged user and has `arh` as its entrypoint.
ARG PYTHON_IMAGE=python:3.12-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
# a package index other than PyPI for the build stage's two tools (a mirror); unset, pip uses PyPI
ARG PIP_INDEX_URL
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
RUN pip install --no-cache-dir build==1.6.1 setuptools==84.2.1
COPY pyproject.toml README.md LICENSE ./
COPY src ./src
RUN python -m build --wheel --no-isolation --outdir /dist

FROM ${PYTHON_IMAGE}
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1
# only the wheel (arh has no runtime dependency), then pip itself goes: no build tools remain
COPY --from=build /dist /dist
RUN pip install --no-cache-dir --no-index /dist/*.whl \
    && rm -rf /dist \
    && python -m pip uninstall --yes pip \
    && useradd --uid 10001 --user-group --no-create-home --home-dir /work --shell /usr/sbin/nologin arh \
    && mkdir -p /work /runs \
    && chown 10001:10001 /work /runs
USER 10001:10001
WORKDIR /work
ENTRYPOINT ["arh"]
CMD ["--help"]
