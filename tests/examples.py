"""How many examples a property test draws: the profile's count (tests/conftest.py), scaled.

Most laws take the profile's count as it is and pass no ``max_examples``. A law that found a
bug only with more examples draws a multiple, and one whose every example is costly (a
rasterisation, a DuckDB file) a fraction; each says why beside its ``@settings``. Scaling the
profile rather than naming a count keeps ``GROUNDBENCH_HYPOTHESIS=thorough`` thorough for
every law.
"""

from __future__ import annotations

from hypothesis import settings


def scaled(times: float) -> int:
    """The loaded profile's ``max_examples`` times ``times``, at least one.

    Read when the test module is imported, after tests/conftest.py has loaded the profile.
    """
    return max(1, round(times * settings().max_examples))
