"""A real, throwaway PostgreSQL server for the history tests: Debian's ``postgresql`` package (installed
with apt-get when missing and possible), ``initdb`` and ``postgres`` on a temporary directory, listening
on localhost only, run as the ``postgres`` user when the tests run as root (the server refuses root),
and tied to the test session so a killed session leaves no server behind. Tests skip, with the reason,
only when no server can be had. Test modules import the fixtures:
``from tests.history_pg import pg_url, postgres_server  # noqa: F401``."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

PREFIX = "harness-pg-"


@dataclass(frozen=True)
class Server:
    port: int
    user: str
    data: Path

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/{database}"


def _bin_dir() -> Optional[Path]:
    initdb = shutil.which("initdb")
    if initdb:
        return Path(os.path.realpath(initdb)).parent
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def _install() -> Optional[str]:
    """apt-get the server; the reason it could not, or None."""
    if shutil.which("apt-get") is None:
        return "no initdb on PATH or under /usr/lib/postgresql, and no apt-get to install postgresql"
    if os.geteuid() != 0:
        return "no initdb on PATH or under /usr/lib/postgresql, and not root to apt-get install postgresql"
    for command in (["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends", "postgresql"]):
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=900,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            return f"`{' '.join(command)}` failed ({done.returncode}): {tail[0]}"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    """Runs in the server's process before exec: when the test session dies, even killed, the server
    gets SIGINT (fast shutdown) instead of living on (Linux; a no-op elsewhere)."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGINT)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _sweep_stale() -> None:
    """Remove data directories that killed sessions left behind (no server running, an hour old)."""
    for old in glob.glob(os.path.join(tempfile.gettempdir(), f"{PREFIX}*")):
        path = Path(old)
        if not (path / "data" / "postmaster.pid").exists() and time.time() - path.stat().st_mtime > 3600:
            shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL server for the session; trust authentication for user ``harness`` on 127.0.0.1."""
    try:
        import psycopg
    except ImportError:
        pytest.skip("psycopg is not installed (pip install 'psycopg[binary]')")
    bins = _bin_dir()
    if bins is None:
        reason = _install()
        bins = _bin_dir()
        if bins is None:
            pytest.skip(f"PostgreSQL server not available: {reason or 'installed, but no initdb found'}")
    as_user: dict = {}
    if os.geteuid() == 0:  # the server refuses to run as root
        import pwd

        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no `postgres` user to run the server as")
        as_user = {"user": owner.pw_uid, "group": owner.pw_gid, "extra_groups": []}
    _sweep_stale()
    root = Path(tempfile.mkdtemp(prefix=PREFIX))
    if as_user:
        os.chown(root, as_user["user"], as_user["group"])
    data, port = root / "data", _free_port()
    subprocess.run(
        [str(bins / "initdb"), "-D", str(data), "-U", "harness", "--auth=trust", "-E", "UTF8", "--no-sync"],
        check=True,
        capture_output=True,
        timeout=300,
        cwd=root,
        **as_user,
    )
    log = open(root / "server.log", "wb")
    server = subprocess.Popen(
        [
            str(bins / "postgres"),
            "-D",
            str(data),
            "-p",
            str(port),
            "-k",
            str(root),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off",
            "-c",
            "max_connections=50",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=root,
        preexec_fn=_die_with_parent,
        **as_user,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                psycopg.connect(
                    host="127.0.0.1", port=port, user="harness", dbname="postgres", connect_timeout=2
                ).close()
                break
            except psycopg.OperationalError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"PostgreSQL did not start:\n{(root / 'server.log').read_text()}") from None
                time.sleep(0.2)
        yield Server(port, "harness", data)
    finally:
        server.send_signal(signal.SIGINT)  # fast shutdown
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_url(postgres_server) -> str:
    """A fresh, empty database on the session's server, as a SQLAlchemy URL."""
    import psycopg

    name = f"history_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(
        host="127.0.0.1", port=postgres_server.port, user=postgres_server.user, dbname="postgres", autocommit=True
    ) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return postgres_server.url(name)
