"""SFT data: assistant-only masks under each chat template in use, the sources, the mix."""

import json

import pytest

from envhub.trainer.episodes.sft_data import (
    Conversation,
    SFTDataError,
    SFTMix,
    SFTSource,
    Tokenized,
    episode_conversations,
    has_generation_tags,
    load_source,
    message_conversations,
    tokenize_chat,
    tool_calls_as_text,
    weighted_order,
)

# ChatML with {% generation %} tags: transformers' own assistant mask applies to it
GENERATION_CHATML = (
    "{% for message in messages %}"
    "{% if message['role'] == 'assistant' %}"
    "{{ '<|im_start|>assistant\\n' }}{% generation %}{{ message['content'] + '<|im_end|>' }}"
    "{% endgeneration %}{{ '\\n' }}"
    "{% else %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>\\n' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

CALL = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": {"a": 1}}}
MULTI_TURN = [
    {"role": "system", "content": "Use tools."},
    {"role": "user", "content": "What is 1 + 2?"},
    {"role": "assistant", "content": "Let me add.", "tool_calls": [CALL]},
    {"role": "tool", "content": "3", "tool_call_id": "c1", "name": "add"},
    {"role": "assistant", "content": "<answer>3</answer>"},
    {"role": "user", "content": "And 2 + 2?"},
    {"role": "assistant", "content": "<answer>4</answer>"},
]


# SmolLM2-135M-Instruct's own template (its tokenizer_config.json): a default system prompt
# when the conversation has none; the tiny model shares SmolLM2's vocabulary
SMOLLM2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}"
)


@pytest.fixture(scope="module")
def tokenizers(tiny_path):
    """Each template in use: the tiny model's (plain ChatML), SmolLM2's (a default system
    prompt), and ChatML with generation tags."""
    from transformers import AutoTokenizer

    out = {}
    for name, template in (
        ("tiny", None),
        ("smollm2", SMOLLM2_TEMPLATE),
        ("generation-tags", GENERATION_CHATML),
    ):
        tok = AutoTokenizer.from_pretrained(tiny_path)
        if template is not None:
            tok.chat_template = template
        out[name] = tok
    return out


def _trained_text(tok, t: Tokenized) -> list[str]:
    """The decoded runs of masked tokens."""
    runs, cur = [], []
    for i, m in zip(t.ids, t.mask, strict=True):
        if m:
            cur.append(i)
        elif cur:
            runs.append(tok.decode(cur))
            cur = []
    if cur:
        runs.append(tok.decode(cur))
    return runs


def _expected_turns(eos: str) -> list[str]:
    call = '<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>'
    return [f"Let me add.\n{call}{eos}", f"<answer>3</answer>{eos}", f"<answer>4</answer>{eos}"]


@pytest.mark.parametrize("system", [True, False], ids=["with-system", "no-system"])
@pytest.mark.parametrize("name", ["tiny", "smollm2", "generation-tags"])
def test_assistant_tokens_alone_carry_loss_multi_turn_with_tool_calls(tokenizers, name, system):
    tok = tokenizers[name]
    messages = MULTI_TURN if system else MULTI_TURN[1:]
    t = tokenize_chat(tok, Conversation("x", messages))
    assert _trained_text(tok, t) == _expected_turns(tok.eos_token)
    # the ids are the whole rendering's own tokenization
    full = tok.apply_chat_template(
        [tool_calls_as_text(m) for m in messages], tokenize=False, add_generation_prompt=False
    )
    assert tok.decode(t.ids) == full
    if name == "smollm2" and not system:
        assert "named SmolLM" in full  # the template's default system prompt, not trained on


def test_the_prefix_fallback_agrees_with_transformers_own_mask(tokenizers):
    tok = tokenizers["generation-tags"]
    assert has_generation_tags(tok) and not has_generation_tags(tokenizers["tiny"])
    native = tokenize_chat(tok, Conversation("x", MULTI_TURN), native=True)
    fallback = tokenize_chat(tok, Conversation("x", MULTI_TURN), native=False)
    assert native.ids == fallback.ids
    assert native.mask == fallback.mask


