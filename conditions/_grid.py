"""The frozen 13-condition grid and the configurations that run it (PROTOCOL §9).

A :class:`Configuration` is a hosted model with provider-neutral :class:`Decoding` settings that
the backends map to each API, plus :class:`Transport` settings that never change an answer. A
:class:`Condition` says what one cell of the grid changes relative to the configuration's own
settings: the decoding, the image variant, the hints, the question subset, or only the replicate.
"""

from __future__ import annotations

from typing import Annotated, Literal, Self, get_args

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, model_validator

from conditions._box_prompts import Reasoning
from conditions._images import Variant

Subset = Literal["all", "matched"]
Cue = Literal["spatial-true", "spatial-wrong", "colour-true", "colour-wrong"]
Effort = Literal["low", "medium", "high", "max"]

# (decided) condition 3's reduced reasoning budget and condition 12's temperature.
REDUCED_THINKING_BUDGET = 4096
ALTERNATE_TEMPERATURE = 1.0


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


DAY_S = 86_400.0
# Sane ranges for transport numbers: a typo (1e-300, inf) is refused when the file is read,
# not found as a run that waits for ever. A rate below one call a day is such a typo.
Rate = Annotated[float, Field(ge=1 / 1440, le=1e9, allow_inf_nan=False)]
Seconds = Annotated[float, Field(gt=0, le=DAY_S, allow_inf_nan=False)]


class Thinking(_Frozen):
    """Reasoning, provider-neutral: off, or on at an effort level and/or a token budget.

    ``on`` with neither effort nor budget means the provider's default; backends map ``effort``
    to the API's level and ``budget_tokens`` to its budget field.
    """

    mode: Literal["off", "on"] = "on"
    effort: Effort | None = None
    budget_tokens: PositiveInt | None = None

    @model_validator(mode="after")
    def _off_means_off(self) -> Self:
        if self.mode == "off" and (self.effort is not None or self.budget_tokens is not None):
            raise ValueError("thinking mode 'off' takes no effort or budget")
        return self


class Decoding(_Frozen):
    """Every setting that changes what the model writes; all of it enters the protocol hash."""

    thinking: Thinking = Thinking()
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)  # None: provider default
    max_output_tokens: PositiveInt = 32768


class Transport(_Frozen):
    """How requests travel; none of it changes an answer, so none of it is hashed.

    ``base_url`` overrides the provider's endpoint (the simulator, a proxy, another region);
    ``api_key_env`` names the environment variable that holds the key (default: the
    provider's usual one); the key itself is never written in a configuration.
    """

    base_url: str | None = None
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    requests_per_minute: Rate = 60.0
    # A per-second request limit, where the provider sets one besides the per-minute one.
    requests_per_second: Rate | None = None
    tokens_per_minute: Annotated[float, Field(ge=1, le=1e12, allow_inf_nan=False)] | None = None
    max_concurrency: int = Field(default=8, ge=1, le=10_000)
    timeout_s: Seconds = 300.0
    max_transport_retries: int = Field(default=8, ge=0, le=1000)
    max_retry_time_s: Seconds = 900.0
    # Full-jitter exponential backoff between transport retries: retry k = 1, 2, … waits a time
    # up to retry_backoff_s · 2^(k-1) (at most 30 s) unless the server said how long to wait.
    retry_backoff_s: Annotated[float, Field(gt=0, le=60, allow_inf_nan=False)] = 0.5
    # A response body longer than this is an error, read no further and never parsed: a model
    # that loops must not take gigabytes of memory in the backend and scoring actors.
    max_response_bytes: int = Field(default=4 << 20, ge=1 << 10, le=1 << 30)
    # The field an OpenAI-compatible request carries the output allowance in (default: the
    # provider's): a server of one's own may read only one of the two.
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] | None = None


class Condition(_Frozen):
    """One of the 13 frozen conditions: what it changes relative to ``base``."""

    number: int = Field(ge=1, le=13)
    name: str
    description: str
    subset: Subset = "all"
    image: Variant = "full"
    cues: tuple[Cue, ...] = ()
    thinking: Thinking | None = None
    temperature: float | None = None
    replicate: int = 0

    def decoding(self, base: Decoding) -> Decoding:
        """``base`` with this condition's overrides applied."""
        update: dict[str, object] = {}
        if self.thinking is not None:
            update["thinking"] = self.thinking
        if self.temperature is not None:
            update["temperature"] = self.temperature
        return base.model_copy(update=update)


