"""A local stand-in for the providers' APIs: both wire formats, answers from a cohort.

For users, a dry run of a grid before paying for it (``groundbench simulate``); for the tests
and benchmarks, a server on loopback with behaviour profiles and fault injection.
"""

from runner.simulator._boxes import box_answer
from runner.simulator._limiters import LimiterKind, Limits, Verdict, make_limiter
from runner.simulator._model import Answer, Seen, answer
from runner.simulator._server import SimStats, Simulator, serving
from runner.simulator._spec import BatchFaults, Behaviour, BoxBehaviour, Faults, SimSpec

__all__ = [
    "Answer",
    "BatchFaults",
    "Behaviour",
    "BoxBehaviour",
    "Faults",
    "LimiterKind",
    "Limits",
    "Seen",
    "SimSpec",
    "SimStats",
    "Simulator",
    "Verdict",
    "answer",
    "box_answer",
    "make_limiter",
    "serving",
]