def test_bad_conversations_and_templates_are_refused(tokenizers):
    tok = tokenizers["tiny"]
    with pytest.raises(SFTDataError, match="no assistant turn"):
        tokenize_chat(tok, Conversation("x", MULTI_TURN[:2]))
    with pytest.raises(SFTDataError, match="generation"):
        tokenize_chat(tok, Conversation("x", MULTI_TURN), native=True)
    from transformers import AutoTokenizer

    odd = AutoTokenizer.from_pretrained(tok.name_or_path)
    # a template that writes how many messages follow into the first turn: no prefix holds
    odd.chat_template = (
        "{{ messages|length }}{% for m in messages %}{{ m['role'] + ':' + m['content'] + "
        "'<|im_end|>' }}{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}"
    )
    with pytest.raises(SFTDataError, match="earlier turns"):
        tokenize_chat(odd, Conversation("x", MULTI_TURN[1:3]))


def test_structured_tool_calls_become_the_text_the_parser_reads():
    from envhub.tools import ToolSet
    from envhub.types import Message

    m = tool_calls_as_text(MULTI_TURN[2])
    assert ToolSet.has_calls(Message(role="assistant", content=m["content"]))
    assert m["content"].endswith('<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>')
    assert "tool_calls" not in m
    assert tool_calls_as_text(MULTI_TURN[3]) == MULTI_TURN[3]


def test_source_config_errors_name_the_missing_key():
    with pytest.raises(ValueError, match="needs 'env'"):
        SFTSource(kind="reference")
    with pytest.raises(ValueError, match="needs 'path'"):
        SFTSource(kind="episodes")
    with pytest.raises(ValueError, match="'path' or 'dataset'"):
        SFTSource(kind="messages")


def test_reference_source_plays_the_env_gold_in_its_answer_format():
    convs, counts = load_source(SFTSource(kind="reference", env="rg-chain_sum", limit=3))
    assert len(convs) == 3 and counts["skipped"] == 0
    last = convs[0].messages[-1]
    assert last["role"] == "assistant" and last["content"].startswith("<answer>")
    assert [m["role"] for m in convs[0].messages[:2]] == ["system", "user"]


def test_reference_source_of_a_multi_turn_tool_env_replays_as_text_to_full_marks():
    """search's reference is several tool calls then an answer; the text the model is
    trained to write (calls as <tool_call> blocks) earns full marks from the env itself."""
    import envhub

    (conv,), _ = load_source(SFTSource(kind="reference", env="search", limit=1))
    turns = [m for m in conv.messages if m["role"] == "assistant"]
    assert len(turns) > 2 and turns[0].get("tool_calls") and conv.tools
    env = envhub.make("search")
    try:
        env.reset(task_id=conv.task_id)
        for m in turns:
            result = env.step(tool_calls_as_text(m)["content"])
        assert result.terminated and result.info.components[env.primary_component] == 1.0
    finally:
        env.close()


