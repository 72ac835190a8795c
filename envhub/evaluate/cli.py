"""``envhub eval``: the command. The lead wires it with ``app.command("eval")(eval_command)``.

Three modes:

* evaluate: ``envhub eval --model M --env gsm8k [--env humaneval] [--base-url URL] --out DIR``
* resume: ``envhub eval --resume DIR`` runs only the episodes DIR lacks (its settings are
  reused; give ``--api-key``/``--concurrency`` again as needed);
* rescore: ``envhub eval --rescore DIR [--out DIR2]`` re-verifies DIR's episodes with the
  current verifiers (written to ``DIR/rescored`` by default).
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from ..errors import EnvhubError
from ..types import Status
from .store import EvalConfig, RunStore

_IDENTITY = (
    "model",
    "base_url",
    "envs",
    "split",
    "limit",
    "n",
    "temperature",
    "max_tokens",
    "agent",
)
"""Settings that define which episodes a run holds: --resume refuses to change them."""


def register(app: typer.Typer) -> None:
    """Add ``envhub eval`` (entry point ``envhub.cli: eval``); its heavy imports stay lazy."""
    app.command("eval")(eval_command)


def _fail(message: str, code: int = 1) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def env_factory(config: EvalConfig) -> Any:
    """``name -> Env`` for the config's runner (``envhub.make``; the URL of a server)."""
    from ..registry.make import make

    if config.env_url:  # a running server keeps its own settings; tasks(split) still works
        return lambda name: make(name, runner="http", url=config.env_url)
    overrides = {"split": config.split} if config.split else {}
    return lambda name: make(name, runner=config.runner, **overrides)


def _server_env_name(url: str) -> str:
    import httpx

    try:
        return str(httpx.get(url.rstrip("/") + "/info", timeout=10).json()["name"])
    except (httpx.HTTPError, KeyError, ValueError) as e:
        _fail(f"cannot read the environment name from {url}/info ({e}); pass --env NAME")


def build_model(config: EvalConfig, api_key: str | None, engine: str) -> Any:
    """The model backend: an endpoint when ``base_url`` is set, else a local model."""
    from .backends import OpenAIEndpoint

    if config.base_url:
        return OpenAIEndpoint(
            config.base_url, config.model, api_key=api_key, concurrency=config.concurrency
        )
    if not config.model:
        _fail("give --model PATH_OR_NAME (a local model) or --base-url URL (an endpoint)", 2)
    from .local import load_local_model

    return load_local_model(config.model, max_batch=min(config.concurrency, 64), engine=engine)


def _resolve_config(given: dict[str, Any], resume: Path | None) -> EvalConfig:
    """The run's config: the options given, or those of the run being resumed."""
    if resume is None:
        if given.get("temperature") is None:  # pass@k wants diversity, pass@1 determinism
            given["temperature"] = 0.0 if (given.get("n") or 1) == 1 else 1.0
        return EvalConfig(**{k: v for k, v in given.items() if v is not None})
    stored = RunStore(resume).read_config()
    clash = [
        k for k in _IDENTITY if given.get(k) not in (None, []) and given[k] != getattr(stored, k)
    ]
    if clash:
        _fail(
            f"--resume {resume}: {', '.join(clash)} differ from the recorded run; resume with "
            f"the same settings or start a new run with --out"
        )
    changes = {k: v for k, v in given.items() if k not in _IDENTITY and v is not None}
    return stored.model_copy(update=changes)


