"""Corpora and the BM25 index over them, built once and cached on disk.

A corpus is a list of :class:`~envhub.envs.search.world.Doc` (id, title, text). It comes from the
generated world (``synthetic``), a local JSONL file of ``{"id", "title", "text"}`` rows
(``jsonl``), a dataset loaded through the ``datasets`` library (``hf``), or the context
paragraphs carried by the tasks themselves, in HotpotQA's layout (``contexts``).

The index is ``bm25s`` (Lucene-style BM25). It is built the first time a corpus is seen and
saved under ``$ENVHUB_HOME/cache/search/<key>/``, where the key hashes the corpus content, the
BM25 parameters and the tokenizer settings: a changed corpus gets a new index, never a stale
one. The build is written to a temporary folder and renamed into place, so concurrent builders
and interrupted builds never leave a half-written index behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from envhub.datasets import cache_dir, read_jsonl, resolve_path
from envhub.errors import ConfigError, missing
from envhub.types import Task

from .world import DEFAULT_SIZES, Doc, generate

INDEX_FORMAT = 1
"""Bump when the index layout or tokenisation changes: old cache entries are then ignored."""
_TOKENS: dict[str, Any] = {"stopwords": "en", "lower": True}
_MEMORY: dict[str, Any] = {}
_LOCK = threading.Lock()


class CorpusSpec(BaseModel):
    """Where the documents come from (the ``corpus`` option of the search environment)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["synthetic", "jsonl", "hf", "contexts"] = "synthetic"
    """``synthetic``: the generated world; ``jsonl``: a local file; ``hf``: a ``datasets``
    name; ``contexts``: the HotpotQA-style ``context`` field of the tasks."""
    path: str | None = None
    """File (``jsonl``, relative to the YAML file) or dataset name (``hf``)."""
    config: str | None = None
    """``hf`` only: the dataset configuration."""
    split: str = "train"
    """``hf`` only: the split holding the documents."""
    fields: dict[str, str] = Field(default_factory=dict)
    """Map from ``id``, ``title``, ``text`` to the row's column names."""
    limit: int | None = Field(default=None, ge=1)
    """Read at most this many documents."""
    seed: int = 0
    """``synthetic`` only: the world's seed."""
    sizes: dict[str, int] = Field(default_factory=dict)
    """``synthetic`` only: entity counts, overriding ``world.DEFAULT_SIZES``."""


def load_corpus(spec: CorpusSpec, base: Path | None, tasks: Sequence[Task] = ()) -> list[Doc]:
    """The documents described by ``spec``; ``tasks`` feed the ``contexts`` kind."""
    if spec.kind == "synthetic":
        unknown = sorted(set(spec.sizes) - set(DEFAULT_SIZES))
        if unknown:
            raise ConfigError(
                f"corpus.sizes: unknown kind(s) {unknown}; use {sorted(DEFAULT_SIZES)}"
            )
        return generate(spec.seed, spec.sizes).docs
    if spec.kind == "contexts":
        docs = docs_from_contexts(tasks)
        if not docs:
            raise ConfigError(
                "corpus.kind=contexts found no 'context' field in the tasks; load a dataset "
                "with HotpotQA-style contexts or use corpus.kind=jsonl"
            )
        return docs
    if not spec.path:
        raise ConfigError(f"corpus.kind={spec.kind!r} needs corpus.path")
    if spec.kind == "jsonl":
        rows = read_jsonl(resolve_path(spec.path, spec.split, base), spec.limit)
    else:
        rows = _hf_rows(spec)
    return [_row_to_doc(row, i, spec.fields) for i, row in enumerate(rows)]


def _hf_rows(spec: CorpusSpec) -> list[dict[str, Any]]:
    try:
        import datasets as hf_datasets
    except ImportError as e:
        raise missing("datasets", "data") from e
    try:
        ds = hf_datasets.load_dataset(spec.path, spec.config, split=spec.split)
    except Exception as e:
        raise ConfigError(
            f"could not load corpus {spec.path!r} (split {spec.split!r}): {e}. Offline? "
            "Point corpus.kind/path at a local JSONL file of {id, title, text} rows."
        ) from e
    if spec.limit:
        ds = ds.select(range(min(spec.limit, len(ds))))
    return [dict(r) for r in ds]


def _row_to_doc(row: dict[str, Any], index: int, fields: dict[str, str]) -> Doc:
    col = {k: fields.get(k, k) for k in ("id", "title", "text")}
    if col["text"] not in row:
        raise ConfigError(
            f"corpus row {index} has no {col['text']!r} column (columns: {sorted(row)}); "
            "map it with corpus.fields.text"
        )
    doc_id = str(row.get(col["id"], f"doc-{index:06d}"))
    return Doc(doc_id=doc_id, title=str(row.get(col["title"], "")), text=str(row[col["text"]]))