CONDITIONS: tuple[Condition, ...] = (
    Condition(number=1, name="base", description="the configuration's own settings"),
    Condition(number=2, name="thinking-off", description="reasoning disabled",
              thinking=Thinking(mode="off")),
    Condition(number=3, name="thinking-budget", description="reasoning on, reduced budget",
              thinking=Thinking(mode="on", budget_tokens=REDUCED_THINKING_BUDGET)),
    Condition(number=4, name="no-image", description="no image part; the text is unchanged",
              subset="matched", image="none"),
    Condition(number=5, name="half-res", description="image at half the longest side",
              subset="matched", image="half"),
    Condition(number=6, name="greyscale", description="image as luminance",
              subset="matched", image="grey"),
    Condition(number=7, name="cue-spatial-true", description="hint: the true coarse location",
              cues=("spatial-true",)),
    Condition(number=8, name="cue-spatial-wrong", description="hint: a wrong location",
              cues=("spatial-wrong",)),
    Condition(number=9, name="cue-colour-true", description="hint: the true dominant colour",
              cues=("colour-true",)),
    Condition(number=10, name="cue-colour-wrong", description="hint: a wrong colour",
              cues=("colour-wrong",)),
    Condition(number=11, name="cue-both-wrong", description="both wrong hints",
              cues=("spatial-wrong", "colour-wrong")),
    Condition(number=12, name="temperature", description="a different decoding temperature",
              temperature=ALTERNATE_TEMPERATURE),
    Condition(number=13, name="repeat", description="base again, an independent replicate",
              replicate=1),
)  # fmt: skip
CONDITION_NAMES: tuple[str, ...] = tuple(c.name for c in CONDITIONS)
# A box benchmark's two conditions (§10): without and with reasoning.
REASONINGS: tuple[Reasoning, ...] = get_args(Reasoning)
# (decided) The box baseline runs in the main table's cells: every configuration's base, and
# thinking-off (the paper's "Qwen-off" configuration). With the paper's configurations this gives
# 112,500 polygon and 7,500 box calls: the paper's "about 120,000".
BOX_CONDITIONS: tuple[str, ...] = ("base", "thinking-off")


def condition_named(name: str) -> Condition:
    """The frozen :class:`Condition` called ``name``."""
    for condition in CONDITIONS:
        if condition.name == name:
            return condition
    raise KeyError(f"unknown condition {name!r}; known: {', '.join(CONDITION_NAMES)}")


class Configuration(_Frozen):
    """A hosted model as run: provider, model, its decoding, the conditions it runs, transport."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    provider: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    model: str = Field(min_length=1)
    decoding: Decoding = Decoding()
    conditions: tuple[str, ...] = ("base",)
    best_effort: bool = False  # authorises one recovery attempt (attempt 3), diagnostics only
    transport: Transport = Transport()

    @model_validator(mode="after")
    def _known_conditions(self) -> Self:
        # The polygon grid's conditions, or a box benchmark's reasoning settings (§10).
        known = REASONINGS if set(self.conditions) & set(REASONINGS) else CONDITION_NAMES
        unknown = [c for c in self.conditions if c not in known]
        if unknown:
            raise ValueError(f"unknown conditions {unknown}; known: {', '.join(known)}")
        if len(set(self.conditions)) != len(self.conditions):
            raise ValueError("a condition is listed twice")
        if "temperature" in self.conditions and self.decoding.temperature == ALTERNATE_TEMPERATURE:
            raise ValueError(
                f"condition 'temperature' sets {ALTERNATE_TEMPERATURE}, which is this "
                "configuration's own temperature: the condition would change nothing"
            )
        return self

    def output_settings(self) -> dict[str, object]:
        """The fields that change the model's output: what the protocol hash covers."""
        return self.model_dump(mode="json", include={"provider", "model", "decoding"})


# The paper's main configurations (§4.1). The paper names no model snapshot: these identifiers
# are each provider's current vision model, and a user pins theirs in a configuration file.
# "Gemini-high" is a thinking level, which only Gemini 3 models take (2.5 takes a budget).
_ALL = CONDITION_NAMES
PAPER_CONFIGURATIONS: tuple[Configuration, ...] = (
    Configuration(name="doubao", provider="doubao", model="doubao-seed-1-6-vision-250815"),
    Configuration(name="kimi", provider="kimi", model="kimi-k2.6"),
    Configuration(name="qwen-max", provider="qwen", model="qwen3-vl-plus",
                  decoding=Decoding(thinking=Thinking(mode="on", effort="max")),
                  conditions=_ALL),
    Configuration(name="gemini-high", provider="gemini", model="gemini-3-pro-preview",
                  decoding=Decoding(thinking=Thinking(mode="on", effort="high")),
                  conditions=("base", "no-image", "half-res", "greyscale"), best_effort=True),
)  # fmt: skip
