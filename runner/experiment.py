"""An experiment file (TOML): where the store and images are, the cohort, the backends with
their limits and prices, the configurations and the conditions and budgets they run.

::

    store = "paper.duckdb"              # paths are relative to this file
    images = "data/images/train2014"

    [cohort]                            # built into the store on the first run if absent
    root = "data"
    per_source = 500
    matched = 500

    [backends.qwen]                     # one Ray actor: one rate limit for all its configurations
    provider = "qwen"                   # decides the wire format and the default endpoint
    model = "qwen3-vl-plus"
    api_key_env = "DASHSCOPE_API_KEY"   # the key is read from this variable, never written here
    requests_per_minute = 600
    max_concurrency = 32
    prices = { input_per_mtok = 0.2, output_per_mtok = 1.6 }

    [[configurations]]
    name = "qwen-max"
    backend = "qwen"
    conditions = "all"                  # or a list of condition names
    decoding = { thinking = { mode = "on", effort = "max" } }

A box benchmark (PROTOCOL §10) runs on the same runner: ``[boxes]`` in place of ``[cohort]``
names the benchmark and its released file, each configuration names the coordinate convention
its model answers in, and the conditions are ``direct`` and ``cot``::

    store = "refbench.duckdb"
    images = "refbench/images"           # where its images are (or are written, if embedded)

    [boxes]
    benchmark = "refbench-pro"           # or "ref-adv", "groundingme"
    file = "refbench/annotations_test.jsonl"
    # reader = "groundingme"             # read the answers by another's code (default: its own)

    [[configurations]]
    name = "qwen"
    backend = "qwen"
    convention = "norm1000"              # norm999, norm1000, unit or pixels
    conditions = ["direct", "cot"]       # the default

A backend takes every field of :class:`conditions.Transport`: ``base_url`` (default: the
provider's endpoint), ``api_key_env``, ``requests_per_minute``, ``tokens_per_minute``,
``max_concurrency``, ``timeout_s``, ``max_transport_retries``, ``max_retry_time_s``,
``retry_backoff_s``, ``max_tokens_field``.
``base_url = "simulator"`` points a backend at the built-in simulator, which the run starts
(``[simulator]`` holds its :class:`SimSpec`): a dry run of the whole grid that costs nothing.

``provider = "openai-compatible"`` is a server of one's own (vLLM, SGLang, Ollama, LM Studio):
``base_url`` is required, no key is read unless ``api_key_env`` names one, and with no
``requests_per_minute`` only ``max_concurrency`` bounds it; it runs online only.

``mode = "batch"`` sends a backend's calls through its provider's batch API (OpenAI, DashScope,
Gemini, Anthropic) at ``prices.batch_rate`` of the online price (default 0.5), answers within the
provider's completion window (24 h); ``batch = { poll_s = 30, max_open = 50 }`` tunes it
(:class:`runner.batch.BatchSettings`)::

    [backends.qwen-batch]
    provider = "qwen"
    model = "qwen3-vl-plus"
    mode = "batch"
    prices = { input_per_mtok = 0.2, output_per_mtok = 1.6, batch_rate = 0.5 }
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal, Self
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PositiveInt,
    ValidationError,
    model_validator,
)

from conditions import (
    CONDITION_NAMES,
    REASONINGS,
    Benchmark,
    CohortSpec,
    Configuration,
    Decoding,
    Transport,
    one_line,
)
from runner._errors import ConfigError
from runner.backends import KEY_SHAPED, provider_named
from runner.batch import BatchSettings
from runner.simulator import SimSpec
from runner.store import Progress
from scoring import BOX_READERS, BUDGETS, Convention, ReaderName

SIMULATOR = "simulator"


def _usable(path: Path) -> Path:
    if "\x00" in str(path):  # the OS refuses it, and much later than this file is read
        raise ValueError("a path cannot hold a NUL character")
    return path


UsablePath = Annotated[Path, AfterValidator(_usable)]


class _Frozen(BaseModel):
    # No number of the file is inf or nan: a price of inf made an estimate of $inf and a
    # spend of $nan (0 tokens × inf), and passed every cap.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


# Far above any provider's price, and low enough that no sum of a run's costs overflows
# (1e308 $/Mtok is finite, but its cost of a million tokens is inf, and inf - inf is nan).
MAX_PRICE_PER_MTOK = 100_000.0
Price = Annotated[float, Field(ge=0.0, le=MAX_PRICE_PER_MTOK)]


class Prices(_Frozen):
    """US dollars per million tokens; reasoning tokens are billed as output. A batch's tokens
    cost ``batch_rate`` of the online price (OpenAI, DashScope, Gemini and Anthropic bill half)."""

    input_per_mtok: Price = 0.0
    output_per_mtok: Price = 0.0
    batch_rate: Annotated[float, Field(ge=0.0, le=1.0)] = 0.5

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6

    def batch_cost(self, input_tokens: int, output_tokens: int) -> float:
        return self.batch_rate * self.cost(input_tokens, output_tokens)

    def spent_on(self, progress: Progress) -> float:
        """The dollars of ``progress``'s stored answers: the tokens a batch brought at the batch
        price, the others at the online price."""
        online = self.cost(
            progress.input_tokens - progress.batch_input_tokens,
            progress.output_tokens - progress.batch_output_tokens,
        )
        return online + self.batch_cost(progress.batch_input_tokens, progress.batch_output_tokens)


class BackendSpec(Transport):
    """One account at one provider: the :class:`Transport` settings (endpoint ``base_url``,
    key variable ``api_key_env``, limits), plus the provider, the model and the prices."""

    provider: str
    model: str = Field(min_length=1)
    prices: Prices = Prices()
    # "batch": the provider's batch API, at its batch price (runner.batch); online: one call
    # at a time, as answers are wanted now.
    mode: Literal["online", "batch"] = "online"
    batch: BatchSettings = BatchSettings()

    @model_validator(mode="before")
    @classmethod
    def _provider_rate(cls, data: Any) -> Any:
        """A provider's own default request rate where the file sets none (a local server's
        is no bound: its GPUs are, through max_concurrency)."""
        if not isinstance(data, dict) or "requests_per_minute" in data:
            return data
        try:
            rate = provider_named(str(data.get("provider"))).default_requests_per_minute
        except ConfigError:
            return data  # named unknown by _known_provider, in one line
        return data if rate is None else {**data, "requests_per_minute": rate}

    @model_validator(mode="after")
    def _known_provider(self) -> Self:
        try:
            provider = provider_named(self.provider)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        if provider.base_url is None and self.base_url is None:
            raise ValueError(
                f"provider {self.provider} has no endpoint of its own: set base_url to the "
                'server\'s, e.g. base_url = "http://localhost:8000/v1"'
            )
        if self.mode == "batch" and provider.batch is None:
            raise ValueError(
                f"provider {self.provider} has no batch API that groundbench speaks (batch: "
                'openai, qwen, gemini, anthropic); set mode = "online"'
            )
        return self

    @model_validator(mode="after")
    def _no_secret_in_the_file(self) -> Self:
        if self.base_url is not None and not self.simulated:
            _check_endpoint(self.base_url)
        _no_key_shape("model", self.model)
        return self

    @property
    def simulated(self) -> bool:
        return self.base_url == SIMULATOR

    def transport(self, simulator_url: str | None = None) -> Transport:
        settings = self.model_dump(include=set(Transport.model_fields))
        if self.simulated:
            # Shaped as the provider's endpoint: Gemini's holds its API version (/v1beta), on
            # which the simulator tells Gemini's batch paths from OpenAI's.
            wire = provider_named(self.provider).wire
            version = "/v1beta" if wire == "gemini" and simulator_url is not None else ""
            settings["base_url"] = None if simulator_url is None else simulator_url + version
        return Transport.model_validate(settings)


class ConfigurationSpec(_Frozen):
    """A model as run on a backend: decoding, conditions, best-effort recovery."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    backend: str
    model: str | None = None  # default: the backend's
    decoding: Decoding = Decoding()
    # Default: ("base",) for GroundBench's grid, both reasoning settings for a box benchmark.
    conditions: tuple[str, ...] | Literal["all"] | None = None
    best_effort: bool = False
    convention: Convention | None = None  # a box benchmark's: how the model writes a box

    @model_validator(mode="after")
    def _no_secret_in_the_file(self) -> Self:
        if self.model is not None:
            _no_key_shape("model", self.model)
        return self


