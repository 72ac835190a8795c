"""Registration refuses what would fail when used, writes nothing then, and says so in one form;
--force, unregister; registering again; hiding a built-in; entry points found in the YAML's own
folder without PYTHONPATH."""

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
import yaml
from typer.testing import CliRunner

import envhub
from envhub.authoring.register import register_file, unregister
from envhub.authoring.scaffold import init
from envhub.cli import app
from envhub.errors import EnvNotFound, RegistryError
from envhub.registry.catalog import user_registry_dir

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("clean_user_registry")


def _sums(tmp_path, yaml_text, rows=None):
    rows = rows or [{"id": f"s{i}", "q": f"What is {i}+{i}?", "a": str(2 * i)} for i in range(5)]
    (tmp_path / "sums.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    f = tmp_path / "sums.yaml"
    f.write_text(textwrap.dedent(yaml_text))
    return f


ENV_PY = """\
from envhub.core import Episode, TaskEnv
from envhub.types import Message, Task


class Rev(TaskEnv):
    components = frozenset({"correctness"})

    def builtin_tasks(self, split, size, seed):
        words = ["stone", "river", "cloud"]
        return [Task(task_id=f"{split}/{i}", prompt=w, answer=w[::-1]) for i, w in enumerate(words)]

    def score(self, task, response):
        return {"correctness": float(response.content.strip() == task.answer)}, {}

    def reference_action(self, episode: Episode):
        return Message(role="assistant", content=episode.task.answer)
"""


GOOD = """\
    name: tiny-sums
    base: gsm8k
    dataset: {kind: jsonl, path: sums.jsonl, fields: {task_id: id, prompt: q, answer: a}}
    reward: {weights: {correctness: 1.0}}
    options: {answer_format: hash}
"""


def _written():
    d = user_registry_dir()
    return sorted(p.name for p in d.glob("*.yaml")) if d.exists() else []


@pytest.mark.parametrize(
    ("old", "new", "expect"),
    [
        (
            "path: sums.jsonl",
            "path: data/missing.jsonl",
            r"sums\.yaml:3: environment 'tiny-sums', field 'dataset\.path': .*missing\.jsonl "
            r"does not exist.*Fix: correct the path",
        ),
        (
            "{correctness: 1.0}",
            "{corectness: 1.0}",
            r"sums\.yaml:4: .*field 'reward\.weights\.corectness': .*did you mean 'correctness'",
        ),
        (
            "{answer_format: hash}",
            "{answer_fromat: hash}",
            r"sums\.yaml:5: .*field 'options\.answer_fromat': MathEnv takes no option "
            r"'answer_fromat' .*Fix: correct the name \(did you mean 'answer_format'\?\)",
        ),
        (
            "reward:",
            'prompt_template: "Q: {question}"\n    reward:',
            r"field 'prompt_template': names \{question\}, which task 's\d' lacks .*"
            r"Fix: .*dataset\.fields",
        ),
    ],
)
def test_broken_yaml_is_refused_naming_file_field_and_fix(tmp_path, old, new, expect):
    f = _sums(tmp_path, GOOD.replace(old, new))
    before = envhub.catalog().ids()
    with pytest.raises(RegistryError, match=expect) as info:
        envhub.register(f)
    assert str(f) in str(info.value) and "Nothing was registered" in str(info.value)
    assert _written() == []
    envhub.reset_registry()
    assert envhub.catalog().ids() == before


def test_the_good_file_registers(tmp_path):
    [spec] = envhub.register(_sums(tmp_path, GOOD))
    assert spec.id == "tiny-sums-v1" and _written() == ["tiny-sums-v1.yaml"]


def test_wrong_gold_answers_are_refused(tmp_path):
    broken = ENV_PY.replace("response.content.strip() == task.answer", "False")
    (tmp_path / "env.py").write_text(broken)
    f = tmp_path / "rev.yaml"
    f.write_text("name: rev-broken\nentry_point: env.py:Rev\n")
    with pytest.raises(RegistryError, match="gold answers do not score full marks.*correctness"):
        envhub.register(f)
    assert _written() == []


def test_force_replaces_and_unregister_removes(tmp_path):
    f = _sums(tmp_path, GOOD)
    envhub.register(f)
    f.write_text(textwrap.dedent(GOOD).replace("{correctness: 1.0}", "{correctness: 2.0}"))
    with pytest.raises(RegistryError, match="already registered.*--force"):
        envhub.register(f)
    envhub.register(f, force=True)
    assert envhub.spec("tiny-sums").reward.weights["correctness"] == 2.0
    with pytest.raises(RegistryError, match="built-in catalog"):
        unregister("gsm8k")
    assert unregister("tiny-sums-v1") == ["tiny-sums-v1"]
    assert _written() == []
    with pytest.raises(EnvNotFound):
        envhub.spec("tiny-sums")


def test_force_does_not_replace_the_builtin_catalog(tmp_path):
    f = tmp_path / "clash.yaml"
    f.write_text("name: gsm8k\nentry_point: dummy_envs:EchoEnv\n")
    with pytest.raises(RegistryError, match="already in the catalog"):
        envhub.register(f, force=True)


@pytest.mark.parametrize(
    ("layout", "entry_point"),
    [("package", "revpkg_a1.env:Rev"), ("file", "code/rev_env.py:Rev"), ("module", "rev_b2:Rev")],
)
def test_entry_point_beside_the_yaml_needs_no_pythonpath(tmp_path, layout, entry_point):
    home = tmp_path / "proj"
    target = {
        "package": home / "revpkg_a1" / "env.py",
        "file": home / "code" / "rev_env.py",
        "module": home / "rev_b2.py",
    }[layout]
    target.parent.mkdir(parents=True)
    target.write_text(ENV_PY)
    if layout == "package":
        (target.parent / "__init__.py").write_text("")
    name = f"rev-{layout}"
    (home / "rev.yaml").write_text(f"name: {name}\nentry_point: {entry_point}\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(envhub.__file__))}
    script = (
        "import envhub, sys; envhub.register(sys.argv[1]);"
        f"e = envhub.make({name!r}); e.reset(seed=0);"
        "print(e.step(e.reference_action(e._episode)).reward)"
    )
    run = subprocess.run(
        [sys.executable, "-c", script, str(home / "rev.yaml")],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "1.0"
    use = f"import envhub; e = envhub.make({name!r}); print(len(e.tasks()))"
    again = subprocess.run(
        [sys.executable, "-c", use], cwd=tmp_path, env=env, capture_output=True, text=True
    )  # registered in one folder, used from another
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "3"


def test_unimportable_entry_point_says_what_was_tried(tmp_path):
    f = tmp_path / "ghost.yaml"
    f.write_text("name: ghost\nentry_point: ghostpkg.env:Env\n")
    with pytest.raises(RegistryError) as info:
        envhub.register(f)
    msg = str(info.value)
    assert "field 'entry_point'" in msg and "tried: installed module 'ghostpkg.env'" in msg
    assert f"YAML's folder {tmp_path}: not there" in msg and "pip install" in msg
    f.write_text("name: ghost\nentry_point: lib/ghost.py:Env\n")
    with pytest.raises(RegistryError, match=r"file .*lib/ghost\.py: does not exist"):
        envhub.register(f)


def test_same_module_name_in_two_folders_points_to_the_file_form(tmp_path):
    for folder, cls in (("a", "Rev"), ("b", "Other")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "samemod_c3.py").write_text(
            ENV_PY.replace("class Rev", f"class {cls}")
        )
        (tmp_path / folder / "e.yaml").write_text(
            f"name: same-{folder}\nentry_point: samemod_c3:{cls}\n"
        )
    envhub.register(tmp_path / "a" / "e.yaml")
    with pytest.raises(RegistryError, match=r"a/samemod_c3\.py\) has no 'Other'.*file form"):
        envhub.register(tmp_path / "b" / "e.yaml")


# ---------------------------------------------------------------- registering again (21.6)

ECHO = "name: echoes\nentry_point: dummy_envs:EchoEnv\nreward: {weights: {correctness: 1.0}}\n"


def _kept(env_id):
    return yaml.safe_load((user_registry_dir() / f"{env_id}.yaml").read_text())


def test_register_after_init_is_nothing_to_do_and_exits_0(tmp_path):
    folder = init("wordecho", parent=tmp_path)  # registers by link
    before = _kept("wordecho-v1")
    res = runner.invoke(app, ["register", str(folder / "wordecho.yaml")])
    assert res.exit_code == 0, res.output
    assert res.stdout == "wordecho-v1: already registered from this file; nothing to do\n"
    assert (
        _kept("wordecho-v1")
        == before
        == {
            "link": str(folder / "wordecho.yaml"),
            "id": "wordecho-v1",
        }
    )


def test_a_copy_registered_again_unchanged_is_nothing_to_do(tmp_path):
    f = tmp_path / "echoes.yaml"
    f.write_text(ECHO)
    [first] = register_file(f)
    [again] = register_file(f)
    assert (first.outcome, again.outcome) == ("registered", "unchanged")
    assert not first.link and not again.link


def test_force_keeps_a_link_a_link_so_later_edits_still_count(tmp_path):
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(ECHO)
    new.write_text(ECHO)  # the user moved the file
    envhub.register(old, link=True)
    with pytest.raises(RegistryError, match=r"already registered by link to .*old\.yaml"):
        envhub.register(new)
    with pytest.raises(RegistryError, match=r"already registered by link to .*old\.yaml"):
        envhub.register(old, link=False)  # a copy would be a change too: asks for --force
    res = runner.invoke(app, ["register", "--force", str(new)])
    assert res.exit_code == 0, res.output
    assert "by link; replaced your earlier registration" in res.stdout
    assert _kept("echoes-v1") == {"link": str(new), "id": "echoes-v1"}
    new.write_text(ECHO.replace("correctness: 1.0", "correctness: 3.0"))  # no registering
    assert envhub.spec("echoes").reward.weights == {"correctness": 3.0}
    again = runner.invoke(app, ["register", "--force", str(new)])
    assert again.stdout == "echoes-v1: already registered from this file; nothing to do\n"


def test_force_with_copy_turns_a_link_into_a_copy_on_purpose(tmp_path):
    f = tmp_path / "echoes.yaml"
    f.write_text(ECHO)
    envhub.register(f, link=True)
    res = runner.invoke(app, ["register", "--force", "--copy", str(f)])
    assert res.exit_code == 0, res.output
    assert "as a copy; replaced your earlier registration" in res.stdout
    assert _kept("echoes-v1")["entry_point"] == "dummy_envs:EchoEnv"
    f.write_text(ECHO.replace("correctness: 1.0", "correctness: 3.0"))
    assert envhub.spec("echoes").reward.weights == {"correctness": 1.0}  # a copy: frozen


# ---------------------------------------------------------------- one form for every error (21.7)

FORM = re.compile(
    r"^(?P<file>/\S+\.yaml)(:\d+)?: (environment '[^']+'(, field '[^']+')?: )?"
    r"(?s:.+)\. Fix: (?s:.+)\. Nothing was registered\.$"
)
BROKEN = {
    "syntax": "name: x\nentry_point: [unclosed\n",
    "not a mapping": "- just\n- a list\n",
    "entries not a list": "environments: {name: x}\n",
    "entry not a mapping": "environments:\n  - plain text\n",
    "schema": "name: x\nentry_point: dummy_envs:EchoEnv\nmax_turns: many\n",
    "unknown key": "name: x\nentry_point: dummy_envs:EchoEnv\nprompt_templte: '{prompt}'\n",
    "no entry point": "name: x\n",
    "missing base": "name: x\nbase: no-such-env\n",
    "base cycle": "environments:\n  - {name: x, base: y}\n  - {name: y, base: x}\n",
    "entry point": "name: x\nentry_point: nowhere.module:Env\n",
    "unknown option": "name: x\nentry_point: dummy_envs:EchoEnv\noptions: {colour: red}\n",
    "unknown weight": "name: x\nentry_point: dummy_envs:EchoEnv\nreward: {weights: {corect: 1}}\n",
    "nan weight": "name: x\nentry_point: dummy_envs:EchoEnv\nreward: {weights: {format: .nan}}\n",
    "built-in": "name: gsm8k\nentry_point: dummy_envs:EchoEnv\n",
    "hides a built-in": "name: gsm8k\nversion: 7\nentry_point: dummy_envs:EchoEnv\n",
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_every_registration_error_has_the_one_form(tmp_path, case):
    f = tmp_path / "broken.yaml"
    f.write_text(BROKEN[case])
    with pytest.raises(RegistryError) as info:
        envhub.register(f)
    match = FORM.match(str(info.value))
    assert match, str(info.value)
    assert match["file"] == str(f)
    assert _written() == []


def test_the_form_of_a_clash_names_line_and_field(tmp_path):
    f = tmp_path / "echoes.yaml"
    f.write_text(ECHO)
    envhub.register(f)
    f.write_text("# moved down\n" + ECHO.replace("1.0", "2.0"))
    with pytest.raises(RegistryError) as info:
        envhub.register(f)
    assert str(info.value).startswith(
        f"{f}:2: environment 'echoes', field 'name': echoes-v1 is already registered as a copy"
    )
    assert "Fix: pass --force to replace it" in str(info.value)


# ---------------------------------------------------------------- hiding a built-in (22.6)


def test_a_higher_version_of_a_builtin_needs_force_and_is_marked(tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text("name: gsm8k\nversion: 2\nentry_point: dummy_envs:EchoEnv\n")
    with pytest.raises(RegistryError) as info:
        envhub.register(f)
    msg = str(info.value)
    assert f"{f}:2: environment 'gsm8k', field 'version': gsm8k-v2 would replace the " in msg
    assert "built-in gsm8k-v1 as what make('gsm8k')" in msg and "--force" in msg
    assert _written() == [] and envhub.spec("gsm8k").id == "gsm8k-v1"

    res = runner.invoke(app, ["register", "--force", str(f)])
    assert res.exit_code == 0, res.output
    assert "warning: gsm8k-v2 overrides the built-in gsm8k-v1" in res.stderr
    assert envhub.spec("gsm8k").entry_point == "dummy_envs:EchoEnv"
    assert envhub.spec("gsm8k-v1").family == "math"  # the built-in stays reachable
    lines = {ln.split()[0]: ln for ln in runner.invoke(app, ["list"]).stdout.splitlines()}
    assert "[overrides built-in gsm8k-v1]" in lines["gsm8k"]
    assert "overrides" not in lines["math"]


def test_the_python_api_logs_the_override(tmp_path, caplog):
    f = tmp_path / "mine.yaml"
    f.write_text("name: gsm8k\nversion: 2\nentry_point: dummy_envs:EchoEnv\n")
    with caplog.at_level("WARNING", logger="envhub"):
        envhub.register(f, force=True)
    assert "gsm8k-v2 overrides the built-in gsm8k-v1" in caplog.text
