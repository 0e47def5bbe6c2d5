#!/usr/bin/env python3
"""Writes a tiny Qwen2-architecture model that vLLM's CPU build can serve, without the model hub.

    python integrations/vllm/scripts/make-tiny-model.py OUT_DIR [--seed 20261130] [--arch qwen2|sliding|mla]

The same seed gives the same files, byte for byte (the script prints a digest of them): a config.json, a
byte-level BPE tokenizer trained with `tokenizers` on a corpus built into this script, and random weights
saved as safetensors. The weights are normal with std 0.3 rather than the usual 0.02: with small weights the
next token hardly depends on the context, and the end-to-end tests must see a decode from the wrong KV give
a different answer than the reference (docs/vllm.md, "The CI stage").

Geometry (what a pd-connector beside a vLLM instance serving this model must be configured with):
2 layers, 2 KV heads, head dim 32, a 512-token tokenizer in a model vocabulary of 201,088 (gpt-oss's). The weights are stored as float32, but vLLM's CPU backend serves a float32
checkpoint in bfloat16 by default, so its KV cache holds 2-byte values (pd.model.dtype-bytes=2); the tests pass
`--dtype bfloat16` to say so. vLLM's CPU backend uses 128-token blocks (its CPU_MLA backend, on a CPU without
AMX, 16).

Two more shapes the models issue asks for, each with the same tokenizer and a model vocabulary of the tokenizer's
512 (their tests send no large-vocabulary prompt):
- ``--arch sliding``: Llama-architecture, ``layer_types`` [sliding_attention, full_attention] with a 64-token
  window (Gemma 3's and gpt-oss's shape); the same KV geometry as the Qwen2 model.
- ``--arch mla``: DeepSeek-V2-architecture, dense layers, multi-head latent attention with ``kv_lora_rank`` 512
  and a 64-wide rope part: one 576-wide latent row per token and layer, the only width vLLM's CPU MLA decode
  kernel takes.
"""
import argparse
import hashlib
import json
import os
import random
import sys

HIDDEN = 128
LAYERS = 2
HEADS = 4
KV_HEADS = 2
HEAD_DIM = HIDDEN // HEADS
INTERMEDIATE = 256
VOCAB = 512  # the tokenizer's
# The model's vocabulary: gpt-oss's. Its embedding and output rows cover it, so a prompt may hold token ids up to
# MODEL_VOCAB - 1 (vLLM checks ids against the larger of the tokenizer's and the model's vocabulary), as a gpt-oss
# prompt does and pd-connector's own 151,936-id bound does not; the output rows past the tokenizer's are zero, so
# an answer's tokens are ones the tokenizer can write.
MODEL_VOCAB = 201_088
MAX_POSITIONS = 4096
WEIGHT_STD = 0.3
SLIDING_WINDOW = 64
MLA_KV_LORA_RANK = 512
MLA_ROPE_DIM = 64
MLA_NOPE_DIM = 32
MLA_V_DIM = 32
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

# A Qwen-style chat template, so /v1/chat/completions works on the tiny model.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

_SEED_TEXT = """\
The prefill instance computes the key and value cache of a prompt, and the decode instance reads it and
continues. A lease proves that the bytes read were still the producer's when the read finished.
Blocks of one hundred and twenty eight tokens move between engines; each block holds every layer.
Routers forward the transfer parameters verbatim; a decline makes the decoder fail or recompute.
Numbers: 0 1 2 3 4 5 6 7 8 9 10 42 128 300 1024 2026. Punctuation: , . ; : ! ? ( ) [ ] { } " ' - / = +
"""

_WORDS = (
    "cache block lease nonce slot prefill decode engine router token layer head value key tensor shared "
    "memory agent read write finish reserve release verify reject retry request answer prompt model vector "
    "river mountain garden window orange yellow purple silver market winter summer morning evening quiet "
    "fast slow small large early late bright dark open closed north south east west paper stone glass "
    "the a of and to in is was for on with as by at from that this it be are or an not"
).split()


def corpus(seed):
    """A fixed corpus: the seed text plus sentences drawn from a word list with a seeded generator."""
    rng = random.Random(seed)
    lines = _SEED_TEXT.splitlines()
    for _ in range(3000):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(4, 14))]
        sentence = " ".join(words).capitalize()
        if rng.random() < 0.3:
            sentence += " " + str(rng.randint(0, 9999))
        lines.append(sentence + rng.choice([".", ".", ".", "?", "!", ";"]))
    return lines


def train_tokenizer(seed):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus(seed), trainer=trainer)
    return tokenizer


def qwen2_config(tokenizer):
    from transformers import Qwen2Config

    eos = tokenizer.token_to_id("<|endoftext|>")
    return Qwen2Config(
        vocab_size=MODEL_VOCAB,
        hidden_size=HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        head_dim=HEAD_DIM,
        max_position_embeddings=MAX_POSITIONS,
        rope_theta=10000.0,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        use_sliding_window=False,
        bos_token_id=eos,
        eos_token_id=eos,
        pad_token_id=eos,
        torch_dtype="float32",
        architectures=["Qwen2ForCausalLM"],
    )


