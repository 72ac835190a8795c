"""Search: answer a question by calling ``search`` and ``open`` tools over a BM25 index.

An episode: the model reads the question, calls ``search(query, k)`` (top-k snippets with doc
ids) and ``open(doc_id)`` (a whole document) as often as the turn budget allows, then answers
with a message that makes no tool call, ideally ``<answer>...</answer>``. Tool calls may be
structured (``message.tool_calls``; results come back as ``role="tool"`` messages with the
``tool_call_id``) or text ``<tool_call>{...}</tool_call>`` blocks (results come back in one
``role="user"`` message of ``<tool_response>`` blocks); see :mod:`envhub.tools`.

A malformed call (bad JSON, unknown tool, bad arguments, unknown doc id) does not end the
episode: the model gets an error message in place of that call's result, the step's status is
``invalid_action`` with the error in ``info.error``, and the ``invalid_calls`` component counts
it. The reward is paid on the answering step (or at truncation):

* ``correctness``: normalised exact match with the gold answer or an alias (primary);
* ``f1``: SQuAD token F1, best over gold and aliases;
* ``format``: 1 when the answer came in exactly one non-empty ``<answer>`` block;
* ``tool_calls``: the number of tool calls run in the episode (give it a negative weight);
* ``invalid_calls``: the number of malformed calls (likewise).
"""

from __future__ import annotations

from typing import Any, ClassVar

from envhub.core import Episode
from envhub.errors import ConfigError, InvalidAction
from envhub.spec import EnvSpec, Knob, check_dataset_knobs
from envhub.tools import Param, ParsedCall, Tool, ToolCounts, ToolEnv, ToolSet
from envhub.types import Message, Task

from .agent import ScriptedAgent, match_question
from .index import CorpusSpec, SearchIndex, load_corpus
from .results import format_open, format_search
from .scoring import extract_answer, score_answer
from .world import HOPS, generate

DEFAULT_SYSTEM_PROMPT = (
    "Answer the user's question using the search tools. Search for one entity at a time, "
    "open a document when its snippet is cut short, and follow the facts step by step. "
    "When you know the answer, reply without a tool call as <answer>ANSWER</answer>, where "
    "ANSWER is only the name, place or number asked for."
)


class SearchEnv(ToolEnv):
    """Multi-turn question answering with search and open tools over a BM25 index."""

    components: ClassVar[frozenset[str]] = frozenset(
        {"correctness", "f1", "format", "tool_calls", "invalid_calls"}
    )
    counters: ClassVar[frozenset[str]] = frozenset({"tool_calls", "invalid_calls"})
    primary_component: ClassVar[str] = "correctness"
    default_system_prompt: ClassVar[str | None] = DEFAULT_SYSTEM_PROMPT
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("hops", "dataset.options", "Relations a generated question follows from its "
             "anchor (each one more search): a number, or [min, max].", list(HOPS),
             "an int or [min, max] of ints", "higher", low=HOPS[0], high=HOPS[1]),
    )  # fmt: skip
    task_difficulty: ClassVar[str] = (
        "the question's hops (relations followed: 2 or 3) for the generated questions; a "
        "dataset's own 'difficulty' column otherwise"
    )

    def __init__(
        self,
        spec: EnvSpec,
        corpus: dict[str, Any] | None = None,
        top_k: int = 5,
        max_k: int = 10,
        snippet_chars: int = 200,
        doc_chars: int = 4000,
        max_calls_per_turn: int = 4,
        tools_in_prompt: bool = True,
        **options: Any,
    ) -> None:
        """Build the environment; the index is loaded (or built) on first use.

        Args:
            spec: The catalog entry.
            corpus: Where the documents come from (:class:`CorpusSpec` fields); the
                generated world by default.
            top_k: Results a search returns when the model gives no ``k``.
            max_k: The largest ``k`` a search may ask for.
            snippet_chars: Characters of each result's text shown by ``search``.
            doc_chars: Characters of a document shown by ``open``.
            max_calls_per_turn: Calls run from one message; further ones get an error.
            tools_in_prompt: Describe the tools and the text call form in the system prompt
                (for models without native tool calling).
            **options: Unknown options are an error.
        """
        if options:
            raise ConfigError(f"search: unknown option(s) {sorted(options)}")
        if not 1 <= top_k <= max_k:
            raise ConfigError(f"search: need 1 <= top_k <= max_k, got {top_k} and {max_k}")
        super().__init__(spec)
        check_dataset_knobs(spec, self.knobs)
        self.hops = hops_range(spec)
        self.corpus_spec = CorpusSpec.model_validate(corpus or {})
        self.top_k, self.snippet_chars, self.doc_chars = top_k, snippet_chars, doc_chars
        self.tools_in_prompt = tools_in_prompt
        self.toolset = ToolSet(_tool_defs(top_k, max_k), max_calls=max_calls_per_turn)
        self._search_index: SearchIndex | None = None

    # ------------------------------------------------------------------ data

    @property
    def index(self) -> SearchIndex:
        """The BM25 index over the corpus, loaded or built on first use."""
        if self._search_index is None:
            tasks = self.tasks() if self.corpus_spec.kind == "contexts" else ()
            docs = load_corpus(self.corpus_spec, self.spec.source_dir, tasks)
            self._search_index = SearchIndex(docs)
        return self._search_index

    def builtin_tasks(self, split: str, size: int | None, seed: int) -> list[Task]:
        """Generated multi-hop questions over the generated world."""
        if self.corpus_spec.kind != "synthetic":
            raise ConfigError(
                "search: builtin questions exist only for corpus.kind=synthetic; give "
                "dataset.kind/path for questions over your own corpus"
            )
        if split not in ("train", "test"):
            raise ConfigError(f"search: builtin splits are 'train' and 'test', not {split!r}")
        world = generate(self.corpus_spec.seed, self.corpus_spec.sizes)
        return world.questions(split, size, seed, self.hops)

    # ------------------------------------------------------------------ episode

    def init_state(self, episode: Episode) -> ToolCounts:
        """Fresh tallies; the index is made ready before the first step."""
        _ = self.index
        return ToolCounts()

    def call_tool(self, episode: Episode, call: ParsedCall) -> str:
        """``search`` or ``open``; an unknown doc id is the model's invalid call."""
        if call.name == "open":
            return self._open(**call.arguments)
        return self._search(**call.arguments)

    def score(self, task: Task, response: Message) -> tuple[dict[str, float], dict[str, Any]]:
        """Correctness, F1 and format of a final answer."""
        answer, well_formed = extract_answer(response.content)
        golds = [task.answer, *task.metadata.get("aliases", [])]
        em, f1 = score_answer(answer, golds)
        components = {"correctness": em, "f1": f1, "format": float(well_formed)}
        return components, {"answer": answer}

    def reference_action(self, episode: Episode) -> Message:
        """The scripted agent's move for generated questions; the gold answer otherwise."""
        synthetic = self.corpus_spec.kind == "synthetic"
        if synthetic and match_question(episode.task.prompt) is not None:
            agent = ScriptedAgent(episode.task.prompt, self.toolset, structured=True)
            return agent.act(episode.messages)
        return Message(role="assistant", content=f"<answer>{episode.task.answer}</answer>")

    def info(self) -> dict[str, Any]:
        """The base description plus the corpus in use."""
        return {**super().info(), "corpus": self.corpus_spec.model_dump(exclude_defaults=True)}

    # ------------------------------------------------------------------ tools

    def _search(self, query: str, k: int) -> str:
        hits = self.index.search(query, k)
        return format_search(query, hits, len(self.index.docs), self.snippet_chars)

    def _open(self, doc_id: str) -> str:
        doc = self.index.by_id.get(doc_id.strip())
        if doc is None:
            raise InvalidAction(
                f"no document has id {doc_id!r}; use an id shown by search, e.g. "
                f"{self.index.docs[0].doc_id!r}"
            )
        return format_open(doc, self.doc_chars)


