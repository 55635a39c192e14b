"""The 13 conditions, the configurations, the requests they make and the protocol hash."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from pydantic import ValidationError

from conditions import (
    BOX,
    BOX_CONDITIONS,
    CONDITION_NAMES,
    CONDITIONS,
    PAPER_CONFIGURATIONS,
    Cohort,
    Configuration,
    Decoding,
    ProtocolMismatchError,
    Request,
    RequestBuilder,
    RequestKey,
    Thinking,
    Transport,
    VariantCache,
    ensure_same_protocol,
    plan,
    protocol_hash,
)

QWEN = next(c for c in PAPER_CONFIGURATIONS if c.name == "qwen-max")

# PROTOCOL §9: what each condition changes relative to base, and nothing else.
CHANGES: dict[str, set[str]] = {
    "base": set(),
    "thinking-off": {"thinking"},
    "thinking-budget": {"thinking"},
    "no-image": {"image"},
    "half-res": {"image"},
    "greyscale": {"image"},
    "cue-spatial-true": {"prompt"},
    "cue-spatial-wrong": {"prompt"},
    "cue-colour-true": {"prompt"},
    "cue-colour-wrong": {"prompt"},
    "cue-both-wrong": {"prompt"},
    "temperature": {"temperature"},
    "repeat": {"replicate"},
}


@pytest.fixture
def builder(real_cohort: Cohort, shared_data: Path, tmp_path: Path) -> RequestBuilder:
    return RequestBuilder(real_cohort, shared_data / "coco-000000039769", VariantCache(tmp_path))


def request(builder: RequestBuilder, condition: str, budget: int = 16) -> Request:
    qid = builder.cohort.questions[0].qid
    return builder.build(
        RequestKey(configuration=QWEN.name, condition=condition, budget=budget, qid=qid), QWEN
    )


def changed(a: Request, b: Request) -> set[str]:
    out = set()
    if a.prompt != b.prompt:
        out.add("prompt")
    if (a.image and a.image.sha256) != (b.image and b.image.sha256):
        out.add("image")
    if a.decoding.thinking != b.decoding.thinking:
        out.add("thinking")
    if a.decoding.temperature != b.decoding.temperature:
        out.add("temperature")
    if a.decoding.max_output_tokens != b.decoding.max_output_tokens:
        out.add("max_output_tokens")
    if a.replicate != b.replicate:
        out.add("replicate")
    return out


def test_the_grid_is_the_thirteen_conditions_in_order() -> None:
    assert [c.number for c in CONDITIONS] == list(range(1, 14))
    assert set(CHANGES) == set(CONDITION_NAMES)
    matched = {c.name for c in CONDITIONS if c.subset == "matched"}
    assert matched == {"no-image", "half-res", "greyscale"}


@pytest.mark.parametrize("condition", CONDITION_NAMES)
def test_each_condition_changes_exactly_what_protocol_9_says(
    builder: RequestBuilder, condition: str
) -> None:
    assert changed(request(builder, "base"), request(builder, condition)) == CHANGES[condition]


def test_the_base_request_sends_the_image_bytes_untouched(
    builder: RequestBuilder, shared_data: Path
) -> None:
    base = request(builder, "base")
    assert base.image is not None
    assert base.image.data == (shared_data / "coco-000000039769" / "000000039769.png").read_bytes()
    assert "exactly 16 vertices" in base.prompt and "32 integers" in base.prompt
    assert base.decoding.thinking == Thinking(mode="on", effort="max")


def test_no_image_has_no_image_part_and_the_same_text(builder: RequestBuilder) -> None:
    none = request(builder, "no-image")
    assert none.image is None
    assert none.prompt == request(builder, "base").prompt


def test_greyscale_has_equal_channels(builder: RequestBuilder) -> None:
    grey = request(builder, "greyscale").image
    assert grey is not None
    pixels = np.asarray(Image.open(io.BytesIO(grey.data)).convert("RGB"), dtype=np.int16)
    assert (pixels[..., 0] == pixels[..., 1]).all() and (pixels[..., 1] == pixels[..., 2]).all()
    assert pixels.std() > 10  # an image, not a blank


def test_half_resolution_halves_the_longest_side(builder: RequestBuilder) -> None:
    full, half = request(builder, "base").image, request(builder, "half-res").image
    assert full is not None and half is not None
    assert (half.width, half.height) == (full.width // 2, full.height // 2) == (320, 240)
    assert Image.open(io.BytesIO(half.data)).size == (320, 240)


@pytest.mark.parametrize(
    ("true", "wrong"),
    [("cue-spatial-true", "cue-spatial-wrong"), ("cue-colour-true", "cue-colour-wrong")],
)
def test_a_wrong_cue_differs_from_the_true_one(
    builder: RequestBuilder, true: str, wrong: str
) -> None:
    base = request(builder, "base").prompt
    right, bad = request(builder, true).prompt, request(builder, wrong).prompt
    assert right.startswith(base) and bad.startswith(base)
    assert right != bad


def test_the_hints_name_the_frozen_terms(builder: RequestBuilder) -> None:
    both = request(builder, "cue-both-wrong").prompt.splitlines()[-1]
    assert (
        both
        == "Hint: the object is in the lower right of the image. Hint: the object is mostly blue."
    )
    assert request(builder, "cue-spatial-true").prompt.endswith("in the upper left of the image.")
    assert request(builder, "cue-colour-true").prompt.endswith("mostly white.")


def test_the_box_question_asks_for_four_integers(builder: RequestBuilder) -> None:
    box = request(builder, "base", BOX)
    assert "4 integers" in box.prompt and "vertices" not in box.prompt


def test_each_image_variant_is_made_once(builder: RequestBuilder, tmp_path: Path) -> None:
    for _ in range(3):
        request(builder, "half-res")
        request(builder, "greyscale", 64)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == 2 and all(not f.startswith(".tmp") for f in files)
    # A fresh cache over the same folder reads them instead of making them again.
    again = RequestBuilder(builder.cohort, builder.images, VariantCache(tmp_path, memory=1))
    for _ in range(2):
        assert request(again, "half-res").image == request(builder, "half-res").image
        assert request(again, "base").image == request(builder, "base").image
    assert len(list(tmp_path.iterdir())) == 2


def test_requests_for_another_configuration_are_refused(builder: RequestBuilder) -> None:
    key = RequestKey(
        configuration="gemini-high", condition="base", budget=8, qid=builder.cohort.questions[0].qid
    )
    with pytest.raises(KeyError, match="gemini-high"):
        builder.build(key, QWEN)


# Configurations


def test_configurations_refuse_unknown_or_repeated_conditions_and_extra_fields() -> None:
    with pytest.raises(ValidationError, match="unknown conditions"):
        Configuration(name="x", provider="p", model="m", conditions=("base", "typo"))
    with pytest.raises(ValidationError, match="listed twice"):
        Configuration(name="x", provider="p", model="m", conditions=("base", "base"))
    with pytest.raises(ValidationError, match="Extra inputs"):
        Configuration.model_validate({"name": "x", "provider": "p", "model": "m", "seed": 1})
    with pytest.raises(ValidationError, match="change nothing"):
        Configuration(name="x", provider="p", model="m", decoding=Decoding(temperature=1.0),
                      conditions=("base", "temperature"))  # fmt: skip
    with pytest.raises(ValidationError, match="takes no effort"):
        Thinking(mode="off", effort="high")


def test_the_paper_configurations_run_the_paper_grid() -> None:
    runs = {c.name: set(c.conditions) for c in PAPER_CONFIGURATIONS}
    assert runs["qwen-max"] == set(CONDITION_NAMES)
    assert runs["gemini-high"] == {"base", "no-image", "half-res", "greyscale"}
    assert runs["doubao"] == runs["kimi"] == {"base"}


# The protocol hash


def test_the_protocol_hash_covers_output_settings_and_not_transport() -> None:
    h = protocol_hash("c" * 64, QWEN)
    same = [
        QWEN.model_copy(update={"transport": Transport(max_concurrency=1, requests_per_minute=5)}),
        QWEN.model_copy(update={"name": "renamed", "conditions": ("base",)}),
    ]
    different = [
        QWEN.model_copy(update={"model": "qwen3-vl-max"}),
        QWEN.model_copy(update={"decoding": Decoding(temperature=0.3)}),
        QWEN.model_copy(update={"decoding": Decoding(max_output_tokens=1280)}),
    ]
    assert all(protocol_hash("c" * 64, c) == h for c in same)
    assert len({h, *(protocol_hash("c" * 64, c) for c in different)}) == 4
    assert protocol_hash("d" * 64, QWEN) != h


def test_results_under_another_protocol_are_refused() -> None:
    ensure_same_protocol("a" * 64, "a" * 64, "store")
    with pytest.raises(ProtocolMismatchError, match="store: results were made under protocol bbbb"):
        ensure_same_protocol("a" * 64, "b" * 64, "store")


# The plan


def test_a_plan_may_run_fewer_budgets_and_no_box(real_cohort: Cohort) -> None:
    qwen = next(c for c in PAPER_CONFIGURATIONS if c.name == "qwen-max")
    keys = list(plan(real_cohort, [qwen], budgets=(64, 8), box=False))
    assert {k.budget for k in keys} == {8, 64}
    with_box = list(plan(real_cohort, [qwen], budgets=(8,)))
    assert {k.budget for k in with_box} == {8, BOX}
    assert {k.condition for k in with_box if k.budget == BOX} == set(BOX_CONDITIONS)


def test_the_plan_of_a_one_question_cohort(real_cohort: Cohort) -> None:
    counts = Counter(k.configuration for k in plan(real_cohort, PAPER_CONFIGURATIONS))
    # qwen: 13 conditions x 5 budgets, plus the box in base and thinking-off.
    assert counts == {"doubao": 6, "kimi": 6, "qwen-max": 13 * 5 + 2, "gemini-high": 6 + 3 * 5}
