"""`make run` listens on HOST:PORT, and two installs on one host each keep their own gunicorn control socket."""

import os
import subprocess
import sys

from gunicorn.ctl.client import ControlClient

from tests.served import ROOT, ServedInstance


def make_dry_run(*args: str, target: str = "run") -> list[str]:
    # Make passes command-line variables of an outer `make test PORT=…` down through MAKEFLAGS: drop them.
    env = {
        k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "HOST", "PORT"}
    }
    done = subprocess.run(
        ["make", "-n", target, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_make_run_serves_on_host_and_port(tmp_path):
    lines = make_dry_run("HOST=127.0.0.2", "PORT=8123", f"MNEMO_DATA_DIR={tmp_path}")

    assert "exec .venv/bin/gunicorn -c config/gunicorn.conf.py --bind 127.0.0.2:8123" in lines
    assert any("Serving Mnemo at http://127.0.0.2:8123 " in line for line in lines)
    # The first run's login line names the same address (it said 127.0.0.1:8000 whatever the port).
    assert ".venv/bin/python manage.py setup_demo --skip-checks --url http://127.0.0.2:8123" in lines
    assert f"mkdir -p {tmp_path}" in lines
    # Management commands run without MNEMO_DATA_DIR find the folder this server uses (manage.py).
    assert f'echo "{tmp_path}" > .mnemo-data-dir' in lines


def test_static_files_are_collected_again_only_when_a_source_changed(tmp_path):
    collect = ".venv/bin/python manage.py collectstatic --no-input -v 0 --skip-checks"
    assert collect in make_dry_run(f"MNEMO_DATA_DIR={tmp_path}")  # a fresh folder
    stamp = tmp_path / "staticfiles" / ".collected"
    stamp.parent.mkdir()
    stamp.touch()  # newer than every source
    assert collect not in make_dry_run(f"MNEMO_DATA_DIR={tmp_path}")
    os.utime(stamp, (0, 0))  # older than the sources: a static file changed since
    assert collect in make_dry_run(f"MNEMO_DATA_DIR={tmp_path}")


def test_the_install_shows_a_line_per_package_and_fails_when_pip_fails(tmp_path):
    lock = tmp_path / "lock.txt"
    lock.write_text("alpha==1.0 \\\n    --hash=sha256:00\nbeta==2.0 \\\n    --hash=sha256:11\n")
    pip = tmp_path / "pip"
    pip.write_text(
        "#!/bin/sh\n"
        "echo 'Collecting alpha==1.0 (from -r lock.txt (line 1))'\n"
        "echo '  Downloading alpha-1.0-py3-none-any.whl (10 kB)'\n"
        "echo 'Requirement already satisfied: beta==2.0 in ./site-packages'\n"
        "echo 'Installing collected packages: alpha'\n"
        "echo 'Successfully installed alpha-1.0'\n"
        'exit "${PIP_EXIT:-0}"\n'
    )
    pip.chmod(0o755)
    script = str(ROOT / "scripts" / "pip-install.sh")
    done = subprocess.run([script, str(lock), str(pip)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"Installing 2 Python packages from {lock} (the first time downloads them: a few minutes)",
        "  [1/2] alpha==1.0",
        "  [2/2] beta==2.0",
        "  Unpacking and installing them...",
        "  Done.",
    ]
    failed = subprocess.run(
        [script, str(lock), str(pip)],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PIP_EXIT": "1"},
    )
    assert failed.returncode == 1


def test_make_run_defaults_to_localhost_8000():
    lines = make_dry_run()

    assert "exec .venv/bin/gunicorn -c config/gunicorn.conf.py --bind 127.0.0.1:8000" in lines


def test_two_installs_on_one_host_keep_their_own_control_socket(tmp_path):
    first, second = ServedInstance(tmp_path / "first"), ServedInstance(tmp_path / "second")
    for instance in (first, second):
        instance.data_dir.mkdir()
    try:
        first.start()
        second.start()
        for instance in (first, second):
            # Each socket answers for its own server: the arbiter's pid and the port it listens on.
            with ControlClient(str(instance.data_dir / "gunicorn.ctl"), timeout=10) as control:
                assert control.send_command("show stats")["pid"] == instance.server.pid
                listeners = control.send_command("show listeners")["listeners"]
            assert [listener["address"] for listener in listeners] == [instance.url]
    finally:
        first.stop()
        second.stop()

    assert not (first.data_dir / "gunicorn.ctl").exists()
    assert not (second.data_dir / "gunicorn.ctl").exists()
    # Each warmed its models and stores up before it accepted a request, and said how long that took.
    log = (first.data_dir / "gunicorn.log").read_text()
    assert "Warmed up in" in log and "models" in log and "jieba and spaCy" in log


def test_the_tests_keep_out_of_the_data_folder_make_run_serves():
    # `make run` serves from MNEMO_DATA_DIR (var/ by default), which make exports; the tests' uploads and files
    # went there. `make test` runs the tests without it, and the test settings make a folder of their own,
    # removed when the process that made it exits.
    lines = make_dry_run(target="test")
    assert any(line.startswith("env -u MNEMO_DATA_DIR ") and "-m pytest" in line for line in lines)

    script = "from django.conf import settings; print(settings.DATA_DIR)"
    env = {k: v for k, v in os.environ.items() if k != "MNEMO_DATA_DIR"}
    env["DJANGO_SETTINGS_MODULE"] = "config.test_settings"
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    data_dir = done.stdout.strip().splitlines()[-1]
    assert "/mnemo-test-" in data_dir and not os.path.exists(data_dir)
