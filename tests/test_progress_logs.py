"""Progress bars say what they count and stay away for a single step; libraries stay quiet."""
from __future__ import annotations

import logging

from prover.utils.logs import OUR_PACKAGES, QUIET_LIBRARIES, setup_logging
from prover.utils.progress import progress_bar


def test_a_single_step_draws_no_bar():
    assert progress_bar(range(1), desc="x", unit="step").disable
    assert progress_bar(total=5, initial=4, desc="x", unit="step").disable  # resumed with one to go
    assert progress_bar(total=1, desc="x", unit="step").disable


def test_a_bar_of_several_steps_is_labelled():
    bar = progress_bar(range(3), desc="rank premises", unit="query")
    try:
        assert not bar.disable and bar.total == 3
        assert bar.desc.startswith("rank premises") and bar.unit == "query"
    finally:
        bar.close()


def test_other_libraries_log_warnings_only_unless_verbose(monkeypatch):
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # restored afterwards
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])  # as in a new process: basicConfig takes effect
    monkeypatch.setattr(root, "level", logging.WARNING)
    setup_logging(verbose=False)
    assert logging.getLogger("prover.demo").isEnabledFor(logging.INFO)
    assert not logging.getLogger("bm25s").isEnabledFor(logging.INFO)
    assert not logging.getLogger("some.library").isEnabledFor(logging.INFO)
    monkeypatch.setattr(root, "handlers", [])
    setup_logging(verbose=True)
    assert logging.getLogger("some.library").isEnabledFor(logging.DEBUG)
    assert logging.getLogger("bm25s").isEnabledFor(logging.DEBUG)
    for name in OUR_PACKAGES + QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(logging.NOTSET)


def test_a_script_that_imported_transformers_first_loses_its_bars_too():
    """benchmarks/*.py import model code before calling setup_logging: the "Loading weights"
    bars of transformers must go all the same (and stay with -v)."""
    import os
    import subprocess
    import sys
    code = ("import transformers.utils.logging as h; from prover.utils.logs import setup_logging; "
            "before = h.is_progress_bar_enabled(); setup_logging({v}); print(before, h.is_progress_bar_enabled())")
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    for verbose, expected in ((False, "True False"), (True, "True True")):
        out = subprocess.run([sys.executable, "-c", code.format(v=verbose)], env=env, capture_output=True,
                             text=True, check=True, cwd=os.path.dirname(os.path.dirname(__file__)))
        assert out.stdout.strip() == expected