def _check_endpoint(url: str) -> None:
    """An endpoint is ``http(s)://host[:port][/path]``: nothing that carries a credential."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parses the port, raising on a bad one
    except ValueError as exc:
        raise ValueError(f"base_url is not a URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("base_url must be an http:// or https:// address with a host")
    if parts.username is not None or parts.password is not None:
        raise ValueError(
            "base_url holds credentials (user:password@); a key goes only in the environment "
            "variable named by api_key_env"
        )
    if parts.query or parts.fragment:
        raise ValueError(
            "base_url holds a query or fragment (?…, #…); a key goes only in the environment "
            "variable named by api_key_env, and groundbench adds each provider's path itself"
        )
    _no_key_shape("base_url", url)


def _no_key_shape(field: str, value: str) -> None:
    if KEY_SHAPED.search(value):
        raise ValueError(
            f"{field} holds what looks like an API key; a key goes only in the environment "
            "variable named by api_key_env"
        )


class CohortSection(_Frozen):
    """Where the cohort comes from when the store has none yet."""

    root: UsablePath | None = None  # a data root in the RefCOCO layout
    images: UsablePath | None = None  # default: ROOT/images/train2014
    seed: int = CohortSpec().seed
    per_source: PositiveInt = 500
    matched: PositiveInt = 500

    def spec(self) -> CohortSpec:
        return CohortSpec(seed=self.seed, per_source=self.per_source, matched=self.matched)


class BoxesSection(_Frozen):
    """A box benchmark in place of GroundBench's cohort: its released file, read into the store
    on the first run (images the file embeds are written to the experiment's ``images``)."""

    benchmark: Benchmark
    file: UsablePath
    # Whose released code reads the answers (PROTOCOL §10): the benchmark's own by default;
    # another's to compare readings, or "groundbench" (lenient: corners ordered, clipped). A
    # change re-scores the stored answers, sending nothing.
    reader: ReaderName | None = None

    @property
    def reading(self) -> ReaderName:
        return self.reader or self.benchmark


_BACKEND_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class Experiment(_Frozen):
    """A whole experiment file, paths resolved against the file's folder."""

    store: UsablePath
    images: UsablePath
    cohort: CohortSection = CohortSection()
    boxes: BoxesSection | None = None  # a box benchmark's experiment instead
    budgets: tuple[int, ...] = BUDGETS
    box: bool = True  # run the box question where the condition has one
    backends: dict[str, BackendSpec]
    configurations: tuple[ConfigurationSpec, ...] = Field(min_length=1)
    simulator: SimSpec = SimSpec()
    scorers: PositiveInt = 2  # scoring actors

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        for name in self.backends:  # names go into progress lines and actor names
            if not _BACKEND_NAME.fullmatch(name):
                raise ValueError(
                    f"backend name {name!r}: use letters, digits, '_', '.' and '-' only"
                )
        unknown_budgets = sorted(set(self.budgets) - set(BUDGETS))
        if unknown_budgets or not self.budgets:
            raise ValueError(f"budgets must be a non-empty subset of {list(BUDGETS)}")
        names = [c.name for c in self.configurations]
        if len(set(names)) != len(names):
            raise ValueError("a configuration name is used twice")
        if self.boxes is not None and self.cohort.root is not None:
            raise ValueError("[boxes] and a [cohort] root: one experiment runs one task")
        known = self.condition_names
        for c in self.configurations:
            unknown = sorted(set(self.conditions_of(c)) - set(known))
            if unknown:
                raise ValueError(
                    f"configuration {c.name}: unknown conditions {unknown}; "
                    f"known: {', '.join(known)}"
                )
            if self.boxes is not None and c.convention is None:
                raise ValueError(
                    f"configuration {c.name}: a box benchmark needs the coordinate convention "
                    "its model answers in: convention = norm999, norm1000, unit or pixels"
                )
            if self.boxes is None and c.convention is not None:
                raise ValueError(
                    f"configuration {c.name}: convention is a box benchmark's setting "
                    "(GroundBench's polygons are read in pixels, §4)"
                )
            if c.backend not in self.backends:
                raise ValueError(
                    f"configuration {c.name}: no backend {c.backend!r} "
                    f"(backends: {', '.join(self.backends) or 'none'})"
                )
        return self

    @property
    def simulated(self) -> bool:
        return any(b.simulated for b in self.backends.values())

    @property
    def simulator_key(self) -> str:
        """The key a simulated backend sends: the simulator's own (a real key never goes to
        the simulator)."""
        return self.simulator.api_key or "simulator"

    @property
    def condition_names(self) -> tuple[str, ...]:
        """The conditions this experiment's task has."""
        return REASONINGS if self.boxes is not None else CONDITION_NAMES

    def conditions_of(self, spec: ConfigurationSpec) -> tuple[str, ...]:
        """The conditions ``spec`` runs, its defaults applied."""
        if spec.conditions == "all":
            return self.condition_names
        if spec.conditions is None:
            return REASONINGS if self.boxes is not None else ("base",)
        return spec.conditions

    @property
    def conventions(self) -> dict[str, Convention]:
        """Each configuration's coordinate convention (a box benchmark's experiment)."""
        return {c.name: c.convention for c in self.configurations if c.convention is not None}

    def reading(self, configuration: str) -> str | None:
        """How a box benchmark's answers of ``configuration`` are read: the reader and the
        convention (what the store records; None for GroundBench's grid)."""
        convention = self.conventions.get(configuration)
        if self.boxes is None or convention is None:
            return None
        return f"{BOX_READERS[self.boxes.reading].label}, {convention}"

    def configuration(self, spec: ConfigurationSpec, simulator_url: str | None) -> Configuration:
        """``spec`` as the grid's :class:`Configuration` (transport from its backend)."""
        backend = self.backends[spec.backend]
        conditions = self.conditions_of(spec)
        try:
            return Configuration(
                name=spec.name,
                provider=backend.provider,
                model=spec.model or backend.model,
                decoding=spec.decoding,
                conditions=conditions,
                best_effort=spec.best_effort,
                transport=backend.transport(simulator_url),
            )
        except ValidationError as exc:
            raise ConfigError(f"configuration {spec.name}: {one_line(exc)}") from None

    def configurations_of(self, backend: str) -> tuple[ConfigurationSpec, ...]:
        return tuple(c for c in self.configurations if c.backend == backend)

    def spent_on(self, progress: Iterable[Progress]) -> float:
        """The dollars of these configurations' stored answers, each at its backend's prices
        (a configuration the experiment no longer has is not counted)."""
        backend_of = {c.name: c.backend for c in self.configurations}
        return sum(
            self.backends[backend_of[p.configuration]].prices.spent_on(p)
            for p in progress
            if p.configuration in backend_of
        )


def load_experiment(path: Path | str) -> Experiment:
    """Read an experiment file; relative paths are taken from the file's folder.

    Raises
    ------
    ConfigError
        The file is missing, is not TOML, or is not a valid experiment: one line naming the
        file, the field and what is wrong.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the experiment file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    try:
        experiment = Experiment.model_validate(_toml(path, text))
    except (ValidationError, RecursionError) as exc:
        raise ConfigError(f"{path}: {_nested_too_deep(exc) or one_line(exc)}") from None
    return _resolved(experiment, path.parent)


def _toml(path: Path, text: str) -> dict[str, Any]:
    """``text`` read as TOML, or one line naming ``path``: tomllib reads nesting by recursion
    (``a = [[[…]]]`` 100,000 deep is a RecursionError), and a number past Python's
    4,300-digit limit is a plain ValueError, not a TOMLDecodeError."""
    try:
        return tomllib.loads(text)
    except (ValueError, RecursionError) as exc:  # TOMLDecodeError is a ValueError
        raise ConfigError(
            f"{path}: not valid TOML: {_nested_too_deep(exc) or one_line(exc)}"
        ) from None


def _nested_too_deep(exc: Exception) -> str | None:
    if isinstance(exc, RecursionError):
        return "arrays or tables nested too deep to read; an experiment nests a few levels"
    return None


def _resolved(experiment: Experiment, base: Path) -> Experiment:
    def at(p: Path | None) -> Path | None:
        return None if p is None else (base / p).resolve()

    cohort = experiment.cohort.model_copy(
        update={"root": at(experiment.cohort.root), "images": at(experiment.cohort.images)}
    )
    boxes = experiment.boxes
    if boxes is not None:
        boxes = boxes.model_copy(update={"file": at(boxes.file)})
    return experiment.model_copy(
        update={
            "store": at(experiment.store),
            "images": at(experiment.images),
            "cohort": cohort,
            "boxes": boxes,
        }
    )
