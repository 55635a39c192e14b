"""Experiment files: what they hold, how paths resolve, and one clear line when they are wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conditions import CONDITION_NAMES, BoxSet, DataRoot, generate_box_benchmark
from runner._errors import ConfigError
from runner.experiment import load_experiment
from runner.store import Progress

GOOD = """
store = "runs/paper.duckdb"
images = "data/images/train2014"
budgets = [8, 64]

[cohort]
root = "data"
per_source = 20

[backends.qwen]
provider = "qwen"
model = "qwen3-vl-plus"
api_key_env = "MY_QWEN_KEY"
requests_per_minute = 600
max_concurrency = 32
prices = { input_per_mtok = 0.2, output_per_mtok = 1.6 }

[backends.sim]
provider = "gemini"
model = "gemini-3-pro-preview"
base_url = "simulator"

[[configurations]]
name = "qwen-max"
backend = "qwen"
conditions = "all"
decoding = { thinking = { mode = "on", effort = "max" } }

[[configurations]]
name = "gemini-high"
backend = "sim"
best_effort = true
"""


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "exp" / "experiment.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def test_a_good_file_resolves_paths_against_its_folder(tmp_path: Path) -> None:
    experiment = load_experiment(_file(tmp_path, GOOD))
    assert experiment.store == (tmp_path / "exp" / "runs" / "paper.duckdb").resolve()
    assert experiment.cohort.root == (tmp_path / "exp" / "data").resolve()
    assert experiment.budgets == (8, 64) and experiment.simulated
    qwen = experiment.configuration(experiment.configurations[0], None)
    assert qwen.conditions == CONDITION_NAMES and qwen.decoding.thinking.effort == "max"
    assert qwen.transport.api_key_env == "MY_QWEN_KEY"
    assert qwen.transport.requests_per_minute == 600 and qwen.transport.max_concurrency == 32
    gemini = experiment.configuration(experiment.configurations[1], "http://127.0.0.1:5")
    # Shaped as Gemini's endpoint: the simulator tells its batch paths by the version.
    assert gemini.transport.base_url == "http://127.0.0.1:5/v1beta" and gemini.best_effort
    assert experiment.backends["qwen"].prices.cost(1_000_000, 500_000) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("budgets = [8, 64]", "budgets = [8, 12]"), "budgets must be a non-empty subset"),
        (('provider = "qwen"', 'provider = "acme"'), "backends.qwen: unknown provider"),
        (('backend = "sim"', 'backend = "nope"'), "configuration gemini-high: no backend 'nope'"),
        (("max_concurrency = 32", "max_concurrency = 0"), "backends.qwen.max_concurrency: "),
        (('api_key_env = "MY_QWEN_KEY"', 'api_key = "sk-123"'), "backends.qwen.api_key: Extra"),
        (("per_source = 20", "per_source = 20\nper_sauce = 1"), "cohort.per_sauce: Extra"),
        (('store = "runs/paper.duckdb"', 'store = "x" = 1'), "not valid TOML"),
        (('root = "data"', 'root = "da\\u0000ta"'), "cohort.root: a path cannot hold a NUL"),
        # Numbers out of any sane range: found here, not as a run that waits for ever.
        (("requests_per_minute = 600", "requests_per_minute = 1e-300"), ".requests_per_minute: "),
        (("max_concurrency = 32", "timeout_s = inf"), "backends.qwen.timeout_s: "),
        (("max_concurrency = 32", "max_retry_time_s = nan"), "backends.qwen.max_retry_time_s: "),
        # Prices finite and ≥ 0: inf made an estimate of $inf and a spend of $nan.
        (
            ("input_per_mtok = 0.2", "input_per_mtok = inf"),
            ".prices.input_per_mtok: Input should be a finite",
        ),
        (
            ("output_per_mtok = 1.6", "output_per_mtok = nan"),
            ".prices.output_per_mtok: Input should be a fin",
        ),
        (
            ("input_per_mtok = 0.2", "input_per_mtok = -1"),
            ".prices.input_per_mtok: Input should be greater",
        ),
        (
            ("output_per_mtok = 1.6", "output_per_mtok = -inf"),
            ".prices.output_per_mtok: Input should be a fin",
        ),
        (  # finite, but its cost of a million tokens is not
            ("input_per_mtok = 0.2", "input_per_mtok = 1e308"),
            ".prices.input_per_mtok: Input should be less than or equal to 100000",
        ),
        (
            ("max_concurrency = 32", "batch = { poll_s = inf }"),
            "backends.qwen.batch.poll_s: Input should be a",
        ),
        (
            ("per_source = 20", "per_source = 20\n[simulator.faults]\nlatency_s = [0, inf]"),
            "simulator.faults.latency_s.1: ",
        ),
        # No credential in the file: keys live in environment variables only.
        (
            ('api_key_env = "MY_QWEN_KEY"', 'base_url = "https://me:pw@proxy.example/v1"'),
            "backends.qwen: base_url holds credentials (user:password@)",
        ),
        (
            ('api_key_env = "MY_QWEN_KEY"', 'base_url = "https://proxy.example/v1?key=abc"'),
            "backends.qwen: base_url holds a query or fragment",
        ),
        (
            ('api_key_env = "MY_QWEN_KEY"', 'base_url = "proxy.example/v1"'),
            "backends.qwen: base_url must be an http:// or https:// address",
        ),
        (
            ('model = "qwen3-vl-plus"', 'model = "sk-proj-0123456789abcdef"'),
            "backends.qwen: model holds what looks like an API key",
        ),
        (
            ('name = "qwen-max"', 'name = "qwen-max"\nmodel = "AIzaSyA0123456789abcdef"'),
            "model holds what looks like an API key",
        ),
    ],
)
def test_a_bad_file_is_one_line_naming_the_field(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    path = _file(tmp_path, GOOD.replace(*change))
    with pytest.raises(ConfigError) as caught:
        load_experiment(path)
    text = str(caught.value)
    assert text.startswith(f"{path}: ") and message in text
    assert "\n" not in text


def test_an_unknown_condition_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"configuration qwen-max: unknown conditions \['warp'\]"):
        load_experiment(_file(tmp_path, GOOD.replace('"all"', '["base", "warp"]')))


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the experiment file"):
        load_experiment(tmp_path / "nope.toml")


def test_the_paper_experiment_file_is_the_paper_grid() -> None:
    from conditions import PAPER_CONFIGURATIONS

    path = Path(__file__).resolve().parents[2] / "ops" / "paper.toml"
    experiment = load_experiment(path)
    made = {c.name: experiment.configuration(c, None) for c in experiment.configurations}
    for paper in PAPER_CONFIGURATIONS:  # the same questions asked the same way
        mine = made[paper.name]
        assert mine.output_settings() == paper.output_settings(), paper.name
        assert mine.conditions == paper.conditions and mine.best_effort == paper.best_effort


def test_a_store_keeps_its_cohort_and_refuses_another_spec(
    tmp_path: Path, small_root: DataRoot
) -> None:
    from runner.plan import ensure_cohort

    text = (
        f'store = "exp.duckdb"\nimages = "{small_root.images}"\n'
        f'[cohort]\nroot = "{small_root.root}"\nper_source = 4\nmatched = 4\n'
        '[backends.q]\nprovider = "qwen"\nmodel = "m"\n'
        '[[configurations]]\nname = "q"\nbackend = "q"\n'
    )
    path = _file(tmp_path, text)
    built = ensure_cohort(load_experiment(path))  # drawn into the store on the first run
    assert len(built.questions) == 12
    assert ensure_cohort(load_experiment(path)).hash == built.hash  # then read back
    path.write_text(text.replace("per_source = 4", "per_source = 5"))
    with pytest.raises(
        ConfigError,
        match=r"cohort.per_source: 4 → 5; .*revert the change, or point .* at a new file",
    ):
        ensure_cohort(load_experiment(path))


def _box_experiment(tmp_path: Path, benchmark: str = "refbench-pro", extra: str = "") -> Path:

    file, images = generate_box_benchmark("refbench-pro", tmp_path / "data", questions=6)
    return _file(
        tmp_path,
        f'store = "exp.duckdb"\nimages = "{images}"\n'
        f'[boxes]\nbenchmark = "{benchmark}"\nfile = "{file}"\n'
        '[backends.q]\nprovider = "qwen"\nmodel = "m"\n'
        f'[[configurations]]\nname = "q"\nbackend = "q"\nconvention = "unit"\n{extra}',
    )


def test_a_box_store_keeps_its_benchmark_and_refuses_another_task(
    tmp_path: Path, small_root: DataRoot
) -> None:
    from runner.plan import ensure_questions

    path = _box_experiment(tmp_path)
    experiment = load_experiment(path)
    made = experiment.configuration(experiment.configurations[0], None)
    assert made.conditions == ("direct", "cot")  # the default of a box experiment
    assert experiment.conventions == {"q": "unit"}
    questions = ensure_questions(experiment)  # read into the store on the first run
    assert isinstance(questions, BoxSet) and questions.benchmark == "refbench-pro"
    assert len(questions.questions) == 6
    assert ensure_questions(load_experiment(path)) == questions  # then read back
    renamed = path.read_text().replace("annotations_test.jsonl", "annotations_6000.jsonl")
    path.write_text(renamed)
    with pytest.raises(ConfigError, match=r"read from annotations_test\.jsonl; .*6000"):
        ensure_questions(load_experiment(path))
    path.write_text(path.read_text().replace('"refbench-pro"', '"groundingme"'))
    with pytest.raises(ConfigError, match=r"holds refbench-pro's questions; .* groundingme"):
        ensure_questions(load_experiment(path))
    polygon = _file(
        tmp_path,
        f'store = "exp.duckdb"\nimages = "{small_root.images}"\n'
        f'[cohort]\nroot = "{small_root.root}"\nper_source = 4\nmatched = 4\n'
        '[backends.q]\nprovider = "qwen"\nmodel = "m"\n'
        '[[configurations]]\nname = "q"\nbackend = "q"\n',
    )
    with pytest.raises(ConfigError, match="holds a box benchmark's questions"):
        ensure_questions(load_experiment(polygon))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ('conditions = ["base"]', r"unknown conditions \['base'\]; known: direct, cot"),
        ("budgets = [8]", "configurations.0.budgets: Extra inputs"),
    ],
)
def test_a_box_experiment_refuses_polygon_settings(
    tmp_path: Path, extra: str, message: str
) -> None:
    path = _box_experiment(tmp_path, extra=extra)
    with pytest.raises(ConfigError, match=message):
        load_experiment(path)
    path.write_text(path.read_text().replace('"unit"', '"degrees"'))
    with pytest.raises(ConfigError, match=r"configurations\.0\.convention: Input should be"):
        load_experiment(path)


def test_box_conventions_belong_to_box_experiments(tmp_path: Path, small_root: DataRoot) -> None:
    path = _box_experiment(tmp_path)
    path.write_text(path.read_text().replace('convention = "unit"\n', ""))
    with pytest.raises(ConfigError, match="configuration q: a box benchmark needs the coordinate"):
        load_experiment(path)
    polygon = _file(
        tmp_path,
        f'store = "exp.duckdb"\nimages = "{small_root.images}"\n'
        '[backends.q]\nprovider = "qwen"\nmodel = "m"\n'
        '[[configurations]]\nname = "q"\nbackend = "q"\nconvention = "unit"\n',
    )
    with pytest.raises(ConfigError, match="convention is a box benchmark's setting"):
        load_experiment(polygon)


FRAGMENTS = [
    '"', "'", "=", "[", "]", "{", "}", ",", "\n", "#", "[[configurations]]", "[backends.x]",
    'name = "x"', 'backend = "qwen"', "conditions = []", 'conditions = "none"', "-1", "0", "1e999",
    "nan", "true", '"all"', "budgets = []", "budgets = [8, 8]", "store = 3", "images = 1",
    'base_url = ""', 'api_key_env = "1BAD"', "requests_per_minute = -5", "\\u0000", "é",
]  # fmt: skip
edits = st.tuples(
    st.floats(0.0, 1.0),
    st.integers(0, 12),
    st.sampled_from(FRAGMENTS) | st.text(st.characters(exclude_categories=["Cs"]), max_size=6),
)


@given(st.lists(edits, min_size=1, max_size=3))
def test_a_mangled_file_loads_or_is_one_line_naming_it_and_writes_nothing(
    tmp_path_factory: pytest.TempPathFactory, changes: list[tuple[float, int, str]]
) -> None:
    text = GOOD
    for where, drop, insert in changes:  # delete a few characters somewhere, insert others
        at = int(where * len(text))
        text = text[:at] + insert + text[at + drop :]
    path = _file(tmp_path_factory.mktemp("mangled"), text)
    try:
        load_experiment(path)
    except ConfigError as exc:
        message = str(exc)
        assert message.startswith(f"{path}: ") and "\n" not in message
    assert [p.name for p in path.parent.iterdir()] == ["experiment.toml"]


@pytest.mark.parametrize("data", [b"\xff\xfe\x00", b'store = "\xc3\x28"\n', b"\x00" * 64])
def test_a_file_that_is_not_text_is_one_line(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "experiment.toml"
    path.write_bytes(data)
    with pytest.raises(ConfigError, match="not valid TOML") as caught:
        load_experiment(path)
    assert "\n" not in str(caught.value)


DEEP = 100_000


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("a = " + "[" * DEEP + "]" * DEEP, "not valid TOML: arrays or tables nested too deep"),
        ("a = " + "{b = " * DEEP + "1" + "}" * DEEP, "not valid TOML: arrays or tables nested"),
        ("budgets = " + "[" * 300 + "]" * 300, "budgets.0: "),  # read, then refused
        ("budgets = [" + "9" * 5_000 + "]", "not valid TOML: Exceeds the limit"),  # a ValueError
    ],
    ids=["arrays", "inline-tables", "arrays-300", "digits"],
)
def test_a_file_nested_too_deep_is_one_line(tmp_path: Path, line: str, message: str) -> None:
    path = _file(tmp_path, GOOD.replace("budgets = [8, 64]", line))
    with pytest.raises(ConfigError) as caught:
        load_experiment(path)
    text = str(caught.value)
    assert text.startswith(f"{path}: ") and message in text and "\n" not in text


def test_batch_mode_is_a_backend_setting_at_the_batch_price(tmp_path: Path) -> None:
    text = GOOD.replace(
        "max_concurrency = 32\n",
        'max_concurrency = 32\nmode = "batch"\nbatch = { poll_s = 5, max_open = 4 }\n',
    ).replace("output_per_mtok = 1.6 }", "output_per_mtok = 1.6, batch_rate = 0.4 }")
    experiment = load_experiment(_file(tmp_path, text))
    qwen = experiment.backends["qwen"]
    assert qwen.mode == "batch" and (qwen.batch.poll_s, qwen.batch.max_open) == (5, 4)
    assert qwen.prices.batch_cost(1_000_000, 1_000_000) == pytest.approx(0.4 * 1.8)
    assert experiment.backends["sim"].mode == "online"  # the default
    assert experiment.backends["sim"].prices.batch_rate == 0.5
    # A simulated Gemini backend is reached as Gemini is, under its API version.
    sim = experiment.configuration(experiment.configurations[1], "http://127.0.0.1:9")
    assert sim.transport.base_url == "http://127.0.0.1:9/v1beta"


@pytest.mark.parametrize("provider", ["doubao", "kimi", "openai-compatible"])
def test_batch_mode_on_a_provider_without_a_batch_api_is_one_line(
    tmp_path: Path, provider: str
) -> None:
    text = GOOD.replace('provider = "qwen"', f'provider = "{provider}"').replace(
        "max_concurrency = 32\n",
        'max_concurrency = 32\nmode = "batch"\nbase_url = "http://127.0.0.1:8000/v1"\n',
    )
    with pytest.raises(ConfigError, match=f"provider {provider} has no batch API") as caught:
        load_experiment(_file(tmp_path, text))
    assert "\n" not in str(caught.value) and 'mode = "online"' in str(caught.value)


def test_the_stores_spend_is_each_answers_tokens_at_its_backends_prices(tmp_path: Path) -> None:
    experiment = load_experiment(_file(tmp_path, GOOD))
    # qwen-max: 3M input and 1M output tokens, 1M and 0.5M of them brought by a batch;
    # gemini-high's backend is free; a configuration the file no longer has is not counted.
    qwen = Progress("qwen-max", 10, 10, 0, 10, 10, 10, 3_000_000, 1_000_000, 1_000_000, 500_000)
    gemini = Progress("gemini-high", 10, 10, 0, 10, 10, 10, 9_000_000, 9_000_000)
    gone = Progress("dropped", 10, 10, 0, 10, 10, 10, 9_000_000, 9_000_000)
    online = 2 * 0.2 + 0.5 * 1.6
    batch = 0.5 * (1 * 0.2 + 0.5 * 1.6)
    assert experiment.backends["qwen"].prices.spent_on(qwen) == pytest.approx(online + batch)
    assert experiment.spent_on([qwen, gemini, gone]) == pytest.approx(online + batch)
    assert experiment.spent_on([]) == 0
