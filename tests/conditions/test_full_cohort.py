"""The full 1,500-question cohort from the default synthetic data (PROTOCOL §8), and the paper's
grid over it. In one file: the cohort takes ~25 s to build, and the suite's workers each take
whole files (``pytest -n 2 --dist loadfile``), so two files would build it twice.
"""

from __future__ import annotations

from collections import Counter

import pytest

from conditions import PAPER_CONFIGURATIONS, Cohort, plan
from scoring import BUDGETS, PHASES


@pytest.mark.slow
def test_a_full_cohort_builds_from_synthetic_data(full_cohort: Cohort) -> None:
    cohort = full_cohort
    assert [r.selected for r in cohort.reports] == [500, 500, 500]
    assert len({q.image_id for q in cohort.questions}) == 1500
    assert Counter(q.source for q in cohort.questions if q.matched) == {
        "refcoco": 167, "refcoco+": 167, "refcocog": 166,
    }  # fmt: skip
    assert len(cohort.targets) == 1500 * len(BUDGETS) * PHASES
    assert {q.d_bin for q in cohort.questions} == {"D1", "D2", "D3+"}
    assert {q.difficulty for q in cohort.questions} == {"easy", "medium", "hard"}
    assert len({q.group for q in cohort.questions}) == 6
    # Fidelity rises with N, as on real COCO contours (PROTOCOL §2).
    assert [cohort.fidelity[n] for n in BUDGETS] == sorted(cohort.fidelity[n] for n in BUDGETS)


@pytest.mark.slow
def test_the_paper_grid_on_a_full_cohort_is_120000_calls(full_cohort: Cohort) -> None:
    keys = list(plan(full_cohort, PAPER_CONFIGURATIONS))
    assert len(keys) == len(set(keys)) == 120_000
    assert sum(k.is_box for k in keys) == 7_500
    per_condition = Counter(k.condition for k in keys if k.configuration == "qwen-max")
    assert per_condition["no-image"] == 500 * 5
    assert per_condition["base"] == 1500 * 6
