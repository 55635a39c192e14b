"""A local stand-in for the providers' APIs: the three wire formats and their batch APIs
(OpenAI's files and batches, Gemini's batchGenerateContent, Anthropic's Message Batches),
answers from a cohort.

For users, a dry run of a grid before paying for it (``groundbench simulate``); for the tests
and benchmarks, a server on loopback with behaviour profiles and fault injection.
"""

from runner.simulator._boxes import box_answer
from runner.simulator._limiters import LimiterKind, Limits, Verdict, make_limiter
from runner.simulator._model import Answer, Seen, answer
from runner.simulator._profiles import PROFILES, Effects, Hardness, Profile, ProfileName, Tracing
from runner.simulator._server import SimStats, Simulator, serving
from runner.simulator._spec import BatchFaults, Behaviour, BoxBehaviour, Faults, SimSpec
from runner.simulator._traced import profile_answer

__all__ = [
    "PROFILES",
    "Answer",
    "BatchFaults",
    "Behaviour",
    "BoxBehaviour",
    "Effects",
    "Faults",
    "Hardness",
    "LimiterKind",
    "Limits",
    "Profile",
    "ProfileName",
    "Seen",
    "SimSpec",
    "SimStats",
    "Simulator",
    "Tracing",
    "Verdict",
    "answer",
    "box_answer",
    "make_limiter",
    "profile_answer",
    "serving",
]