def _eval_rows(tmp_path):
    rows = [
        {"env": "e", "task_id": "1", "model": "m", "reward": 1.0, "status": "ok", "passed": True,
         "messages": [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"}]},
        {"env": "e", "task_id": "2", "model": "m", "reward": 0.0, "status": "ok", "passed": False,
         "messages": [{"role": "user", "content": "q2"}, {"role": "assistant", "content": "a2"}]},
        {"env": "e", "task_id": "3", "model": "m", "reward": 1.0, "status": "infra_error",
         "messages": [{"role": "user", "content": "q3"}, {"role": "assistant", "content": "a3"}]},
    ]  # fmt: skip
    path = tmp_path / "run" / "e" / "episodes.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path / "run"


def test_recorded_episodes_are_filtered_by_reward_and_status(tmp_path):
    run = _eval_rows(tmp_path)
    kept = episode_conversations(SFTSource(kind="episodes", path=str(run), min_reward=1.0))
    assert [c.task_id for c in kept] == ["1"]
    ok = episode_conversations(SFTSource(kind="episodes", path=str(run)))
    assert [c.task_id for c in ok] == ["1", "2"]
    with pytest.raises(SFTDataError, match="passes the filters"):
        episode_conversations(SFTSource(kind="episodes", path=str(run), env="other"))


def test_rollout_log_lines_train_on_their_assistant_segments(tmp_path, tokenizers):
    import gzip

    row = {"env": "e", "prompt": "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n",
           "messages": [{"role": "assistant", "content": "a<|im_end|>"}], "reward": 1.0,
           "status": "ok", "response_tokens": 2}  # fmt: skip
    path = tmp_path / "step_00001.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write(json.dumps(row) + "\n")
    (conv,) = episode_conversations(SFTSource(kind="episodes", path=str(path)))
    tok = tokenizers["tiny"]
    t = tokenize_chat(tok, conv)
    assert _trained_text(tok, t) == ["a<|im_end|>"]


def test_messages_from_jsonl_and_from_a_dataset_folder(tmp_path):
    rows = [{"conv": MULTI_TURN[1:3]}, {"conv": MULTI_TURN[5:7]}]
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = message_conversations(SFTSource(kind="messages", path=str(path), field="conv"))
    assert len(got) == 2
    with pytest.raises(SFTDataError, match="list of messages"):
        message_conversations(SFTSource(kind="messages", path=str(path)))
    pytest.importorskip("datasets")
    folder = tmp_path / "ds"  # a folder of data files, as load_dataset reads it
    folder.mkdir()
    (folder / "train.jsonl").write_text(json.dumps({"messages": MULTI_TURN[5:7]}) + "\n")
    got = message_conversations(SFTSource(kind="messages", path=str(folder)))
    assert got[0].messages[-1]["content"] == "<answer>4</answer>"


def test_mix_draws_by_weight_and_is_deterministic_per_step():
    order = weighted_order([3, 1], 8)
    assert order.count(0) == 6 and order.count(1) == 2
    assert sorted(weighted_order([1, 1, 1], 3)) == [0, 1, 2]
    data = {
        "a": [Tokenized([i, i], [0, 1], "a") for i in range(5)],
        "b": [Tokenized([100 + i, i], [0, 1], "b") for i in range(3)],
    }
    mix = SFTMix(data, {"a": 3.0, "b": 1.0}, seed=0)
    step3 = mix.batch(3, 4)
    assert sorted(t.source for t in step3) == ["a", "a", "a", "b"]
    assert [t.ids for t in SFTMix(data, {"a": 3.0, "b": 1.0}, seed=0).batch(3, 4)] == [
        t.ids for t in step3
    ]
    # every example of a source is seen once per epoch of it
    seen = [t.ids[0] for s in range(1, 7) for t in mix.batch(s, 2) if t.source == "b"]
    assert sorted(seen) == [100, 101, 102]


@pytest.mark.slow  # about 1 minute on this 2-core machine: every entry made and played
def test_reference_solutions_score_full_marks_on_every_catalog_entry_that_has_them():
    """Every offline catalog entry with a reference action gives conversations whose final
    turn the environment scored 1 with status ok (load_source skips any other: none may be).
    A reasoning-gym entry makes 4 tasks a split, not its 200: the first 2 are the same tasks,
    and the slowest generators took 30 s each to make 200."""
    import envhub

    catalog = envhub.catalog()
    with_reference, failures = [], []
    for env_id in catalog.ids():
        spec = catalog.spec(env_id)
        if "needs-data" in spec.tags:
            continue
        small = {}
        if "reasoning-gym" in spec.tags:  # (an override replaces the whole dataset section)
            small = {"dataset": {**spec.dataset.model_dump(exclude_none=True), "size": 4}}
        try:
            convs, counts = load_source(
                SFTSource(kind="reference", env=env_id, limit=2, overrides=small)
            )
        except SFTDataError as e:
            if "reference_action() returned" in str(e):
                continue  # no reference solution: nothing to render
            failures.append(f"{env_id}: {e}")
            continue
        with_reference.append(env_id)
        if counts["skipped"]:
            failures.append(f"{env_id}: {counts['skipped']:.0f} reference episode(s) failed")
    assert not failures
    assert len(with_reference) > 20
