"""notebooks/quickstart.ipynb runs end to end in a fresh kernel (nbclient), offline."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.main_python  # nbformat and nbclient: the main venv's test tools

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "quickstart.ipynb"


def test_notebook_is_stored_without_outputs():
    import nbformat

    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code)


@pytest.mark.slow
def test_quickstart_notebook_runs_and_draws_its_plots(tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute(env=dict(os.environ))  # raises CellExecutionError on the first failure
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 3  # output size vs ε; predicted vs actual items; DC curve with ℓ̂
    text = "".join(o.get("text", "") for o in outputs)
    assert "ℓ̂ =" in text and "kept" in text
    assert "recommended: --algorithm" in text and "auto chose Δ0 =" in text
    assert "exit code 0:" in text and "released to the table quickstart_vocab" in text
    table = next(o for o in outputs if "text/html" in o.get("data", {}))  # the sizes table
    for algorithm in ("basic", "dp-sips", "mad", "mad2r"):
        assert algorithm in table["data"]["text/html"]