# The options of `envhub eval`, one alias each, so that the command reads as a list of names.
_Model = Annotated[
    str | None,
    typer.Option(help="Local HF directory, 'smollm2'/'tiny', or the endpoint's model name."),
]
_Envs = Annotated[
    list[str] | None, typer.Option("--env", "-e", help="Environment to evaluate (repeat).")
]
_BaseUrl = Annotated[
    str | None, typer.Option(help="OpenAI-compatible endpoint, e.g. http://host:8000/v1.")
]
_ApiKey = Annotated[
    str | None,
    typer.Option(
        envvar=["ENVHUB_API_KEY", "OPENAI_API_KEY"],
        show_default=False,
        help="Endpoint API key (default: $ENVHUB_API_KEY or $OPENAI_API_KEY).",
    ),
]
_Split = Annotated[str | None, typer.Option(help="Split (default: each env's).")]
_Limit = Annotated[int | None, typer.Option(min=1, help="First N tasks per env.")]
_N = Annotated[int | None, typer.Option("-n", min=1, help="Samples per task (k).")]
_Temperature = Annotated[float | None, typer.Option(min=0.0, help="Default 0 for -n 1, else 1.0.")]
_MaxTokens = Annotated[int | None, typer.Option(min=1, help="Tokens per turn (default 512).")]
_Concurrency = Annotated[
    int | None, typer.Option(min=1, help="Episodes in flight per env (default 32).")
]
_Runner = Annotated[
    str | None, typer.Option(help="Environment runner: local, http or docker (default local).")
]
_EnvUrl = Annotated[
    str | None, typer.Option(help="URL of a running `envhub serve` (replaces --runner).")
]
_Seed = Annotated[int | None, typer.Option(help="Base of the episode seeds (default 0).")]
_PassThreshold = Annotated[
    float | None,
    typer.Option(help="Reward that counts as passed when the env has no primary component."),
]
_Engine = Annotated[
    str,
    typer.Option(
        help="Local model engine: auto (vLLM if installed and it runs the model, "
        "else transformers), vllm, transformers."
    ),
]
_Out = Annotated[Path | None, typer.Option(help="Run directory (default runs/eval-TIME).")]
_Resume = Annotated[
    Path | None, typer.Option(help="Continue the run in DIR, skipping finished episodes.")
]
_Rescore = Annotated[
    Path | None,
    typer.Option(help="Re-verify DIR's episodes; no generation (--runner/--env-url apply)."),
]
_Progress = Annotated[
    bool, typer.Option(help="Progress bars (--no-progress: none, the model loader's too).")
]
_AsJson = Annotated[bool, typer.Option("--json", help="Print summary.json, not a table.")]
_Compare = Annotated[
    list[Path] | None,
    typer.Option(
        help="A finished run to compare (repeat): one table of pass@1 per environment and run, "
        "on the tasks all of them played; nothing is evaluated. An eval run's folder, a training "
        "run's validation round (DIR/validation/step_NNNNN), or a training run (its last round)."
    ),
]
_Agent = Annotated[
    str | None,
    typer.Option(
        help="An agent program run once per episode, the model behind envhub's gateway "
        "(split as a shell would: --agent 'python my_agent.py')."
    ),
]
_AgentCallable = Annotated[
    str | None, typer.Option(help="An async agent function 'module:function' (fn(client, task)).")
]
_AgentTimeout = Annotated[float | None, typer.Option(min=0.001, help="Seconds per agent run.")]
_AgentCalls = Annotated[int | None, typer.Option(min=1, help="Model calls per agent episode.")]
_AgentTokens = Annotated[
    int | None, typer.Option(min=1, help="Sampled tokens per agent episode, all calls together.")
]


