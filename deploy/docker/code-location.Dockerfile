# The code-location image: Dagster's user code (definitions.py, assets/, sensors/, ai_platform/) in the
# platform environment, exactly as requirements/platform.lock pins it. The Dagster Helm chart runs it as the
# user-code deployment, and K8sRunLauncher / k8s_job_executor run every run and step pod from it.
#   docker build -f deploy/docker/code-location.Dockerfile -t REGISTRY/ai-platform/code:VERSION .
# Pin the base by digest in your registry mirror; the tag names the exact Python the tests ran on.
FROM python:3.11.14-slim-bookworm

# git: the platform repo is read by commit; the duckdb CLI comes from the lock (duckdb-cli)
RUN apt-get update \
 && apt-get install --yes --no-install-recommends git ca-certificates \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/ai-platform
COPY requirements/platform.lock requirements/platform.lock
# --no-deps: what is installed is exactly what the lock pins (torch==2.13.0 there is the CPU wheel;
# the code location never runs a model: quantization and serving run in their own images)
RUN pip install --no-cache-dir --no-deps -r requirements/platform.lock
COPY pyproject.toml README.md workspace.yaml definitions.py ./
COPY ai_platform ai_platform
COPY assets assets
COPY sensors sensors
RUN pip install --no-cache-dir --no-deps -e .

ENV DAGSTER_HOME=/opt/dagster/home \
    AI_PLATFORM_HOME=/var/lib/ai-platform \
    HF_HUB_OFFLINE=1
RUN useradd --uid 10001 --create-home ai-platform \
 && mkdir -p "$DAGSTER_HOME" "$AI_PLATFORM_HOME" \
 && chown ai-platform "$DAGSTER_HOME" "$AI_PLATFORM_HOME"
USER 10001
# The Dagster chart runs `dagster api grpc` on the port deploy/helm/dagster-values.yaml names (3030); the same
# image runs the cluster's gateway (`ai-platform serve`, rollout/cluster_gateway.py) and every run and step pod.
EXPOSE 3030
CMD ["dagster", "api", "grpc", "-h", "0.0.0.0", "-p", "3030", "--python-file", "definitions.py"]
