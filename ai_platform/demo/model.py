"""The demo model: a tiny real Qwen2 with a real byte-level BPE tokenizer, trained briefly.

A random-weight model emits whitespace forever under a JSON grammar, so the demo
model is *trained* (fixed seed, a couple of minutes on 2 CPU cores) on synthetic
contract-review pairs until it answers in the `contract_review` shape and then
stops. `ai_platform.demo.cache` keeps the result by a content hash of this
module, the corpus generator, the recipe and the library versions.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ai_platform.demo import corpus

SYSTEM_PROMPT = (
    "你是一名资深法律顾问，请严格依据中国《民法典》第XXX条分析合同风险。\n"
    "输出格式：[风险点][严重等级][法律依据][修改建议]"
)
IM_START, IM_END, PAD = "<|im_start|>", "<|im_end|>", "<|endoftext|>"
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
MODEL_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
)


@dataclass(frozen=True)
class Recipe:
    """Everything that decides the weights besides the code itself."""

    seed: int = 0
    vocab_size: int = 3000
    hidden_size: int = 128
    intermediate_size: int = 512
    layers: int = 2
    heads: int = 2  # head_dim 64: a size every vLLM CPU attention backend supports
    kv_heads: int = 1
    max_positions: int = 1024
    train_examples: int = 3000
    steps: int = 450
    batch_size: int = 24
    learning_rate: float = 3e-3
    warmup_steps: int = 30
    threads: int = 2  # fixed, not nproc: the thread count changes float reduction order


def chat(text: str, answer: str | None = None) -> str:
    prompt = f"{IM_START}system\n{SYSTEM_PROMPT}{IM_END}\n{IM_START}user\n{text}{IM_END}\n{IM_START}assistant\n"
    return prompt if answer is None else prompt + answer + IM_END


def answer_text(example: corpus.Example) -> str:
    # Compact, as vLLM's xgrammar emits JSON with disable_any_whitespace (the launcher's default).
    # Trained with ", " / ": " instead, the model was pushed off its tokens and answered 5/24 right.
    return json.dumps(example.answer, ensure_ascii=False, separators=(",", ":"))


def _tokenizer(recipe: Recipe, texts: list[str]) -> Any:  # a tokenizers.Tokenizer
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=recipe.vocab_size,
        min_frequency=2,
        special_tokens=[PAD, IM_START, IM_END],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    return tok


def _save_tokenizer(tok: Any, out: Path, recipe: Recipe) -> None:  # tok: a tokenizers.Tokenizer
    tok.save(str(out / "tokenizer.json"))
    # Written by hand, not save_pretrained: the platform, quantize and serve
    # environments run three different transformers 5.x releases and must all read it.
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": None,
        "eos_token": IM_END,
        "pad_token": PAD,
        "unk_token": None,
        "model_max_length": recipe.max_positions,
        "clean_up_tokenization_spaces": False,
        "chat_template": CHAT_TEMPLATE,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False, indent=2) + "\n")
    (out / "special_tokens_map.json").write_text(json.dumps({"eos_token": IM_END, "pad_token": PAD}, indent=2) + "\n")


def train(recipe: Recipe, out: Path, log: Callable[[str], None]) -> None:
    """Train the demo model for `recipe` and save it (weights, config, tokenizer) into `out`."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch
    from tqdm import tqdm
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    started = time.monotonic()
    train = corpus.examples(recipe.seed, recipe.train_examples, "train")
    texts = [chat(ex.text, answer_text(ex)) for ex in train]
    tok = _tokenizer(recipe, texts)
    _save_tokenizer(tok, out, recipe)
    pad, im_end = tok.token_to_id(PAD), tok.token_to_id(IM_END)

    rows = []
    for ex in train:
        prompt_ids = tok.encode(chat(ex.text)).ids
        answer_ids = tok.encode(answer_text(ex) + IM_END).ids
        rows.append((prompt_ids + answer_ids, len(prompt_ids)))
    longest = max(len(ids) for ids, _ in rows)
    if longest > recipe.max_positions:
        raise ValueError(f"a training example has {longest} tokens > max_positions {recipe.max_positions}")

    torch.manual_seed(recipe.seed)
    torch.set_num_threads(recipe.threads)
    torch.use_deterministic_algorithms(True)
    config = Qwen2Config(  # type: ignore[call-arg]  # rope_theta is read from kwargs at run time
        vocab_size=tok.get_vocab_size(),
        hidden_size=recipe.hidden_size,
        intermediate_size=recipe.intermediate_size,
        num_hidden_layers=recipe.layers,
        num_attention_heads=recipe.heads,
        num_key_value_heads=recipe.kv_heads,
        max_position_embeddings=recipe.max_positions,
        tie_word_embeddings=True,
        rope_theta=10000.0,
        bos_token_id=im_end,
        eos_token_id=im_end,
        pad_token_id=pad,
        dtype="float32",
    )
    model = Qwen2ForCausalLM(config)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=recipe.learning_rate, betas=(0.9, 0.98), weight_decay=0.01)

    def lr_at(step: int) -> float:
        if step < recipe.warmup_steps:
            return (step + 1) / recipe.warmup_steps
        progress = (step - recipe.warmup_steps) / max(1, recipe.steps - recipe.warmup_steps)
        return 0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * progress))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_at)
    order = torch.randperm(len(rows), generator=torch.Generator().manual_seed(recipe.seed)).tolist()
    bar = tqdm(range(recipe.steps), desc="training demo model", unit="step", file=sys.stderr, mininterval=2.0)
    loss_value = float("nan")
    for step in bar:
        picked = [rows[order[(step * recipe.batch_size + i) % len(rows)]] for i in range(recipe.batch_size)]
        width = max(len(ids) for ids, _ in picked)
        input_ids = torch.full((len(picked), width), pad, dtype=torch.long)
        labels = torch.full((len(picked), width), -100, dtype=torch.long)
        mask = torch.zeros((len(picked), width), dtype=torch.long)
        for row, (ids, prompt_len) in enumerate(picked):
            input_ids[row, : len(ids)] = torch.tensor(ids)
            labels[row, prompt_len : len(ids)] = torch.tensor(ids[prompt_len:])
            mask[row, : len(ids)] = 1
        loss = model(input_ids=input_ids, attention_mask=mask, labels=labels).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        loss_value = loss.item()
        bar.set_postfix(loss=f"{loss_value:.3f}", refresh=False)
    bar.close()

    model.eval()  # type: ignore[no-untyped-call]
    model.save_pretrained(out)
    generation = GenerationConfig(eos_token_id=im_end, pad_token_id=pad, do_sample=False)  # type: ignore[no-untyped-call]
    generation.save_pretrained(out)
    log(f"demo model: trained {recipe.steps} steps in {time.monotonic() - started:.0f}s, final loss {loss_value:.4f}")
