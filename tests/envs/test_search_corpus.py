"""The search corpora: the generated world, the on-disk BM25 cache, and user corpora."""

import collections
import json
import subprocess
import sys
from pathlib import Path

import pytest

from envhub.authoring.checker import check_env
from envhub.envs.search import index as search_index
from envhub.envs.search.agent import ScriptedAgent
from envhub.envs.search.env import SearchEnv
from envhub.envs.search.index import CorpusSpec, SearchIndex, corpus_key, load_corpus
from envhub.envs.search.world import DEFAULT_SIZES, Doc, generate
from envhub.errors import ConfigError
from envhub.spec import EnvSpec
from envhub.types import Status

ROOT = Path(__file__).resolve().parents[2]
SMALL = {"country": 5, "city": 30, "university": 6, "person": 60, "company": 30, "invention": 30}


def test_world_is_deterministic_across_processes():
    code = (
        "from envhub.envs.search.world import generate; from envhub.envs.search.index import corpus_key;"
        f"print(corpus_key(generate(3, {SMALL!r}).docs, 1.5, 0.75))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "99", "PATH": ""},
    )
    assert out.stdout.strip() == corpus_key(generate(3, SMALL).docs, 1.5, 0.75)
    assert corpus_key(generate(4, SMALL).docs, 1.5, 0.75) != out.stdout.strip()


def test_world_is_large_with_look_alike_names():
    world = generate(0)
    assert len(world.docs) == sum(DEFAULT_SIZES.values()) >= 2500
    assert (
        len({d.doc_id for d in world.docs}) == len({d.title for d in world.docs}) == len(world.docs)
    )
    companies = [e.name for e in world.entities if e.kind == "company"]
    stems = collections.Counter(n.split()[0] for n in companies)
    assert sum(stems[n.split()[0]] > 1 for n in companies) / len(companies) > 0.8
    people = [e.name for e in world.entities if e.kind == "person"]
    surnames = collections.Counter(n.split()[1] for n in people)
    assert sum(surnames[n.split()[1]] > 1 for n in people) / len(people) > 0.8


def test_sizes_are_checked():
    with pytest.raises(ValueError, match="unknown entity kind"):
        generate(0, {"planet": 3})
    with pytest.raises(ConfigError, match="corpus.sizes"):
        load_corpus(CorpusSpec(sizes={"planet": 3}), None)


