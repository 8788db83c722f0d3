# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A tiny Llama for real vLLM on the CPU (tests only; never downloads weights).

    python build_tiny_model.py OUT_DIR

Random weights (seeded) in float32 safetensors: hidden 128, 4 heads of 32 (the CPU attention needs
a head size of 32 or more), 2 layers; a byte-level BPE tokenizer trained on generated text, with a
chat template. About 1-2 MB; the same files every time for the same inputs.
"""

from __future__ import annotations

import json
import pathlib
import random
import sys

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

SPECIAL = ["<unk>", "<s>", "</s>", "<|user|>", "<|assistant|>", "<|system|>"]
CHAT_TEMPLATE = ("{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>{% endif %}")
WORDS = ["the", "future", "of", "ai", "is", "a", "cluster", "that", "serves", "every", "request", "with", "prefill",
         "and", "decode", "on", "nodes", "whose", "devices", "hold", "the", "kv", "cache", "blocks", "of", "each",
         "prompt", "while", "the", "proxy", "sends", "tokens", "to", "engines"]


def corpus(lines=4000):
    """Generated text: English-ish sentences and the shapes of the prompts the tests send (wordN, nonces)."""
    rng = random.Random(1024)
    for index in range(lines):
        words = [rng.choice(WORDS) for _word in range(rng.randint(5, 20))]
        words += ["word%d" % rng.randint(0, 96) for _word in range(rng.randint(0, 8))]
        words.append("verify-%x" % rng.getrandbits(48))
        yield ("The future of AI is " if index % 7 == 0 else "") + " ".join(words) + "."


def tokenizer(out):
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    # The alphabet is what the (ASCII) corpus holds, not all 256 bytes: a random model's greedy answer
    # (whose near-equal logits may tip differently from run to run) then never consists of bytes that
    # are no whole UTF-8 character, which vLLM detokenizes to "" and verify rightly calls no text.
    trainer = trainers.BpeTrainer(vocab_size=1024, special_tokens=SPECIAL)
    tok.train_from_iterator(corpus(), trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    fast.chat_template = CHAT_TEMPLATE
    fast.model_max_length = 2048
    fast.save_pretrained(out)
    return fast


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    fast = tokenizer(out)
    config = LlamaConfig(vocab_size=len(fast), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=4, head_dim=32, max_position_embeddings=2048,
                         bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id, torch_dtype="float32",
                         tie_word_embeddings=False)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    model.save_pretrained(out, safe_serialization=True)
    (out / "generation_config.json").write_text(json.dumps({"bos_token_id": fast.bos_token_id, "eos_token_id": fast.eos_token_id}))
    print("tiny model in %s: vocab %d, %d parameters" % (out, len(fast), sum(p.numel() for p in model.parameters())))


if __name__ == "__main__":
    main()
