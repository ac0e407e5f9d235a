# The quantize workload's image (platform.yaml: kubernetes.gpu.quantize_image, pinned by digest once pushed):
# `python -m ai_platform.quantize` with llm-compressor, launched by PipesK8sClient in a GPU pod. It fetches the
# verified weights from the registry and keeps its output there (storage.artifact_store: registry), so it
# needs no volume, only the registry credentials (kubernetes.registry_secret).
#   docker build -f deploy/docker/quantize.Dockerfile -t REGISTRY/ai-platform/quantize:VERSION .
# The base carries CUDA and the torch build the lock pins (torch==2.13.0); pin it by digest in your mirror.
FROM pytorch/pytorch:2.13.0-cuda12.8-cudnn9-runtime

WORKDIR /opt/ai-platform
COPY requirements/quantize.lock requirements/quantize.lock
# The base's torch stays: the lock's torch line is the same version, built for CUDA here
RUN grep -v '^torch==' requirements/quantize.lock > /tmp/quantize.lock \
 && pip install --no-cache-dir --no-deps -r /tmp/quantize.lock
COPY pyproject.toml README.md ./
COPY ai_platform ai_platform
RUN pip install --no-cache-dir --no-deps -e .

ENV HF_HUB_OFFLINE=1 HF_HUB_DISABLE_UPDATE_CHECK=1 TOKENIZERS_PARALLELISM=false
RUN useradd --uid 10001 --create-home ai-platform
USER 10001
CMD ["python", "-m", "ai_platform.quantize"]