def hops_range(spec: EnvSpec) -> tuple[int, int]:
    """``dataset.options.hops`` as ``(min, max)``: a number ``n`` is ``(n, n)``.

    Raises:
        ConfigError: not a number or a pair of numbers from 2 to 3 in order, or set for
            questions that are not generated (hops filters the generated ones only).
    """
    value = spec.dataset.options.get("hops", list(HOPS))
    pair = [value, value] if isinstance(value, int) and not isinstance(value, bool) else value
    ok = isinstance(pair, list) and len(pair) == 2
    ok = ok and all(isinstance(h, int) and not isinstance(h, bool) for h in pair)
    if not ok or not HOPS[0] <= pair[0] <= pair[1] <= HOPS[1]:
        raise ConfigError(
            f"{spec.name}: dataset.options.hops = {value!r} is not allowed; give a number or "
            f"[min, max] with {HOPS[0]} <= min <= max <= {HOPS[1]}"
        )
    if "hops" in spec.dataset.options and spec.dataset.kind != "builtin":
        raise ConfigError(
            f"{spec.name}: dataset.options.hops filters the generated questions "
            "(dataset.kind: builtin); remove it, or filter your own dataset's rows"
        )
    return pair[0], pair[1]


MAX_QUERY_CHARS = 1000
"""Longest ``search`` query: keywords, not a document (the answer echoes the query)."""
MAX_DOC_ID_CHARS = 200


def _tool_defs(top_k: int, max_k: int) -> list[Tool]:
    return [
        Tool(
            name="search",
            description="Search the document collection (BM25 keyword search). Returns the "
            "best matching documents with their ids, titles and the start of their text.",
            params=(
                Param(
                    "query",
                    "string",
                    "Keywords to look for, e.g. a name.",
                    min_length=1,
                    max_length=MAX_QUERY_CHARS,
                ),
                Param(
                    "k",
                    "integer",
                    "How many results to return.",
                    required=False,
                    default=top_k,
                    minimum=1,
                    maximum=max_k,
                ),
            ),
        ),
        Tool(
            name="open",
            description="Read a whole document by its id (as shown in search results).",
            params=(
                Param(
                    "doc_id",
                    "string",
                    "Id of the document, as listed by search.",
                    max_length=MAX_DOC_ID_CHARS,
                ),
            ),
        ),
    ]
