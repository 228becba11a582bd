"""A throw-away PostgreSQL cluster for tests: Debian's postgresql binaries, a cluster in a temporary folder, a free
port on 127.0.0.1, a random password, and nothing left behind when it stops.

initdb refuses to run as root, and CI runs as root: then the cluster belongs to the `postgres` account the Debian
package creates, and its folder sits under /tmp where that account can reach it.
"""

import glob
import os
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg
from psycopg import sql

from tests.served import free_port

USER = "mnemo"


def postgres_bin() -> Path | None:
    """The newest installed server's bin folder (/usr/lib/postgresql/<major>/bin), or None."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parent.parent.name)
    )
    return Path(found[-1]).parent if found else None


class PostgresCluster:
    def __init__(self) -> None:
        bindir = postgres_bin()
        if bindir is None:
            raise RuntimeError(
                "PostgreSQL is not installed: `make test` installs it (apt-get install postgresql)"
            )
        self.bin = bindir
        self.port = free_port()
        self.password = secrets.token_hex(16)
        self.dir = Path(tempfile.mkdtemp(prefix="mnemo-pg-"))
        self.data = self.dir / "data"
        self.log = self.dir / "postgres.log"
        self.as_root = os.geteuid() == 0

    def _run(self, *args: str) -> None:
        command = [str(self.bin / args[0]), *args[1:]]
        if self.as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            log = self.log.read_text()[-3000:] if self.log.exists() else ""
            raise RuntimeError(f"{args[0]} failed ({done.returncode}):\n{done.stderr[-3000:]}\n{log}")

    def start(self) -> None:
        pwfile = self.dir / "pwfile"
        pwfile.write_text(self.password)
        pwfile.chmod(0o600)
        if self.as_root:
            shutil.chown(self.dir, "postgres", "postgres")
            shutil.chown(pwfile, "postgres", "postgres")
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            USER,
            "--pwfile",
            str(pwfile),
            "--auth",
            "scram-sha-256",
            "-E",
            "UTF8",
            "--locale",
            "C.UTF-8",
        )
        pwfile.unlink()
        # A test cluster: durability settings off, it is thrown away.
        options = (
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "-t", "60", "start"
        )

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}:{self.password}@127.0.0.1:{self.port}/{database}"

    def connect(self, database: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(self.url(database), autocommit=True)

    def create_database(self, name: str) -> str:
        """An empty database `name`; returns its URL."""
        with self.connect() as connection:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url(name)

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
