"""The virtual environments the Spark-line suite runs in, made by the bench itself.

Each Spark line and each peer runs in a venv of its own under ``.venv-bench/`` (gitignored),
created on first use with ``python -m venv`` and pip, and reused while its requirements are
unchanged (a ``.installed`` file records them):

* ``spark<line>``: spark_dp (editable, from this checkout) with that pyspark; the Spark 4 line
  uses the project's own ``.venv`` (``make setup``) when its pyspark is a 4.x;
* ``pipeline-dp-spark<version>``: PyPI ``pipeline-dp`` with exactly the pyspark of the line;
* ``tumult-spark3.5``: PyPI ``tmlt.analytics``, which pins pyspark 3.5, so it runs on the 3.5
  line only.

``python -m bench.venvs`` creates them all (``make bench-venvs``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["VENV_ROOT", "Venv", "ensure", "line_venvs", "peer_venvs", "spark_version"]

REPO = Path(__file__).resolve().parent.parent
VENV_ROOT = REPO / ".venv-bench"
SPARK35 = "pyspark>=3.5,<3.6"


@dataclass(frozen=True)
class Venv:
    """A venv: its directory name under ``.venv-bench`` and what pip installs into it."""

    name: str
    requirements: tuple[str, ...]
    editable: bool = False  # also install this checkout (spark_dp) in editable mode

    @property
    def path(self) -> Path:
        return VENV_ROOT / self.name

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"


def _pip(python: Path, args: list[str]) -> None:
    cmd = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *args]
    print(f"[bench] {' '.join(cmd)}", flush=True)
    subprocess.run(cmd, check=True)


def ensure(venv: Venv) -> Path:
    """Create ``venv`` unless it exists with the same requirements; return its python."""
    marker = venv.path / ".installed"
    wanted = json.dumps({"requirements": venv.requirements, "editable": venv.editable})
    if marker.exists() and marker.read_text() == wanted and venv.python.exists():
        return venv.python
    print(f"[bench] creating venv {venv.path} ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv.path)], check=True)
    _pip(venv.python, ["--upgrade", "pip"])
    extra = ["-e", str(REPO)] if venv.editable else []
    _pip(venv.python, [*venv.requirements, *extra])
    marker.write_text(wanted)
    return venv.python


def spark_version(python: Path) -> str:
    """The pyspark version importable by ``python``."""
    out = subprocess.run(
        [str(python), "-c", "import pyspark; print(pyspark.__version__)"],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def line_venvs() -> dict[str, Path]:
    """Spark line (``"3.5"``, ``"4"``) -> the python of a venv with spark_dp on that line."""
    project = REPO / ".venv" / "bin" / "python"
    lines = {"3.5": ensure(Venv("spark3.5", (SPARK35,), editable=True))}
    if project.exists() and spark_version(project).startswith("4."):
        lines["4"] = project
    else:
        lines["4"] = ensure(Venv("spark4", ("pyspark>=4,<5",), editable=True))
    return lines


def peer_venvs(spark: str) -> dict[str, Path]:
    """Peer name -> the python of its venv, on pyspark ``spark`` (an exact version)."""
    peers = {
        "pipeline-dp": ensure(
            Venv(f"pipeline-dp-spark{spark}", ("pipeline-dp", f"pyspark=={spark}"))
        )
    }
    if spark.startswith("3.5."):
        peers["tumult"] = ensure(Venv("tumult-spark3.5", ("tmlt.analytics", f"pyspark=={spark}")))
    return peers


def main() -> int:
    """Create every venv of the suite."""
    for python in line_venvs().values():
        peer_venvs(spark_version(python))
    return 0


if __name__ == "__main__":
    sys.exit(main())