def eval_command(
    model: _Model = None,
    env: _Envs = None,
    base_url: _BaseUrl = None,
    api_key: _ApiKey = None,
    split: _Split = None,
    limit: _Limit = None,
    n: _N = None,
    temperature: _Temperature = None,
    max_tokens: _MaxTokens = None,
    concurrency: _Concurrency = None,
    runner: _Runner = None,
    env_url: _EnvUrl = None,
    seed: _Seed = None,
    pass_threshold: _PassThreshold = None,
    engine: _Engine = "auto",
    out: _Out = None,
    resume: _Resume = None,
    rescore: _Rescore = None,
    progress: _Progress = True,
    as_json: _AsJson = False,
    agent: _Agent = None,
    agent_callable: _AgentCallable = None,
    agent_timeout: _AgentTimeout = None,
    agent_max_calls: _AgentCalls = None,
    agent_max_tokens: _AgentTokens = None,
    compare: _Compare = None,
) -> None:
    """Evaluate a model or an endpoint on environments: rewards, pass@k, statuses, tokens.

    With ``--agent CMD`` (or ``--agent-callable``) an agent program plays each episode and
    the model answers it through envhub's recording gateway (traces in ``OUT/traces``).
    """
    if compare:
        return _compare(compare, as_json)
    if rescore is not None:
        if resume is not None or model or base_url or env:
            _fail("--rescore re-verifies recorded outputs: give it alone (and --out)", 2)
        return _rescore(rescore, out, concurrency or 8, as_json, runner, env_url)
    given = dict(
        model=model,
        base_url=base_url,
        envs=list(env or []),
        split=split,
        limit=limit,
        n=n,
        temperature=temperature,
        max_tokens=max_tokens,
        concurrency=concurrency,
        runner=runner,
        env_url=env_url,
        seed=seed,
        pass_threshold=pass_threshold,
        agent=_agent_config(
            agent, agent_callable, agent_timeout, agent_max_calls, agent_max_tokens, concurrency
        ),
    )
    config = _pinned(_with_envs(_resolve_config(given, resume)), resume)
    _evaluate(config, _open_store(resume, out), api_key, engine, progress, as_json)


def _agent_config(
    command: str | None,
    fn: str | None,
    timeout_s: float | None,
    max_calls: int | None,
    max_tokens: int | None,
    concurrency: int | None,
) -> Any:
    """The ``agent`` of the run from the ``--agent*`` options, or None without an agent."""
    rest = (timeout_s, max_calls, max_tokens)
    if command is None and fn is None:
        if any(v is not None for v in rest):
            _fail("--agent-timeout/--agent-max-calls/--agent-max-tokens need --agent CMD", 2)
        return None
    from pydantic import ValidationError

    from ..gateway.config import AgentConfig

    given = dict(
        command=command,
        callable=fn,
        timeout_s=timeout_s,
        max_calls=max_calls,
        max_tokens=max_tokens,
        concurrency=concurrency,
    )
    try:
        return AgentConfig(**{k: v for k, v in given.items() if v is not None})
    except ValidationError as e:
        _fail(f"--agent: {e.errors()[0]['msg']}", 2)


def _with_envs(config: EvalConfig) -> EvalConfig:
    """Check the run's environments (asking a server for its name when none was given)."""
    if config.env_url and not config.envs:
        config.envs = [_server_env_name(config.env_url)]
    if not config.envs:
        _fail("give at least one --env NAME (see `envhub list`)", 2)
    if config.env_url and len(config.envs) > 1:
        _fail("--env-url serves one environment; give one --env, or use --runner http", 2)
    return config


def _pinned(config: EvalConfig, resume: Path | None) -> EvalConfig:
    """Pin the run's environments (name, version, digest); a resumed run refuses a change."""
    if config.env_url:  # the server's environment is the server's: nothing here to pin
        return config
    from ..registry.catalog import spec
    from ..registry.pins import mismatches, pin

    now = [pin(spec(name)) for name in config.envs]
    if resume is None:
        return config.model_copy(update={"pins": now})
    changed = mismatches(config.pins, now)
    if changed:
        _fail(
            f"--resume {resume}: an environment changed since the run began: "
            f"{'; '.join(changed)}. Install the recorded version (`envhub pull NAME@VERSION`) "
            "or start a new run with --out"
        )
    return config


def _open_store(resume: Path | None, out: Path | None) -> RunStore:
    """The run directory: the one resumed, ``--out``, or a new ``runs/eval-TIME``."""
    out = resume or out or Path("runs") / _dt.datetime.now().strftime("eval-%Y%m%d-%H%M%S")
    store = RunStore(out)
    if resume is None and store.exists():
        _fail(f"{out} already holds a run; continue it with --resume {out} or pick another --out")
    return store


