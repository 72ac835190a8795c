"""The catalog: registration from YAML, composition, versioned names, and bad YAML."""

import json
import textwrap

import pytest

import envhub
from envhub.errors import EnvNotFound, RegistryError
from envhub.registry.catalog import user_registry_dir

pytestmark = pytest.mark.usefixtures("clean_user_registry")


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_versioned_names_and_suggestions():
    assert envhub.spec("gsm8k").id == envhub.spec("gsm8k-v1").id == "gsm8k-v1"
    with pytest.raises(EnvNotFound, match="Did you mean 'gsm8k'"):
        envhub.spec("gsm8")
    with pytest.raises(EnvNotFound):
        envhub.spec("gsm8k-v9")


def test_register_entry_point_env(tmp_path):
    f = _write(
        tmp_path,
        "mine.yaml",
        """
        name: my-echo
        version: 2
        family: test
        entry_point: dummy_envs:EchoEnv
        reward: {weights: {correctness: 2.0}}
        tags: [mine]
    """,
    )
    [spec] = envhub.register(f)
    assert spec.id == "my-echo-v2"
    assert "my-echo-v2" in envhub.catalog().ids()
    with envhub.make("my-echo") as env:
        assert env.verify("train/0", "alpha").reward == 2.0


def test_register_composition_of_existing_parts(tmp_path):
    data = tmp_path / "sums.jsonl"
    data.write_text(
        "\n".join(
            json.dumps({"id": f"s{i}", "q": f"What is {i}+{i}?", "a": str(2 * i)}) for i in range(5)
        )
    )
    f = _write(
        tmp_path,
        "sums.yaml",
        """
        name: tiny-sums
        base: gsm8k
        dataset: {kind: jsonl, path: sums.jsonl, fields: {task_id: id, prompt: q, answer: a}}
        prompt_template: "Add: {prompt}"
        reward: {weights: {format: 0.5}}
    """,
    )
    envhub.register(f)
    spec = envhub.spec("tiny-sums")
    assert spec.entry_point == "envhub.envs.math.env:MathEnv" and spec.family == "math"
    assert spec.reward.weights == {"correctness": 1.0, "format": 0.5}
    with envhub.make("tiny-sums") as env:
        first = env.reset(task_id="s3")
        assert first.messages[-1].content == "Add: What is 3+3?"
        assert env.step("#### 6").reward == 1.5


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("name: broken\nentry_point: [unclosed\n", r"broken\.yaml:\d+: not valid YAML"),
        (
            "name: bad-turns\nentry_point: dummy_envs:EchoEnv\nmax_turns: many\n",
            r"bad\.yaml:3: environment 'bad-turns', field 'max_turns': .*integer",
        ),
        (
            "name: typo\nentry_point: dummy_envs:EchoEnv\nrewards: {weights: {}}\n",
            r"typo\.yaml:3: environment 'typo', field 'rewards': no such field \(the fields here: "
            r".*\)\. Fix: rename it \(did you mean 'reward'\?\) or remove it",
        ),
        (
            "name: typo\nentry_point: dummy_envs:EchoEnv\nmax_turn: 3\n",
            r"typo\.yaml:3: .*field 'max_turn': no such field.* \(did you mean 'max_turns'\?\)",
        ),
        (
            "name: typo\nentry_point: dummy_envs:EchoEnv\nreward:\n  wieghts: {format: 1}\n",
            r"typo\.yaml:4: .*field 'reward\.wieghts': no such field \(the fields here: judges, "
            r"length_limit, weights\)\. Fix: rename it \(did you mean 'weights'\?\)",
        ),
        ("name: orphan\nbase: no-such-env\n", r"field 'base': no environment named 'no-such-env'"),
        ("name: ghost\nentry_point: nowhere.module:Env\n", r"cannot import 'nowhere.module'"),
        ("name: Bad Name\nentry_point: dummy_envs:EchoEnv\n", r"field 'name'"),
    ],
)
def test_bad_yaml_names_file_line_field_and_changes_nothing(tmp_path, text, expect):
    fname = {"broken": "broken.yaml", "bad-turns": "bad.yaml", "typo": "typo.yaml"}
    key = text.split("\n")[0].split(": ")[1]
    f = tmp_path / fname.get(key, "other.yaml")
    f.write_text(text)
    before = envhub.catalog().ids()
    with pytest.raises(Exception, match=expect) as info:
        envhub.register(f)
    assert isinstance(info.value, envhub.EnvhubError)
    assert str(f) in str(info.value) or "nowhere" in str(info.value)
    envhub.reset_registry()
    assert envhub.catalog().ids() == before
    assert not list(user_registry_dir().glob("*.yaml")) if user_registry_dir().exists() else True


def test_name_clash_is_refused(tmp_path):
    f = _write(tmp_path, "clash.yaml", "name: gsm8k\nentry_point: dummy_envs:EchoEnv\n")
    with pytest.raises(RegistryError, match="already in the catalog"):
        envhub.register(f)


def test_overrides_and_unknown_runner(dummy_registry):
    env = envhub.make("echo", max_turns=3, split="test")
    assert env.spec.max_turns == 3 and env.reset(seed=0).info.task_id.startswith("test/")
    with pytest.raises(envhub.EnvhubError, match="runner"):
        envhub.make("echo", runner="carrier-pigeon")
