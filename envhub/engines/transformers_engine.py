"""The transformers generation engine: :class:`TransformersEngine`.

The fallback wherever vLLM is absent (and what the engine tests and CPU runs use): a batched
sampling loop over a transformers causal LM with a KV cache, stop strings, EOS handling and
seeded sampling. It implements :class:`envhub.engines.types.GenerationEngine`: prompts go in
as token ids, :class:`~envhub.engines.types.Generation` objects come out with the engine's
own token ids and per-token logprobs (see :mod:`envhub.engines.types` for their definition).

Example:
    >>> engine = TransformersEngine.from_pretrained("tiny")           # doctest: +SKIP
    >>> chat = ChatFormatter(engine.tokenizer)                          # doctest: +SKIP
    >>> prompt = chat.prompt_ids([Message(role="user", content="2+3?")])  # doctest: +SKIP
    >>> [g] = engine.generate([prompt], SamplingParams(max_tokens=16))  # doctest: +SKIP
    >>> g.text, g.token_ids, g.logprobs, g.finish_reason                # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .types import FinishReason, Generation, SamplingParams

if TYPE_CHECKING:
    import torch


@dataclass
class _Row:
    """Book-keeping of one completion while it is being sampled."""

    ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    done: bool = False
    finish: FinishReason = "length"
    stop_reason: str | None = None
    text: str | None = None


class TransformersEngine:
    """A :class:`GenerationEngine` over a transformers causal LM (CPU or GPU).

    Prompts are left-padded into batches of ``batch_size``; each step feeds the last token
    with a KV cache. Weights can be replaced in place with :meth:`load_state_dict` (refit).
    """

    def __init__(self, model: Any, tokenizer: Any, *, batch_size: int = 64) -> None:
        """Wrap a loaded model and its tokenizer."""
        self.model = model.eval()
        self._tokenizer = tokenizer
        self.batch_size = batch_size
        self.eos_ids = _eos_ids(model, tokenizer)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.max_model_len: int | None = getattr(model.config, "max_position_embeddings", None)
        """Longest prompt + completion the model's positions cover (None: unbounded)."""

    @classmethod
    def from_pretrained(
        cls,
        path_or_gguf_dir: str | Path,
        *,
        dtype: str = "float32",
        device: str = "cpu",
        batch_size: int = 64,
    ) -> TransformersEngine:
        """Load a model: an HF directory, a folder with one GGUF file, or ``smollm2``/``tiny``.

        Args:
            path_or_gguf_dir: Where the model is (see :func:`envhub.engines.weights.resolve_model`).
            dtype: Torch dtype name; float32 on CPU (bf16 is ~12x slower on AVX2 CPUs).
            device: Torch device.
            batch_size: Prompts per forward pass.
        """
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from .weights import quiet_loading_bars, resolve_model

        path = resolve_model(str(path_or_gguf_dir))
        quiet_loading_bars()
        tok = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype))
        return cls(model.to(device), tok, batch_size=batch_size)

    @property
    def tokenizer(self) -> Any:
        """The model's tokenizer."""
        return self._tokenizer

    def load_state_dict(self, state_dict: Mapping[str, torch.Tensor]) -> None:
        """Replace the weights in place (strict: every parameter must be present)."""
        import torch

        with torch.no_grad():
            self.model.load_state_dict(dict(state_dict), strict=True)

    def generate(
        self,
        prompts: list[list[int]],
        params: SamplingParams,
        seeds: list[int] | None = None,
    ) -> list[Generation]:
        """Sample one completion per prompt; see :class:`GenerationEngine`.

        Without ``seeds`` the call draws from one generator (seeded with ``params.seed``);
        with them, each prompt from its own.
        """
        import torch

        if any(len(p) == 0 for p in prompts):
            raise ValueError("every prompt needs at least one token")
        if seeds is not None and len(seeds) != len(prompts):
            raise ValueError(f"{len(seeds)} seeds for {len(prompts)} prompts: give one each")
        gens: list[torch.Generator] | torch.Generator
        if seeds is not None:
            gens = [self._generator(s) for s in seeds]
        else:
            gens = self._generator(params.seed if params.seed is not None else torch.seed())
        out: list[Generation] = []
        for start in range(0, len(prompts), self.batch_size):
            end = start + self.batch_size
            rows = gens[start:end] if isinstance(gens, list) else gens
            out.extend(self._generate_batch(prompts[start:end], params, rows))
        return out

    def _generator(self, seed: int) -> torch.Generator:
        import torch

        gen = torch.Generator(device=self.model.device)
        gen.manual_seed(seed % 2**63)
        return gen

    def _generate_batch(
        self,
        prompts: list[list[int]],
        params: SamplingParams,
        gen: torch.Generator | list[torch.Generator],
    ) -> list[Generation]:
        import torch
        from transformers import DynamicCache

        device = self.model.device
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for i, p in enumerate(prompts):  # left padding: every row ends at the same column
            ids[i, width - len(p) :] = torch.tensor(p)
            mask[i, width - len(p) :] = 1
        ids, mask = ids.to(device), mask.to(device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        rows = [_Row() for _ in prompts]
        cache = DynamicCache()
        with torch.no_grad():
            logits = self.model(
                input_ids=ids,
                attention_mask=mask,
                position_ids=positions,
                past_key_values=cache,
                use_cache=True,
            ).logits[:, -1, :]
            for step in range(params.max_tokens):
                tokens, logprobs = _sample(logits.float(), params, gen)
                self._record(rows, tokens.tolist(), logprobs.tolist(), params)
                if all(r.done for r in rows) or step == params.max_tokens - 1:
                    break
                mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
                positions = positions[:, -1:] + 1
                logits = self.model(
                    input_ids=tokens[:, None],
                    attention_mask=mask,
                    position_ids=positions,
                    past_key_values=cache,
                    use_cache=True,
                ).logits[:, -1, :]
        return [self._finish(r, params) for r in rows]

    def _record(
        self, rows: list[_Row], tokens: list[int], logprobs: list[float], params: SamplingParams
    ) -> None:
        for row, tok, lp in zip(rows, tokens, logprobs, strict=True):
            if row.done:
                continue
            row.ids.append(tok)
            row.logprobs.append(lp)
            if tok in self.eos_ids:
                row.done, row.finish, row.stop_reason = True, "stop", "<eos>"
            elif params.stop:
                text = self._tokenizer.decode(row.ids, skip_special_tokens=True)
                hit = _first_stop(text, params.stop)
                if hit is not None:
                    cut, stop = hit
                    row.done, row.finish, row.stop_reason = True, "stop", stop
                    row.text = (
                        text[: cut + len(stop)]
                        if params.include_stop_str_in_output
                        else (text[:cut])
                    )

    def _finish(self, row: _Row, params: SamplingParams) -> Generation:
        text = row.text
        if text is None:
            text = self._tokenizer.decode(row.ids, skip_special_tokens=True)
        return Generation(
            token_ids=row.ids,
            logprobs=row.logprobs,
            text=text,
            finish_reason=row.finish,
            stop_reason=row.stop_reason,
        )


def _eos_ids(model: Any, tokenizer: Any) -> set[int]:
    """Every id that ends a turn: the tokenizer's EOS and the generation config's."""
    ids = {tokenizer.eos_token_id}
    cfg = getattr(model, "generation_config", None)
    extra = getattr(cfg, "eos_token_id", None) if cfg is not None else None
    if isinstance(extra, int):
        ids.add(extra)
    elif extra:
        ids.update(extra)
    return {i for i in ids if i is not None}


def _first_stop(text: str, stops: Sequence[str]) -> tuple[int, str] | None:
    """Earliest match of any stop string in ``text`` as ``(index, stop)``."""
    best: tuple[int, str] | None = None
    for stop in stops:
        at = text.find(stop)
        if at >= 0 and (best is None or at < best[0]):
            best = (at, stop)
    return best


def _sample(
    logits: torch.Tensor, params: SamplingParams, gen: torch.Generator | list[torch.Generator]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pick one token per row; return ``(tokens [B], logprobs [B])``.

    Logprobs come from ``log_softmax(logits / T)`` before top-k/top-p filtering. ``gen``: one
    generator for the batch, or one per row (each row's draw then depends on its own only).
    """
    import torch

    temperature = params.temperature if params.temperature > 0 else 1.0
    logp = torch.log_softmax(logits / temperature, dim=-1)  # [B, V]
    if params.temperature == 0:
        tokens = logp.argmax(dim=-1)
    else:
        filtered = _filter(logp, params.top_k, params.top_p)
        probs = torch.softmax(filtered, dim=-1)
        if isinstance(gen, list):
            rows = zip(probs, gen, strict=True)
            tokens = torch.cat([torch.multinomial(p[None], 1, generator=g) for p, g in rows])
            tokens = tokens.squeeze(-1)
        else:
            tokens = torch.multinomial(probs, 1, generator=gen).squeeze(-1)
    return tokens, logp.gather(-1, tokens[:, None]).squeeze(-1)


def _filter(logp: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    """Mask tokens outside the top-k and the top-p nucleus with ``-inf``."""
    import torch

    out = logp
    if top_k > 0 and top_k < out.shape[-1]:
        kth = torch.topk(out, top_k, dim=-1).values[:, -1:]
        out = out.masked_fill(out < kth, float("-inf"))
    if top_p < 1.0:
        sorted_lp, order = torch.sort(out, dim=-1, descending=True)
        cum = torch.softmax(sorted_lp, dim=-1).cumsum(-1)
        drop = cum - torch.softmax(sorted_lp, dim=-1) > top_p  # keep the token crossing top_p
        sorted_lp = sorted_lp.masked_fill(drop, float("-inf"))
        out = torch.full_like(out, float("-inf")).scatter(-1, order, sorted_lp)
    return out
