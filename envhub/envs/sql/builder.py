"""Build the built-in databases once, deterministically, and hand out their paths.

Each database of :data:`~envhub.envs.sql.schemas.SCHEMAS` is written to
``<cache>/<db_id>-v<BUILD_VERSION>.sqlite`` where ``<cache>`` is ``$ENVHUB_HOME/cache/sql``
(``~/.envhub/cache/sql`` by default) or the ``cache_dir`` option. A build writes a temporary
file and renames it into place, so concurrent builders (threads or processes) never see half
a database; the same code and sqlite version give a byte-identical file. Next to it a
``.sha256`` file records the checksum: a cached database whose bytes no longer match is
rebuilt, so a tampered copy is never served.
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
import sqlite3
import threading
import uuid
from pathlib import Path

from envhub.datasets import cache_dir

from .schemas import SCHEMAS, Schema

log = logging.getLogger("envhub.sql")

BUILD_VERSION = 1
"""Bump when a schema or generator changes: old cached files are then left unused."""


def default_cache_dir() -> Path:
    """``$ENVHUB_HOME/cache/sql``, or ``~/.envhub/cache/sql``."""
    return cache_dir("sql")


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def build_database(schema: Schema, path: Path) -> str:
    """Write ``schema``'s database to ``path`` atomically; return its sha256.

    Args:
        schema: The schema and generator.
        path: Final location; its folder is created if needed.

    Returns:
        The checksum of the written file.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        conn = sqlite3.connect(tmp)
        try:
            conn.executescript(schema.ddl)
            rows = schema.generate(random.Random(schema.seed))
            for table, values in rows.items():
                if values:
                    marks = ", ".join("?" * len(values[0]))
                    conn.executemany(f"INSERT INTO {table} VALUES ({marks})", values)
            conn.commit()
            conn.execute("ANALYZE")
            conn.commit()
        finally:
            conn.close()
        os.chmod(tmp, 0o444)
        digest = sha256_file(tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    sidecar = path.with_name(path.name + ".sha256")
    side_tmp = sidecar.with_name(f".{sidecar.name}.{uuid.uuid4().hex}.tmp")
    side_tmp.write_text(digest + "\n")
    os.replace(side_tmp, sidecar)
    return digest


class BuiltinDatabases:
    """The built-in databases under one cache folder, built on first use.

    Thread-safe: the first caller of :meth:`path` for a database builds or validates it, the
    others wait for it.
    """

    def __init__(self, cache_dir: str | Path | None = None) -> None:
        """Use ``cache_dir``, or :func:`default_cache_dir` when ``None``."""
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
        self._ready: dict[str, tuple[Path, str]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def ids() -> list[str]:
        """Ids of the built-in databases."""
        return list(SCHEMAS)

    def file_for(self, db_id: str) -> Path:
        """Where ``db_id`` lives (built or not)."""
        return self.cache_dir / f"{db_id}-v{BUILD_VERSION}.sqlite"

    def path(self, db_id: str) -> Path:
        """The path of ``db_id``, building it (or rebuilding a tampered copy) if needed.

        Raises:
            KeyError: ``db_id`` is not a built-in database.
        """
        if db_id in self._ready:
            return self._ready[db_id][0]
        if db_id not in SCHEMAS:
            raise KeyError(f"no built-in database {db_id!r}; built-in ones: {self.ids()}")
        with self._lock:
            if db_id not in self._ready:
                self._ready[db_id] = self._prepare(db_id)
        return self._ready[db_id][0]

    def expected_checksum(self, db_id: str) -> str:
        """The checksum recorded when ``db_id`` was built (builds it if needed)."""
        self.path(db_id)
        return self._ready[db_id][1]

    def _prepare(self, db_id: str) -> tuple[Path, str]:
        path = self.file_for(db_id)
        sidecar = path.with_name(path.name + ".sha256")
        if path.exists() and sidecar.exists():
            recorded = sidecar.read_text().strip()
            if sha256_file(path) == recorded:
                return path, recorded
            log.warning("sql: cached database %s does not match its checksum; rebuilding", path)
            path.unlink()
        log.info("sql: building database %s", path)
        return path, build_database(SCHEMAS[db_id], path)


def read_schema(db_path: str | Path) -> str:
    """The ``CREATE TABLE`` statements of a database, as shown to the model."""
    uri = f"{Path(db_path).resolve().as_uri()}?mode=ro"
    conn = sqlite3.connect(uri, uri=True)
    try:
        rows = conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND sql IS NOT NULL "
            "AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
        ).fetchall()
    finally:
        conn.close()
    return "\n".join(r[0].strip() + ";" for r in rows)