def docs_from_contexts(tasks: Sequence[Task]) -> list[Doc]:
    """One document per distinct title in the tasks' HotpotQA-style ``context``.

    Both layouts are read: the ``datasets`` one (``{"title": [...], "sentences": [[...]]}``)
    and the original JSON one (``[[title, [sentence, ...]], ...]``).
    """
    texts: dict[str, str] = {}
    for task in tasks:
        ctx = task.metadata.get("context")
        if isinstance(ctx, dict):
            pairs = zip(ctx.get("title", []), ctx.get("sentences", []), strict=False)
        elif isinstance(ctx, list):
            pairs = ((p[0], p[1]) for p in ctx if isinstance(p, list | tuple) and len(p) == 2)
        else:
            continue
        for title, sentences in pairs:
            text = "".join(sentences) if isinstance(sentences, list) else str(sentences)
            texts.setdefault(str(title), text.strip())
    titles = sorted(texts)
    return [Doc(doc_id=f"wiki-{i:06d}", title=t, text=texts[t]) for i, t in enumerate(titles)]


def corpus_key(docs: Sequence[Doc], k1: float, b: float) -> str:
    """Content hash naming a corpus's index in the cache."""
    h = hashlib.sha256(json.dumps([INDEX_FORMAT, k1, b, _TOKENS]).encode())
    for d in docs:
        h.update(json.dumps([d.doc_id, d.title, d.text]).encode())
        h.update(b"\n")
    return h.hexdigest()[:20]


def cache_root() -> Path:
    """``$ENVHUB_HOME/cache/search`` (``~/.envhub`` when ``ENVHUB_HOME`` is unset)."""
    return cache_dir("search")


class SearchIndex:
    """BM25 over a corpus: ``search(query, k)`` -> documents with scores."""

    def __init__(self, docs: Sequence[Doc], k1: float = 1.5, b: float = 0.75) -> None:
        """Load the cached index of ``docs``, or build and cache it."""
        if not docs:
            raise ConfigError("the search corpus is empty")
        self.docs = list(docs)
        self.by_id = {d.doc_id: d for d in self.docs}
        if len(self.by_id) != len(self.docs):
            raise ConfigError("the search corpus repeats a document id; ids must be unique")
        self.key = corpus_key(self.docs, k1, b)
        self.path = cache_root() / self.key
        self.loaded_from_cache = False
        with _LOCK:
            if self.key not in _MEMORY:
                _MEMORY[self.key] = self._load_or_build(k1, b)
            self._bm25 = _MEMORY[self.key]

    def _load_or_build(self, k1: float, b: float) -> Any:
        bm25s = _bm25s()
        if (self.path / "params.index.json").exists():
            try:
                retriever = bm25s.BM25.load(str(self.path), show_progress=False)
                self.loaded_from_cache = True
                return retriever
            except Exception:  # noqa: BLE001 (a cache entry bm25s cannot load, whatever it raises, is rebuilt below)
                shutil.rmtree(self.path, ignore_errors=True)
        texts = [f"{d.title}\n{d.title}\n{d.text}" for d in self.docs]
        tokens = bm25s.tokenize(texts, return_ids=False, show_progress=False, **_TOKENS)
        retriever = bm25s.BM25(k1=k1, b=b)
        retriever.index(tokens, show_progress=False)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{self.key}-", dir=self.path.parent))
        retriever.save(str(tmp), show_progress=False)
        try:
            os.replace(tmp, self.path)
        except OSError:  # another process won the race; its index is the same
            shutil.rmtree(tmp, ignore_errors=True)
        return retriever

    def search(self, query: str, k: int) -> list[tuple[Doc, float]]:
        """The ``k`` best documents for ``query`` with their scores; non-matches left out."""
        bm25s = _bm25s()
        tokens = bm25s.tokenize([query], return_ids=False, show_progress=False, **_TOKENS)
        if not tokens[0]:
            return []
        k = min(k, len(self.docs))
        ids, scores = self._bm25.retrieve(tokens, k=k, show_progress=False, n_threads=0)
        pairs = zip(ids[0], scores[0], strict=True)
        return [(self.docs[int(i)], float(s)) for i, s in pairs if s > 0]


def _bm25s() -> Any:
    try:
        import bm25s
    except ImportError as e:
        raise missing("bm25s", "search") from e
    return bm25s
