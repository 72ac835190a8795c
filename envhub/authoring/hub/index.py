"""An index of environments: a PEP 503 "simple" index, read from a folder or over HTTP.

The layout is the one pip reads, so ``pip install --index-url INDEX envhub-NAME`` works too::

    INDEX/index.html                    a link per project
    INDEX/<project>/index.html          a link per file: FILE#sha256=DIGEST, data-yanked="why"
    INDEX/<project>/<wheel>             the environment's distribution (code, YAML, data)
    INDEX/<project>/<NAME>-<VERSION>.card.json
                                        its card: measured figures, the wheel's digest
    INDEX/<project>/yanked.json         {file: reason}, for the versions taken back

A folder is written by ``envhub push`` and ``envhub yank`` (its pages are made again from the
files each time); any folder served over HTTP, or any PEP 503 index (pypiserver's ``/simple/``,
devpi's ``+simple/``, PyPI's ``/simple/``), is read by ``pull`` and ``search``: a remote index
holds the wheels alone, whose cards are inside them (:mod:`.wheelcard`). A file is read where
its link points (a remote page may link to another folder). The digest in a page is the index's
word for what the file must be: a file that does not hash to it is refused.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from ...errors import ConfigError, InfraError
from ...install import normal

YANKED = "yanked.json"
CARD_SUFFIX = ".card.json"
_WHEEL = re.compile(r"^(?P<dist>[^-]+)-(?P<version>[^-]+)-.+\.whl$")


def is_url(where: str) -> bool:
    """Whether ``where`` names an index over HTTP (else it is a folder)."""
    return re.match(r"^https?://", where) is not None


def redact(where: str) -> str:
    """``where`` as it may be shown or recorded: without a ``user:password@`` in a URL."""
    return re.sub(r"(?<=://)[^/@]*@", "", where)


def sha256(data: bytes) -> str:
    """The hex digest a page's ``#sha256=`` fragment holds."""
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Link:
    """One file of a project page."""

    filename: str
    digest: str | None
    """``sha256`` hex digest from the link's fragment (``None``: the index gave none)."""
    yanked: str | None
    """Why the version was yanked (``""``: no reason given), or ``None``."""
    href: str = field(default="", compare=False)
    """Where the link points, relative to its page (``""``: the file beside the page)."""

    @property
    def version(self) -> str | None:
        """The version of a wheel (``None`` for other files)."""
        m = _WHEEL.match(self.filename)
        return m.group("version") if m else None


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            found = dict(attrs)
            self.found.append((found.get("href") or "", found))


def parse_page(text: str) -> list[Link]:
    """The links of a PEP 503 project page (PEP 592 ``data-yanked`` included)."""
    parser = _Anchors()
    parser.feed(text)
    links = []
    for href, attrs in parser.found:
        path, _, fragment = href.partition("#")
        digest = fragment.removeprefix("sha256=") if fragment.startswith("sha256=") else None
        yanked = (attrs["data-yanked"] or "") if "data-yanked" in attrs else None
        name = urllib.parse.unquote(path.rstrip("/").rsplit("/", 1)[-1])
        links.append(Link(name, digest, yanked, path))
    return links


class Index:
    """A simple index at a folder path or an ``http(s)://`` URL."""

    def __init__(self, where: str | Path) -> None:
        text = str(where)
        self.url = text.rstrip("/") + "/" if is_url(text) else None
        self.folder = None if self.url else Path(text).expanduser().resolve()
        self.where = redact(self.url) if self.url else str(self.folder)
        """What messages and records name: the folder, or the URL without credentials."""

    def read(self, rel: str) -> bytes:
        """The bytes at ``rel`` (``project/file``, or ``""`` for the root page)."""
        if self.folder is not None:
            path = self.folder / rel
            target = path / "index.html" if path.is_dir() or not rel else path
            try:
                return target.read_bytes()
            except FileNotFoundError as e:
                raise ConfigError(f"{self.where}: no {rel or 'index.html'}") from e
        return self._get(self.url + rel, rel or "root page")

    def _get(self, url: str, what: str) -> bytes:
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                return response.read()
        except urllib.error.HTTPError as e:
            if e.code == 404:
                raise ConfigError(f"{self.where}: no {what} (404)") from e
            raise InfraError(f"index {self.where}: {what}: HTTP {e.code}") from e
        except OSError as e:
            raise InfraError(f"index {self.where} unreachable: {e}") from e

    def file(self, project: str, link: Link) -> bytes:
        """The bytes of a file of ``project``'s page, read where its link points."""
        if self.url is None or not link.href:
            return self.read(f"{normal(project)}/{link.filename}")
        page = f"{self.url}{normal(project)}/"
        return self._get(urllib.parse.urljoin(page, link.href), link.filename)

    def projects(self) -> list[str]:
        """The projects the root page lists."""
        return [link.filename for link in parse_page(self.read("").decode())]

    def links(self, project: str) -> list[Link]:
        """The files of ``project`` (PEP 503 normalised name)."""
        return parse_page(self.read(f"{normal(project)}/").decode())

    def card(self, project: str, link: Link) -> dict:
        """The card a ``.card.json`` link names."""
        return json.loads(self.file(project, link))


def _page(title: str, rows: list[str]) -> str:
    head = f"<!DOCTYPE html>\n<html><head><title>{title}</title></head><body>"
    return "\n".join([head, *rows, "</body></html>"]) + "\n"


def _file_row(path: Path, yanked: dict[str, str]) -> str:
    name = html.escape(path.name)
    mark = f' data-yanked="{html.escape(yanked[path.name])}"' if path.name in yanked else ""
    return f'<a href="{name}#sha256={sha256(path.read_bytes())}"{mark}>{name}</a>'


def write_pages(folder: Path) -> None:
    """Make a folder index's pages again from its files (the root page and every project's)."""
    projects = sorted(p for p in folder.iterdir() if p.is_dir())
    for project in projects:
        yanked = json.loads((project / YANKED).read_text()) if (project / YANKED).exists() else {}
        files = sorted(p for p in project.iterdir() if p.name not in ("index.html", YANKED))
        rows = [_file_row(p, yanked) for p in files]
        (project / "index.html").write_text(_page(f"Links for {project.name}", rows))
    rows = [f'<a href="{html.escape(p.name)}/">{html.escape(p.name)}</a>' for p in projects]
    (folder / "index.html").write_text(_page("Simple index", rows))