def llama_sliding_config(tokenizer):
    from transformers import LlamaConfig

    eos = tokenizer.token_to_id("<|endoftext|>")
    config = LlamaConfig(
        vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=INTERMEDIATE, num_hidden_layers=LAYERS,
        num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, head_dim=HEAD_DIM,
        max_position_embeddings=MAX_POSITIONS, rms_norm_eps=1e-6, tie_word_embeddings=False,
        bos_token_id=eos, eos_token_id=eos, pad_token_id=eos, torch_dtype="float32",
        architectures=["LlamaForCausalLM"])
    # vLLM's Llama reads a per-layer window from these (Qwen2's vLLM model ignores them)
    config.layer_types = ["sliding_attention", "full_attention"]
    config.sliding_window = SLIDING_WINDOW
    return config


def deepseek_mla_config(tokenizer):
    from transformers import DeepseekV2Config

    eos = tokenizer.token_to_id("<|endoftext|>")
    return DeepseekV2Config(
        vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=INTERMEDIATE, num_hidden_layers=LAYERS,
        num_attention_heads=HEADS, num_key_value_heads=HEADS, max_position_embeddings=MAX_POSITIONS,
        rms_norm_eps=1e-6, tie_word_embeddings=False, bos_token_id=eos, eos_token_id=eos, pad_token_id=eos,
        torch_dtype="float32", architectures=["DeepseekV2ForCausalLM"],
        first_k_dense_replace=LAYERS,  # every layer dense: no experts
        kv_lora_rank=MLA_KV_LORA_RANK, q_lora_rank=None, qk_nope_head_dim=MLA_NOPE_DIM,
        qk_rope_head_dim=MLA_ROPE_DIM, v_head_dim=MLA_V_DIM, n_routed_experts=1, n_shared_experts=1,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0})


# name: (config builder, model vocabulary, pd-connector geometry)
ARCHES = {
    "qwen2": (qwen2_config, MODEL_VOCAB, {"attention": "mha", "kv_heads": KV_HEADS, "head_dim": HEAD_DIM}),
    "sliding": (llama_sliding_config, VOCAB, {"attention": "mha", "kv_heads": KV_HEADS, "head_dim": HEAD_DIM,
                                              "kv_groups": f"window:{SLIDING_WINDOW}/1,full/1"}),
    "mla": (deepseek_mla_config, VOCAB, {"attention": "mla", "kv_heads": 1,
                                         "head_dim": MLA_KV_LORA_RANK + MLA_ROPE_DIM}),
}


def random_weights(model, seed, model_vocab=MODEL_VOCAB):
    """Every matrix and bias normal(0, WEIGHT_STD) from one seeded numpy generator (stable across torch
    versions); norm scales stay 1 so activations keep their scale."""
    import numpy as np
    import torch

    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, param in sorted(model.named_parameters()):
            if name.endswith("norm.weight"):
                param.fill_(1.0)
            else:
                values = rng.normal(0.0, WEIGHT_STD, size=tuple(param.shape)).astype(np.float32)
                if name == "lm_head.weight" and model_vocab > VOCAB:
                    values[VOCAB:] = 0.0  # logit 0 beside 512 random ones: never the greedy choice
                param.copy_(torch.from_numpy(values))


def digest(out_dir):
    h = hashlib.sha256()
    for name in sorted(os.listdir(out_dir)):
        h.update(name.encode())
        with open(os.path.join(out_dir, name), "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--arch", choices=sorted(ARCHES), default="qwen2")
    args = parser.parse_args(argv)

    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast
    import torch

    torch.manual_seed(args.seed)  # module init draws from torch's generator before our weights replace it
    os.makedirs(args.out_dir, exist_ok=True)
    tokenizer = train_tokenizer(args.seed)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>", "<|im_end|>"],
        model_max_length=MAX_POSITIONS,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(args.out_dir)

    make_config, model_vocab, kv = ARCHES[args.arch]
    config = make_config(tokenizer)
    model = AutoModelForCausalLM.from_config(config).to(torch.float32)
    random_weights(model, args.seed, model_vocab)
    model.save_pretrained(args.out_dir, safe_serialization=True)

    # The geometry a pd-connector beside this model needs, next to the model (read by the e2e harness).
    with open(os.path.join(args.out_dir, "pd-geometry.json"), "w") as f:
        json.dump({"arch": args.arch, "layers": LAYERS, **kv, "vllm_dtype": "bfloat16", "dtype_bytes": 2,
                   "model_vocab": model_vocab}, f, indent=2, sort_keys=True)
        f.write("\n")
    print(f"tiny {args.arch} model in {args.out_dir}: {LAYERS} layers, {kv['attention']} KV, {kv['kv_heads']} KV "
          f"heads of width {kv['head_dim']}, vocab {VOCAB} (tokenizer) of {model_vocab} (model), float32 weights "
          f"(served as bfloat16), seed {args.seed}, sha256 {digest(args.out_dir)}")


if __name__ == "__main__":
    main(sys.argv[1:])
