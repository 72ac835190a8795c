"""Uploading a wheel to a remote index with twine (envhub's ``hub`` extra).

Any index that takes ``twine upload`` takes it: pypiserver, devpi, PyPI, Artifactory... The URL
is the index's upload URL (PyPI's ``https://upload.pypi.org/legacy/``, a pypiserver's root),
which may differ from the page URL that ``pull`` and ``search`` read (a pypiserver's
``/simple/``, PyPI's ``https://pypi.org/simple/``).

Credentials are twine's own: ``user``/``password`` if given, else ``TWINE_USERNAME`` and
``TWINE_PASSWORD``, else the keyring; never asked for at a prompt, never printed (twine says
which user it uses, not the password). A version is uploaded once: the index's refusal of a
file it already holds (409, or PyPI's 400 "File already exists") is said as such.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path

from ...errors import ConfigError, InfraError, missing
from .index import redact

_TAKEN = ("already exists", "file exists")
"""How indexes word a refusal of a file they hold (pypiserver and PyPI answer 400)."""


def upload(wheel: Path, url: str, user: str | None = None, password: str | None = None) -> None:
    """Upload ``wheel`` to the index at ``url`` with twine.

    Raises:
        DependencyMissing: twine is not installed (the ``hub`` extra).
        ConfigError: the index refused it (it holds that file already, bad credentials...).
        InfraError: the index could not be reached.
    """
    try:
        import requests
        from twine.commands.upload import upload as twine_upload
        from twine.exceptions import TwineException
        from twine.settings import Settings
    except ImportError as e:
        raise missing("twine", "hub") from e
    user = user or os.environ.get("TWINE_USERNAME")  # twine's command reads them; its API not
    password = password or os.environ.get("TWINE_PASSWORD")
    settings = Settings(
        repository_url=url, username=user, password=password, non_interactive=True,
        disable_progress_bar=True,
    )  # fmt: skip
    said, url = io.StringIO(), redact(url)  # messages name the URL without credentials
    try:
        with contextlib.redirect_stdout(said), _quiet("twine"):  # its hints name its own flags
            twine_upload(settings, [str(wheel)])
    except requests.HTTPError as e:
        answer = e.response
        status = f"HTTP {answer.status_code} {answer.reason}"
        text = " ".join(re.sub(r"(?s)<style.*?</style>|<[^>]+>", " ", answer.text).split())
        if answer.status_code == 409 or any(m in f"{status} {text}".lower() for m in _TAKEN):
            raise ConfigError(
                f"{wheel.name} is already in the index at {url} ({status}): a version is "
                "pushed once. Bump `version` in pyproject.toml and push again."
            ) from None
        raise ConfigError(
            f"the index at {url} refused {wheel.name} ({status}: {text[:300]})"
        ) from None
    except requests.ConnectionError as e:
        raise InfraError(f"the index at {url} is unreachable: {e}") from None
    except TwineException as e:
        fix = ""
        if "credential" in str(e).lower():
            fix = (
                ": give --user and --password, or set TWINE_USERNAME and TWINE_PASSWORD (an "
                "index that does not check them takes any)"
            )
        raise ConfigError(f"twine could not upload {wheel.name} to {url} ({e}){fix}") from None


@contextlib.contextmanager
def _quiet(name: str) -> Iterator[None]:
    """Only errors from the logger ``name`` while the block runs."""
    logger = logging.getLogger(name)
    before = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(before)
