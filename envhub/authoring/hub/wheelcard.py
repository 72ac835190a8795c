"""The card inside the wheel: ``<dist>-<version>.dist-info/envhub-card.json``.

A remote index (PyPI, devpi, pypiserver...) holds distributions only, so the card travels in
the wheel: :func:`embed` adds it to the wheel's ``.dist-info`` folder and its line to
``RECORD`` (``sha256=`` urlsafe base64 without padding, and the size, as the wheel format
says), so pip installs the wheel as any other and ``importlib.metadata.distribution(DIST)
.read_text("envhub-card.json")`` reads the card where it is installed.

What is embedded is the push's record without what would make two pushes of the same
contents differ (the times of the push and of the measure) and without the wheel's own
digest (a file cannot hold its own hash): the index's page gives that, and a reader adds it.
The card's entry takes the date of the wheel's ``RECORD``, so the same contents give the same
bytes.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import zipfile
from pathlib import Path
from typing import Any

CARD_FILE = "envhub-card.json"


def _record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _dist_info(names: list[str]) -> str:
    folders = {n.split("/", 1)[0] for n in names if n.split("/", 1)[0].endswith(".dist-info")}
    if len(folders) != 1:
        raise ValueError(f"a wheel has one .dist-info folder, this one has {sorted(folders)}")
    return folders.pop()


def embedded(record: dict[str, Any]) -> dict[str, Any]:
    """The part of a push's record that goes into the wheel (no times, no digest)."""
    card = dict(record["card"])
    card["scores"] = {k: v for k, v in (card.get("scores") or {}).items() if k != "measured"}
    keep = ("environment", "version", "distribution", "file")
    return {**{k: record[k] for k in keep}, "card": card}


def embed(wheel: Path, record: dict[str, Any]) -> None:
    """Rewrite ``wheel`` in place with :func:`embedded` ``(record)`` as its card."""
    body = (json.dumps(embedded(record), indent=2, sort_keys=True) + "\n").encode()
    with zipfile.ZipFile(wheel) as old:
        infos = old.infolist()
        info = _dist_info([i.filename for i in infos])
        contents = {i.filename: old.read(i) for i in infos}
    card_name, record_name = f"{info}/{CARD_FILE}", f"{info}/RECORD"
    rows = list(csv.reader(io.StringIO(contents[record_name].decode())))
    rows = [r for r in rows if r and r[0] not in (card_name, record_name)]
    rows += [[card_name, _record_hash(body), str(len(body))], [record_name, "", ""]]
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    record_info = next(i for i in infos if i.filename == record_name)
    card_info = zipfile.ZipInfo(card_name, date_time=record_info.date_time)
    card_info.compress_type = zipfile.ZIP_DEFLATED
    card_info.external_attr = 0o644 << 16
    out = wheel.with_suffix(".tmp")
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as new:
        for i in infos:
            if i.filename not in (card_name, record_name):
                new.writestr(i, contents[i.filename])
        new.writestr(card_info, body)
        new.writestr(record_info, text.getvalue().encode())
    out.replace(wheel)


def read(data: bytes) -> dict[str, Any] | None:
    """The card embedded in a wheel's bytes, or ``None`` when it has none."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        names = z.namelist()
        name = f"{_dist_info(names)}/{CARD_FILE}"
        return json.loads(z.read(name)) if name in names else None
