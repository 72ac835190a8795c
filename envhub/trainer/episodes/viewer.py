"""``envhub rollouts DIR``: read a run's rollout logs as transcripts, or as one static page.

``envhub rollouts DIR [--step N] [--env NAME] [--worst|--best] [--limit K]`` prints episodes
of one step (the last by default) readably in the terminal: task, reward and components,
status, advantage, then every message. ``--worst``/``--best`` order by reward.
``envhub rollouts DIR --html OUT.html`` writes a page with every logged step, each
episode a foldable transcript (no script, no network: open it anywhere).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envhub.errors import ConfigError
from envhub.gateway.trace import TRACE_FILE, rollout_records
from envhub.trainer.episodes.rollout_log import read_step, step_files


def select(
    run_dir: Path,
    step: int | None = None,
    env: str | None = None,
    order: str | None = None,
) -> tuple[int, list[dict[str, Any]]]:
    """The episodes of ``step`` (the last logged when None), of ``env``, ordered by reward.

    Raises:
        ConfigError: the run has no rollout logs, or none for that step.
    """
    files = dict(step_files(run_dir))
    if not files and (run_dir / TRACE_FILE).exists():  # an agent run's gateway trace
        if step not in (None, 0):
            raise ConfigError(f"{run_dir} holds a gateway trace (step 0 only), not step {step}")
        step, records = 0, rollout_records(run_dir)
    elif not files:
        raise ConfigError(
            f"{run_dir} has no rollout logs (rollouts/step_NNNNN.jsonl.gz) and no gateway trace "
            f"({TRACE_FILE}); train with logging.rollouts_every >= 1, or eval with --agent"
        )
    else:
        step = max(files) if step is None else step
        if step not in files:
            raise ConfigError(f"no rollout log for step {step}; logged steps: {sorted(files)}")
        records = read_step(files[step])
    if env is not None:
        records = [r for r in records if r["env"] == env]
    if order in ("worst", "best"):
        records.sort(key=lambda r: r["reward"], reverse=order == "best")
    return step, records


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def visible(text: Any) -> str:
    r"""``text`` with every control character shown as an escape (ESC as ``\x1b``), never raw.

    Model text reaches a terminal here: a raw ESC could clear the screen, retitle the window or
    write the clipboard (OSC 52); bidirectional overrides could reorder what is shown. Newlines
    and tabs stay.
    """
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode(), str(text))


def _header(r: dict[str, Any]) -> str:
    adv = "-" if r.get("advantage") is None else f"{r['advantage']:+.3f}"
    comps = " ".join(f"{k}={v:g}" for k, v in sorted(r["components"].items()))
    flags = [f for f in ("filtered", "truncated") if r.get(f)]
    return visible(
        f"[{r['env'] or 'env'}] task {r['task_id']} group {r['group']}  reward {r['reward']:.3f}"
        f"  ({comps})  status {r['status']}  end {r['end']}  turns {r['turns']}  adv {adv}"
        f"  tokens {r['response_tokens']}/{r['total_tokens']}  age {r['age']}"
        + (f"  [{', '.join(flags)}]" if flags else "")
    )


def render_text(step: int, records: Sequence[dict[str, Any]], width: int = 100) -> str:
    """Transcripts of ``records`` as plain text."""
    rule = "=" * width
    out = [f"step {step}: {len(records)} episode(s)"]
    for r in records:
        out += [rule, _header(r), "-" * width, "prompt:", _indent(r["prompt"])]
        for m in r["messages"]:
            out += [f"{visible(m['role'])}:", _indent(m["content"])]
        if r.get("error"):
            out.append(f"error: {visible(r['error'])}")
    return "\n".join(out) + "\n"


def _indent(text: str) -> str:
    shown = visible(text).strip() or "(empty)"
    return "\n".join("    " + line for line in shown.split("\n"))


def _h(text: Any) -> str:
    """Text for the page: control characters shown as escapes, then HTML-escaped."""
    return html.escape(visible(text))


def _html_episode(r: dict[str, Any]) -> str:
    msgs = "".join(
        f'<div class="{_h(m["role"])}"><b>{_h(m["role"])}</b><pre>{_h(m["content"])}</pre></div>'
        for m in r["messages"]
    )
    return (
        f"<details><summary>{html.escape(_header(r))}</summary>"
        f'<div class="prompt"><b>prompt</b><pre>{_h(r["prompt"])}</pre></div>'
        f"{msgs}</details>"
    )


STYLE = (
    "body{font-family:sans-serif;margin:1em}pre{white-space:pre-wrap;margin:.2em 0 .6em 1em}"
    ".assistant{background:#eef6ee}.env{background:#eef0f8}.prompt{background:#f6f6f6}"
    "summary{cursor:pointer;font-family:monospace;font-size:12px}"
)


def render_html(run_dir: Path, out: Path) -> int:
    """Write every logged step of ``run_dir`` as one static page; returns the episode count."""
    parts = [f"<h1>rollouts of {_h(run_dir)}</h1>"]
    total = 0
    steps = [(step, read_step(path)) for step, path in step_files(run_dir)]
    if not steps and (run_dir / TRACE_FILE).exists():
        steps = [(0, rollout_records(run_dir))]
    for step, records in steps:
        total += len(records)
        by_env: dict[str, list[float]] = {}
        for r in records:
            by_env.setdefault(r["env"] or "env", []).append(r["reward"])
        means = ", ".join(f"{e}: {sum(v) / len(v):.3f}" for e, v in by_env.items())
        parts.append(f"<h2>step {step} ({len(records)} episodes; mean reward {means})</h2>")
        parts.extend(_html_episode(r) for r in records)
    page = f"<!doctype html><meta charset=utf-8><style>{STYLE}</style>" + "".join(parts)
    out.write_text(page)
    return total


def main(
    run_dir: Path,
    step: int | None,
    env: str | None,
    order: str | None,
    limit: int | None,
    html_out: Path | None,
    as_json: bool = False,
) -> str:
    """What ``envhub rollouts`` prints."""
    if html_out is not None:
        n = render_html(run_dir, html_out)
        return f"wrote {html_out} ({n} episodes)\n"
    step, records = select(run_dir, step, env, order)
    records = records[:limit] if limit else records
    if as_json:
        return "".join(json.dumps(r) + "\n" for r in records)
    return render_text(step, records)
