"""``envhub gateway``: a server of its own, episodes opened and closed over HTTP with the admin key."""

import json
import subprocess
import sys
from pathlib import Path

import httpx
import openai
import typer
from typer.testing import CliRunner

from envhub.gateway.cli import register

ROOT = Path(__file__).resolve().parents[2]
LAUNCH = (
    "import typer; from envhub.gateway.cli import register; "
    "app = typer.Typer(); register(app); app.command('x')(lambda: None); app()"
)


def test_the_verb_is_an_entry_point_of_the_gateway_extra():
    text = (ROOT / "pyproject.toml").read_text()
    assert 'gateway = "envhub.gateway.cli:register [gateway]"' in text
    assert 'gateway = ["envhub-rl[server]", "openai>=1.40"]' in text


def test_usage_errors():
    app = typer.Typer()
    register(app)
    app.command("x")(lambda: None)
    res = CliRunner().invoke(app, ["gateway"])
    assert res.exit_code == 2 and "exactly one" in res.output
    res = CliRunner().invoke(app, ["gateway", "--upstream", "http://127.0.0.1:9/v1"])
    assert res.exit_code == 2 and "--upstream-model" in res.output


def test_a_served_gateway_opens_serves_and_closes_episodes(tiny_path):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            LAUNCH,
            "gateway",
            "--model",
            str(tiny_path),
            "--engine",
            "transformers",
            "--port",
            "0",
            "--max-tokens",
            "4",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        info = json.loads(proc.stdout.readline())
        base = info["base_url"].removesuffix("/v1")
        admin = {"Authorization": f"Bearer {info['admin_key']}"}
        assert httpx.post(f"{base}/episodes", json={}).status_code == 401
        r = httpx.post(f"{base}/episodes", json={"id": "e1", "max_calls": 1}, headers=admin)
        key = r.json()["api_key"]
        client = openai.OpenAI(base_url=info["base_url"], api_key=key, max_retries=0)
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        r = httpx.delete(f"{base}/episodes/e1", headers=admin)
        trace = r.json()
        assert trace["episode"] == "e1" and len(trace["calls"]) == 1
        assert trace["calls"][0]["sampled_ids"]
        assert httpx.delete(f"{base}/episodes/e1", headers=admin).status_code == 404
        bad = httpx.post(f"{base}/episodes", json={"max_calls": 0}, headers=admin)
        assert bad.status_code == 400 and "max_calls" in bad.json()["error"]["message"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
