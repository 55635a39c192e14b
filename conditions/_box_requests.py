"""The requests of a box benchmark (PROTOCOL §10): one call per configuration, reasoning
setting and question, asked as the benchmark's released code asks it.

The grid of a box experiment has two conditions, :data:`REASONINGS`: ``direct`` (thinking
off) and ``cot`` (thinking on — the configuration's own thinking when it has one, else the
provider's default; Ref-Adv's think-first prompt besides). Every request is a box question
(budget :data:`BOX`) with one attempt, as the benchmarks ask once; its reader is the
benchmark's own. The full image (§9) is sent.

The runner reaches these through :class:`~conditions.BoxTask` (``conditions._task``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from conditions._box_prompts import BOX_BENCHMARK_PROMPTS, Reasoning, box_benchmark_prompt
from conditions._box_set import BoxSet
from conditions._boxsets import Benchmark
from conditions._grid import REASONINGS, Configuration, Decoding, Thinking
from conditions._images import MAX_SIDE, VariantCache
from conditions._requests import BOX, BuilderBase, Request, RequestKey, fields_hash

BOX_PROTOCOL_VERSION = 1
BOX_ATTEMPTS = 1  # the benchmarks ask once


def reasoning_decoding(reasoning: Reasoning, base: Decoding) -> Decoding:
    """``base`` with thinking off (``direct``) or on (``cot``: ``base``'s own when it is on)."""
    if reasoning == "direct":
        thinking = Thinking(mode="off")
    else:
        thinking = base.thinking if base.thinking.mode == "on" else Thinking(mode="on")
    return base.model_copy(update={"thinking": thinking})


def box_protocol_fields(
    benchmark: Benchmark, questions_hash: str, configuration: Configuration
) -> dict[str, object]:
    """What decides a box benchmark's answers: the questions, the benchmark's prompts, the
    reasoning settings, the image cap and the configuration's output settings (what
    :func:`box_protocol_hash` hashes, and a store keeps beside the hash)."""
    return {
        "box_protocol_version": BOX_PROTOCOL_VERSION,
        "questions": questions_hash,
        "prompts": BOX_BENCHMARK_PROMPTS[benchmark],
        "reasonings": {
            r: reasoning_decoding(r, configuration.decoding).model_dump(mode="json")
            for r in REASONINGS
        },
        "max_side": MAX_SIDE,
        "configuration": configuration.output_settings(),
    }


def box_protocol_hash(questions: BoxSet, configuration: Configuration) -> str:
    """sha256 of :func:`box_protocol_fields`."""
    return fields_hash(box_protocol_fields(questions.benchmark, questions.hash, configuration))


def plan_boxes(questions: BoxSet, configurations: Iterable[Configuration]) -> Iterator[RequestKey]:
    """Every request of a box experiment: configuration by reasoning setting by question."""
    for configuration in configurations:
        for reasoning in configuration.conditions:
            for q in questions.questions:
                yield RequestKey(
                    configuration=configuration.name, condition=reasoning, budget=BOX, qid=q.qid
                )


class BoxRequestBuilder(BuilderBase):
    """Builds the :class:`Request` of a box benchmark's question, each image read once."""

    def __init__(self, questions: BoxSet, images: Path | str, cache: VariantCache) -> None:
        super().__init__(images, cache)
        self.questions = questions

    def _protocol_hash(self, configuration: Configuration) -> str:
        return box_protocol_hash(self.questions, configuration)

    def build(self, key: RequestKey, configuration: Configuration) -> Request:
        """The request ``key`` of ``configuration``: the benchmark's prompt, the full image.

        Raises
        ------
        KeyError
            ``key`` names another configuration, a reasoning setting that is not one of
            :data:`REASONINGS`, or a question the set does not have.
        DataFileError
            The question's image is missing or changed since the set was stored.
        """
        self._refuse_another(key, configuration)
        reasoning = reasoning_named(key.condition)
        q = self.questions.question(key.qid)
        assert q.image_sha256 is not None  # a BoxSet binds every image
        image = self.cache.get(self.images / q.image_file, q.image_sha256, "full")
        return Request(
            key=key,
            protocol=self._protocol(configuration),
            prompt=box_benchmark_prompt(self.questions.benchmark, q.expression, reasoning),
            image=image,
            decoding=reasoning_decoding(reasoning, configuration.decoding),
            replicate=0,
            attempts=BOX_ATTEMPTS,
            parsing=self.questions.benchmark,
        )


def reasoning_named(condition: str) -> Reasoning:
    """The box condition called ``condition``.

    Raises
    ------
    KeyError
        It is not one of :data:`REASONINGS`.
    """
    for r in REASONINGS:
        if r == condition:
            return r
    raise KeyError(f"unknown box condition {condition!r}; known: {', '.join(REASONINGS)}")
