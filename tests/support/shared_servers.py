"""Throw-away real servers for the team back ends (issue #14): a Postgres cluster and a Chroma server.

Both listen on free local ports in temporary directories and are torn down afterwards. A missing
PostgreSQL or Chroma CLI fails the tests that need them with what to install (never a silent skip);
run ``pytest -m "not teams"`` to leave them out by hand.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

PG_USER = "rag"
START_TIMEOUT = 120


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def postgres_bin(name: str) -> str | None:
    """A PostgreSQL program: Debian keeps them in /usr/lib/postgresql/<version>/bin, off the PATH."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    return found[-1] if found else shutil.which(name)


class PostgresCluster:
    """initdb in a temporary directory, started with pg_ctl on a free port (as the ``postgres`` user under root)."""

    def __init__(self):
        initdb, pg_ctl = postgres_bin("initdb"), postgres_bin("pg_ctl")
        if not (initdb and pg_ctl):
            raise RuntimeError("PostgreSQL is not installed: `apt-get install postgresql` (scripts/test.sh does it) "
                               "or leave these tests out with -m 'not teams'")
        self.pg_ctl = pg_ctl
        self.as_user: list[str] = []
        self.root = Path(tempfile.mkdtemp(prefix="rag-pg-"))
        if os.geteuid() == 0:  # postgres refuses to run as root
            try:
                account = pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError("running as root needs the 'postgres' system user "
                                   "(Debian's postgresql package creates it)") from None
            os.chown(self.root, account.pw_uid, account.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.password = "pg-" + secrets.token_hex(8)
        pwfile = self.root / "pw"
        pwfile.write_text(self.password + "\n")
        if self.as_user:
            os.chown(pwfile, account.pw_uid, account.pw_gid)
        self.data = self.root / "data"
        self._run([initdb, "-D", str(self.data), "-U", PG_USER, f"--pwfile={pwfile}", "-E", "UTF8", "--no-locale",
                   "--auth-local=trust", "--auth-host=scram-sha-256"])
        self.port = free_port()
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
        self._run([pg_ctl, "-D", str(self.data), "-l", str(self.root / "log"), "-o", options, "-w", "-t",
                   str(START_TIMEOUT), "start"])
        self.admin_url = self.url("postgres")

    def _run(self, command: list[str]) -> None:
        done = subprocess.run(self.as_user + command, capture_output=True, text=True, timeout=START_TIMEOUT)
        if done.returncode:
            log = (self.root / "log").read_text() if (self.root / "log").exists() else ""
            raise RuntimeError(f"{command[0]} failed: {done.stdout}{done.stderr}{log[-2000:]}")

    def url(self, database: str) -> str:
        return f"postgresql://{PG_USER}:{self.password}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database; its URL (with the password)."""
        import psycopg

        name = "t_" + secrets.token_hex(6)
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        subprocess.run(self.as_user + [self.pg_ctl, "-D", str(self.data), "-m", "immediate", "stop"],
                       capture_output=True, timeout=60)
        shutil.rmtree(self.root, ignore_errors=True)


class ChromaServer:
    """``chroma run --path DIR --port N`` (the CLI ships with the chromadb package), waited for until it answers."""

    def __init__(self):
        cli = shutil.which("chroma") or str(Path(sys.executable).with_name("chroma"))
        if not Path(cli).exists():
            raise RuntimeError("the `chroma` CLI is missing: pip install -r requirements.txt")
        self.root = Path(tempfile.mkdtemp(prefix="rag-chroma-"))
        self.port = free_port()
        self.log = open(self.root / "log", "w")  # noqa: SIM115 - open while the server runs
        self.proc = subprocess.Popen([cli, "run", "--path", str(self.root / "store"), "--host", "127.0.0.1",
                                      "--port", str(self.port)], stdout=self.log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                with urllib.request.urlopen(self.url + "/api/v2/heartbeat", timeout=2):
                    break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"chroma run did not start: {(self.root / 'log').read_text()[-2000:]}") from None
                time.sleep(0.2)

    def clear(self) -> None:
        """Every collection dropped (tests share the server, not its contents)."""
        import chromadb

        client = chromadb.HttpClient(host="127.0.0.1", port=self.port)
        for collection in client.list_collections():
            client.delete_collection(collection.name)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)
