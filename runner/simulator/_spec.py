"""What the simulator does: how its model behaves, and which faults its server injects.

Rates are probabilities per response. A call's answer is drawn from a generator seeded by the
spec's seed and the call: the client's request id when it sends one (the runner names each
attempt, the same on every retry and resend), else the request's content and how many times
that content was seen before. Faults are drawn apart, per arrival of the call, so a run with
faults ends with the answers of a run without them, and a stateless retry that the client
makes as a new attempt can still answer differently.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, PositiveFloat, PositiveInt

from runner.simulator._limiters import LimiterKind
from runner.simulator._profiles import ProfileName
from scoring import Convention

Probability = Annotated[float, Field(ge=0.0, le=1.0)]


class _Frozen(BaseModel):
    # Every number finite: a latency or turnaround of inf is a simulator that never answers.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class BoxBehaviour(_Frozen):
    """The simulated model on the box benchmarks (PROTOCOL §10): hosted models rarely say
    a described object is absent (the papers report rejection near 0%), and reasoning helps
    a little."""

    edge_noise: NonNegativeFloat = 0.08  # σ of each edge, as a fraction of the box's side
    wrong_object: Probability = 0.3  # boxes another region of the image
    hallucinate: Probability = 0.95  # on a rejection question, boxes something anyway
    hallucinate_thinking: Probability = 0.85  # the same with reasoning on
    false_absent: Probability = 0.02  # on a question with a target, says it is absent
    # The coordinates the simulated model writes (a configuration must name the same to be
    # read right): Qwen-style normalised 0–1000 by default.
    convention: Convention = "norm1000"


class Behaviour(_Frozen):
    """The simulated model: how well it outlines, and how the conditions move it."""

    vertex_noise: NonNegativeFloat = 0.05  # σ of each vertex, as a fraction of √(box area)
    distractor: Probability = 0.12  # outlines a same-category other
    wrong_count: Probability = 0.04  # N ± 1–2 vertices
    duplicate: Probability = 0.03  # one vertex repeated
    self_intersection: Probability = 0.05  # two vertices swapped
    decimals: Probability = 0.02  # coordinates with a fraction
    refusal: Probability = 0.02  # no list at all
    prose: Probability = 0.4  # sentences around a bracketed list
    # Conditions: what they do to the answer.
    half_res_noise: PositiveFloat = 1.8  # noise factor at half resolution
    greyscale_colour_confusion: Probability = 0.35  # colour words, grey
    wrong_cue_follow: Probability = 0.45  # misled by a wrong hint
    true_cue_help: Probability = 0.5  # distractor rate cut by a hint
    thinking_noise: PositiveFloat = 0.85  # noise factor with reasoning on (off: its inverse)
    temperature_noise: NonNegativeFloat = 0.25  # noise grows by this per unit of temperature
    boxes: BoxBehaviour = BoxBehaviour()


class Faults(_Frozen):
    """What the server does wrong on purpose."""

    requests_per_minute: PositiveFloat | None = None  # None: no rate limit
    requests_per_second: PositiveFloat | None = None  # a second limit, of the same kind
    # How the server counts (PROTOCOL-free: the providers differ): a token bucket, a sliding
    # 60 s window, or a fixed window reset on the minute. See runner.simulator._limiters.
    limiter: LimiterKind = "token-bucket"
    burst: PositiveInt | None = None  # bucket size; default: one second's requests (≥ 1)
    retry_after: Literal["seconds", "ms", "none"] = "seconds"  # how a 429 says when to retry
    ratelimit_headers: bool = True  # send x-ratelimit-limit/remaining/reset-requests
    quota_after: int | None = Field(default=None, ge=0)  # answer K calls, then quota errors
    server_error: Probability = 0.0  # 500 / 503
    overloaded: Probability = 0.0  # 429 engine_overloaded (OpenAI) / 503 UNAVAILABLE (Gemini)
    reset: Probability = 0.0  # connection dropped before any response
    malformed: Probability = 0.0  # 200 with a body that is not JSON
    truncated: Probability = 0.0  # 200 whose body stops half way
    # 200 with a body of 1 MB of "[": JSON nested past any reader's depth (issue 37: it raised
    # RecursionError out of the decoder and ended the whole run)
    deep: Probability = 0.0
    latency_s: tuple[NonNegativeFloat, NonNegativeFloat] = (0.0, 0.0)  # uniform between


class BatchFaults(_Frozen):
    """How the simulator's batch endpoints behave: OpenAI's files and batches (which DashScope
    copies), Gemini's ``batchGenerateContent`` and Anthropic's Message Batches (whose create body
    ``max_requests`` and ``max_file_bytes`` bound as an input file's). Lines are answered as the
    online endpoint answers the same call (its custom id or key), so a grid run in batch mode
    scores as online.

    Per-line draws are seeded by the spec's seed and the line's id, so they repeat across runs.
    """

    turnaround_s: NonNegativeFloat = 1.0  # from creation until the batch has ended
    line_error: Probability = 0.0  # a line answered with a server error (500), not an answer
    malformed_line: Probability = 0.0  # a result line cut short: not JSON
    expire_first: int = Field(default=0, ge=0)  # the first K batches created expire ...
    expired_share: Probability = 0.5  # ... having answered this share of their lines
    fail_first: int = Field(default=0, ge=0)  # the first K batches fail, answering nothing
    quota_after_batches: int | None = Field(default=None, ge=0)  # then creating one: quota error
    max_requests: PositiveInt = 50_000  # lines per input file; more is refused (400)
    # Bytes per uploaded file; more is refused. The default is the largest a provider documents
    # (Gemini's 2 GB; DashScope 500 MB, OpenAI 200 MB): set one's to test against it.
    max_file_bytes: PositiveInt = 2 * 1024**3


class SimSpec(_Frozen):
    """A simulator: seed, behaviour, faults, the key it accepts (None: any key) and the models
    it serves (None: any model; another is answered 404, as the providers answer a model they
    do not know).

    ``profile`` names per-model behaviour (:mod:`runner.simulator._profiles`): ``paper`` makes
    the paper's four configurations' models reproduce its §4 effects, with common random
    numbers; a model the profile does not name, and every model under ``default``, answers by
    ``behaviour``."""

    seed: int = 0
    profile: ProfileName = "default"
    behaviour: Behaviour = Behaviour()
    faults: Faults = Faults()
    batch: BatchFaults = BatchFaults()
    api_key: str | None = None
    models: tuple[str, ...] | None = None
    # Take calls that carry no key, as a local server (vLLM, Ollama) does: a key, when one
    # is sent, must still be the right one.
    keyless: bool = False