def _evaluate(
    config: EvalConfig,
    store: RunStore,
    api_key: str | None,
    engine: str,
    show_progress: bool,
    as_json: bool,
) -> None:
    from .report import BarProgress, silence_progress_bars
    from .runner import Evaluation

    if not show_progress:  # before the model loader draws its own bars
        silence_progress_bars()
    bars = BarProgress(enabled=show_progress)
    try:
        if config.agent is not None:
            from ..gateway.agent import load_callable
            from .agents import AgentEvaluation, build_gateway_model

            if config.agent.callable:  # before a model is loaded and a port bound
                load_callable(config.agent.callable)
            backend = build_gateway_model(config, api_key, engine)
            evaluation = AgentEvaluation(config, backend, store, env_factory(config), bars)
        else:
            backend = build_model(config, api_key, engine)
            evaluation = Evaluation(config, backend, store, env_factory(config), progress=bars)
    except (EnvhubError, FileNotFoundError, ValueError) as e:
        _fail(str(e))

    async def main() -> dict[str, Any]:
        try:
            return await evaluation.run()
        finally:
            await backend.aclose()

    try:
        with bars:
            summary = asyncio.run(main())
    except KeyboardInterrupt:
        summary = evaluation.finish(interrupted=True)
        _show(summary, as_json)
        done = sum(s["episodes"] for s in summary["environments"].values())
        typer.echo(
            f"interrupted: {done} finished episodes kept in {store.dir}; "
            f"continue with `envhub eval --resume {store.dir}`",
            err=True,
        )
        raise typer.Exit(130) from None
    except EnvhubError as e:
        _fail(str(e))
    _show(summary, as_json)
    typer.echo(f"wrote {store.summary_path} and {store.episodes_path}", err=True)
    failure = infra_failure(summary, store, local=not config.base_url)
    if failure:
        _fail(failure)


def infra_failure(summary: dict[str, Any], store: RunStore, *, local: bool = False) -> str | None:
    """Why the run measured the machinery and not the model, or ``None``.

    More than half of the episodes ending in ``infra_error`` (an endpoint that is down, a
    sandbox that does not start) is a failed evaluation, not a result: the command exits 1
    and names the first cause, instead of printing ``infra=N`` and exiting 0. The hint fits
    the model: an endpoint may be down; a local model may not run on the engine chosen.
    """
    envs = summary["environments"].values()
    total = sum(s["episodes"] for s in envs)
    infra = sum(s["status"].get("infra_error", 0) for s in envs)
    if total == 0 or 2 * infra <= total:
        return None
    causes = [r.error for r in store.load_records() if r.status is Status.INFRA_ERROR]
    cause = next((c for c in causes if c), "no cause recorded")
    check = (
        "does the local model run on this engine? try --engine transformers"
        if local
        else "is the endpoint up?"
    )
    return (
        f"{infra} of {total} episodes ended in infra_error, so this run says nothing about the "
        f"model; first cause: {cause}. Fix it ({check}) and continue with "
        f"`envhub eval --resume {store.dir}` (infra errors are retried)"
    )


def _rescore(
    source: Path,
    out: Path | None,
    concurrency: int,
    as_json: bool,
    runner: str | None,
    env_url: str | None,
) -> None:
    from .rescore import rescore_run

    src = RunStore(source)
    if not src.episodes_path.exists():
        _fail(f"{source} holds no episodes.jsonl; is it an `envhub eval --out` directory?")
    dest = RunStore(out or source / "rescored")
    if dest.dir.resolve() == src.dir.resolve():
        _fail("--out must differ from the rescored directory (its episodes are kept as they are)")
    cfg = src.read_config()
    if runner or env_url:  # the recorded run's server may be gone: verify elsewhere
        cfg = cfg.model_copy(update={"runner": runner or cfg.runner, "env_url": env_url})
    try:
        summary = asyncio.run(rescore_run(src, dest, env_factory(cfg), concurrency=concurrency))
    except EnvhubError as e:
        _fail(str(e))
    _show(summary, as_json)
    typer.echo(f"wrote {dest.summary_path} and {dest.episodes_path}", err=True)


def _compare(runs: list[Path], as_json: bool) -> None:
    from .compare import compare, print_comparison

    try:
        result = compare(runs)
    except EnvhubError as e:
        _fail(str(e))
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    else:
        print_comparison(result)


def _show(summary: dict[str, Any], as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    from .report import print_summary

    print_summary(summary)
