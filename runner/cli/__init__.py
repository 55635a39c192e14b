"""The ``groundbench`` command line: one module per command (or per small group of
subcommands), each a thin adapter over a public function of the package that does the work.

:mod:`._app` holds the Typer app and :func:`main`, which tells an error of the tree drawn in
``runner/_errors.py`` in one line (:func:`runner._errors.told`); :mod:`._common` holds what
several commands share (the console, the defaults ``--help`` shows). A command's module
imports the packages it uses only when it runs, so that ``--help`` imports none of them
(issue 39).
"""

# Imported in the order --help lists the commands (each module registers its own on the app),
# the sub-apps' groups after them.
from runner.cli import (  # noqa: F401, I001
    _fidelity,
    _synth,
    _simulate,
    _run,
    _check,
    _demo,
    _monitor,
    _sql,
    _batches,
    _rescore,
    _report,
    _show,
    _cohort,
    _boxes,
    _data,
)
from runner.cli._app import app, main

__all__ = ["app", "main"]