def test_index_is_cached_on_disk_by_corpus_hash(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVHUB_HOME", str(tmp_path))
    docs = generate(5, SMALL).docs
    monkeypatch.setattr(search_index, "_MEMORY", {})  # drop the indexes held in memory
    built = SearchIndex(docs)
    assert not built.loaded_from_cache
    assert built.path == tmp_path / "cache" / "search" / built.key
    assert (built.path / "params.index.json").exists()
    monkeypatch.setattr(search_index, "_MEMORY", {})  # drop the indexes held in memory
    cached = SearchIndex(docs)
    assert cached.loaded_from_cache and cached.key == built.key
    query = docs[40].title
    assert [d.doc_id for d, _ in cached.search(query, 5)] == [
        d.doc_id for d, _ in built.search(query, 5)
    ]
    changed = [*docs[:-1], Doc(docs[-1].doc_id, docs[-1].title, docs[-1].text + " More.")]
    other = SearchIndex(changed)
    assert other.key != built.key and not other.loaded_from_cache
    leftovers = [p.name for p in (tmp_path / "cache" / "search").iterdir()]
    assert sorted(leftovers) == sorted([built.key, other.key])


def test_corrupt_cache_entry_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVHUB_HOME", str(tmp_path))
    docs = generate(6, SMALL).docs
    monkeypatch.setattr(search_index, "_MEMORY", {})  # drop the indexes held in memory
    first = SearchIndex(docs)
    (first.path / "data.csc.index.npy").write_bytes(b"garbage")
    monkeypatch.setattr(search_index, "_MEMORY", {})  # drop the indexes held in memory
    again = SearchIndex(docs)
    assert not again.loaded_from_cache
    assert again.search(docs[0].title, 1)[0][0].doc_id == docs[0].doc_id


def test_an_entity_name_finds_its_document():
    world = generate(0)
    idx = SearchIndex(world.docs)
    sample = world.docs[::23]
    top5 = sum(any(d.doc_id == doc.doc_id for d, _ in idx.search(doc.title, 5)) for doc in sample)
    assert top5 / len(sample) > 0.95
    assert idx.search("the of and", 5) == []


# ------------------------------------------------------------------ user corpora


def _spec(tmp_path, dataset, corpus, **extra):
    return EnvSpec(
        name="search-local",
        family="search",
        entry_point="envhub.envs.search.env:SearchEnv",
        dataset=dataset,
        max_turns=4,
        source=str(tmp_path / "env.yaml"),
        reward={"weights": {"correctness": 1.0}},
        options={"corpus": corpus},
        **extra,
    )


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_local_jsonl_corpus_and_questions(tmp_path):
    _write_jsonl(
        tmp_path / "docs.jsonl",
        [
            {"id": "w1", "title": "Ada Lovelace", "text": "Ada Lovelace wrote the first program."},
            {
                "id": "w2",
                "title": "Charles Babbage",
                "text": "Babbage designed the Analytical Engine.",
            },
        ],
    )
    _write_jsonl(
        tmp_path / "q.jsonl",
        [
            {
                "id": "q1",
                "question": "Who designed the Analytical Engine?",
                "answer": "Charles Babbage",
            }
        ],
    )
    spec = _spec(
        tmp_path,
        {"kind": "jsonl", "path": "q.jsonl", "fields": {"task_id": "id", "prompt": "question"}},
        {"kind": "jsonl", "path": "docs.jsonl"},
        split="train",
    )
    env = SearchEnv(spec, **spec.options)
    env.reset(seed=0)
    result = env.step(
        '<tool_call>{"name": "search", "arguments": {"query": "Analytical Engine"}}</tool_call>'
    )
    assert "w2 | Charles Babbage" in result.messages[0].content
    assert env.step("<answer>charles babbage</answer>").info.components["correctness"] == 1.0
    check_env(env)


@pytest.mark.parametrize("layout", ["hf", "json"])
def test_corpus_from_hotpotqa_contexts(tmp_path, layout):
    paragraphs = [
        ["Velsa", ["Velsa is a town. ", "It lies on the Oltra."]],
        ["Oltra", ["The Oltra is a river in Kesh."]],
    ]
    ctx = (
        paragraphs
        if layout == "json"
        else {"title": [p[0] for p in paragraphs], "sentences": [p[1] for p in paragraphs]}
    )
    _write_jsonl(
        tmp_path / "hotpot.jsonl",
        [
            {
                "id": "h1",
                "question": "In which country is the river through Velsa?",
                "answer": "Kesh",
                "context": ctx,
            }
        ],
    )
    spec = _spec(
        tmp_path,
        {
            "kind": "jsonl",
            "path": "hotpot.jsonl",
            "fields": {"task_id": "id", "prompt": "question"},
        },
        {"kind": "contexts"},
    )
    env = SearchEnv(spec, **spec.options)
    assert [(d.title, d.text) for d in env.index.docs] == [
        ("Oltra", "The Oltra is a river in Kesh."),
        ("Velsa", "Velsa is a town. It lies on the Oltra."),
    ]
    env.reset(seed=0)
    result = env.step(
        '<tool_call>{"name": "open", "arguments": {"doc_id": "wiki-000000"}}</tool_call>'
    )
    assert "river in Kesh" in result.messages[0].content
    check_env(env)


def test_builtin_questions_need_the_synthetic_corpus(tmp_path):
    _write_jsonl(tmp_path / "docs.jsonl", [{"id": "a", "title": "A", "text": "a"}])
    spec = _spec(tmp_path, {"kind": "builtin"}, {"kind": "jsonl", "path": "docs.jsonl"})
    with pytest.raises(ConfigError, match="corpus.kind=synthetic"):
        SearchEnv(spec, **spec.options).tasks()


def test_missing_corpus_columns_and_files_are_named(tmp_path):
    _write_jsonl(tmp_path / "docs.jsonl", [{"id": "a", "body": "x"}])
    with pytest.raises(ConfigError, match="corpus.fields.text"):
        load_corpus(CorpusSpec(kind="jsonl", path="docs.jsonl"), tmp_path)
    assert (
        load_corpus(CorpusSpec(kind="jsonl", path="docs.jsonl", fields={"text": "body"}), tmp_path)[
            0
        ].text
        == "x"
    )
    with pytest.raises(ConfigError, match="does not exist"):
        load_corpus(CorpusSpec(kind="jsonl", path="nope.jsonl"), tmp_path)
    with pytest.raises(ConfigError, match="needs corpus.path"):
        load_corpus(CorpusSpec(kind="hf"), tmp_path)


# ------------------------------------------------------------------ every question


@pytest.mark.slow
def test_scripted_agent_solves_all_generated_questions():
    spec = EnvSpec(
        name="search-all",
        family="search",
        entry_point="envhub.envs.search.env:SearchEnv",
        dataset={"kind": "builtin", "size": 10_000},
        max_turns=12,
        reward={"weights": {"correctness": 1.0}},
    )
    env = SearchEnv(spec)
    total = 0
    for split in ("train", "test"):
        for i, task in enumerate(env.tasks(split)):
            transcript = env.reset(task_id=task.task_id).messages
            agent = ScriptedAgent(task.prompt, env.toolset, structured=i % 2 == 0)
            while True:
                action = agent.act(transcript)
                result = env.step(action)
                transcript += [action, *result.messages]
                if result.done:
                    break
            assert result.info.status is Status.OK
            assert result.info.components["correctness"] == 1.0, task
            total += 1
    assert total > 4000
