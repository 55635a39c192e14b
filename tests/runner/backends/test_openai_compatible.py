"""A server of one's own (vLLM, SGLang, Ollama, LM Studio) as the ``openai-compatible``
provider: ``base_url`` required, no key needed (a key, when named, sent to that origin only),
the output-allowance field the backend chooses, no reasoning field guessed, no rate limit
needed, online only, and the model checked against the server's ``GET /models``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web

from conditions import (
    Cohort,
    Configuration,
    DataRoot,
    Decoding,
    ImageBlob,
    Request,
    RequestBuilder,
    RequestKey,
    Thinking,
    Transport,
    VariantCache,
    plan,
    write_cohort,
)
from runner._errors import ConfigError
from runner.backends import (
    PROVIDERS,
    ApiKey,
    AttemptRecord,
    Client,
    OpenAIChat,
    RateLimiter,
    Refused,
    ask,
    served_models,
    thinking_fields,
)
from runner.experiment import load_experiment
from runner.plan import check_backends, prepare
from runner.preflight import PreflightReport, preflight_lines, preflight_report
from runner.simulator import Behaviour, SimSpec, Simulator, serving
from tests.runner.distributed.conftest import simulator_thread, write_experiment

PROVIDER = "openai-compatible"
MODEL = "Qwen/Qwen2.5-VL-7B-Instruct"
KEY = "sk-local-server-key-0123456789abcdef"
KEY_ENV = "GB_LOCAL_SERVER_KEY"
IMAGE = ImageBlob(b"\xff\xd8jpeg-bytes\x00\x01", "image/jpeg", 640, 480)
CLEAN = Behaviour(refusal=0.0, wrong_count=0.0, decimals=0.0)  # every answer parses


def _configuration(
    url: str = "http://127.0.0.1:8000/v1",
    conditions: tuple[str, ...] = ("base",),
    **transport: object,
) -> Configuration:
    return Configuration(
        name="local",
        provider=PROVIDER,
        model=MODEL,
        conditions=conditions,
        transport=Transport.model_validate({"base_url": url, **transport}),
    )


def _request(decoding: Decoding | None = None) -> Request:
    key = RequestKey(configuration="local", condition="base", budget=8, qid="refcoco:1")
    decoding = decoding or Decoding(max_output_tokens=2048)
    return Request(key, "p" * 64, 'Outline "the cat".', IMAGE, decoding, 0)


# -- the experiment file ---------------------------------------------------------------------


def _file(tmp_path: Path, backend: str) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(
        f'store = "s.duckdb"\nimages = "i"\n[backends.gpu]\nprovider = "{PROVIDER}"\n'
        f'model = "{MODEL}"\n{backend}\n'
        '[[configurations]]\nname = "local"\nbackend = "gpu"\n'
    )
    return path


def test_base_url_is_required_in_one_line_naming_the_backend(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_experiment(_file(tmp_path, ""))
    message = str(caught.value)
    assert "\n" not in message
    assert "backends.gpu" in message and "has no endpoint of its own" in message
    assert 'base_url = "http://localhost:8000/v1"' in message


def test_batch_mode_is_refused_in_one_line(tmp_path: Path) -> None:
    backend = 'base_url = "http://localhost:8000/v1"\nmode = "batch"'
    with pytest.raises(
        ConfigError, match=r"backends\.gpu: provider openai-compatible has no batch"
    ):
        load_experiment(_file(tmp_path, backend))


def test_no_key_and_no_rate_limit_are_needed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    experiment = load_experiment(_file(tmp_path, 'base_url = "http://localhost:8000/v1"'))
    backend = experiment.backends["gpu"]
    assert backend.api_key_env is None
    # No quota to respect: the GPUs bound it, through max_concurrency.
    assert backend.requests_per_minute == PROVIDERS[PROVIDER].default_requests_per_minute
    check_backends(experiment)  # no key variable to find: nothing refused
    capped = load_experiment(
        _file(tmp_path, 'base_url = "http://localhost:8000/v1"\nrequests_per_minute = 90')
    )
    assert capped.backends["gpu"].requests_per_minute == 90
    # A key variable, once named, must be set.
    named = load_experiment(
        _file(tmp_path, f'base_url = "http://localhost:8000/v1"\napi_key_env = "{KEY_ENV}"')
    )
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(ConfigError, match=f"{KEY_ENV} is not set"):
        check_backends(named)


def test_the_unmetered_limiter_admits_at_once() -> None:
    limiter = RateLimiter.for_transport(
        Transport(requests_per_minute=PROVIDERS[PROVIDER].default_requests_per_minute or 0)
    )

    async def admit(n: int) -> None:
        for _ in range(n):
            async with limiter.slot(100):
                pass

    began = time.monotonic()
    asyncio.run(admit(500))
    assert time.monotonic() - began < 2.0


def test_a_client_reads_no_key_unless_a_variable_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Client.from_env(_configuration())._key is None
    monkeypatch.setenv(KEY_ENV, KEY)
    assert Client.from_env(_configuration(api_key_env=KEY_ENV))._key == ApiKey(KEY)


# -- the request body ------------------------------------------------------------------------


def test_the_body_carries_max_tokens_and_no_reasoning_field() -> None:
    body = OpenAIChat(PROVIDERS[PROVIDER], MODEL).payload(_request())
    assert set(body) == {"model", "messages", "max_tokens"}
    assert body["max_tokens"] == 2048 and body["model"] == MODEL


def test_the_backend_chooses_max_completion_tokens() -> None:
    client = Client(_configuration(max_tokens_field="max_completion_tokens"), None)
    assert isinstance(client.wire, OpenAIChat)
    body = client.wire.payload(_request(Decoding(max_output_tokens=2048, temperature=0.7)))
    assert set(body) == {"model", "messages", "max_completion_tokens", "temperature"}


def test_a_thinking_setting_is_refused_and_the_default_sends_nothing() -> None:
    assert thinking_fields(PROVIDER, Thinking()) == {}
    for thinking in (Thinking(mode="off"), Thinking(effort="high"), Thinking(budget_tokens=64)):
        with pytest.raises(ConfigError, match=PROVIDER):
            thinking_fields(PROVIDER, thinking)
    with pytest.raises(ConfigError, match=r"configuration local: .*thinking setting"):
        Client(_configuration(conditions=("base", "thinking-off")), None)


# -- a server of the test's: what reaches it --------------------------------------------------


@dataclass
class LocalServer:
    """An OpenAI-compatible server on loopback: answers chat completions, lists ``models``
    (``None``: no list, 404), and keeps the headers of every request."""

    models: tuple[str, ...] | None = (MODEL,)
    redirect_to: str | None = None  # GET /v1/models answers 302 to here
    seen: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        self.seen.append((request.method, request.path, dict(request.headers)))
        doc = await request.json()
        return web.json_response(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": doc["model"],
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "[[1, 2]]"},
                     "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
            }
        )  # fmt: skip

    async def _models(self, request: web.Request) -> web.StreamResponse:
        self.seen.append((request.method, request.path, dict(request.headers)))
        if self.redirect_to is not None:
            raise web.HTTPFound(self.redirect_to)
        if self.models is None:
            return web.json_response({"detail": "Not Found"}, status=404)
        data = [{"id": m, "object": "model", "owned_by": "vllm"} for m in self.models]
        return web.json_response({"object": "list", "data": data})

    def authorizations(self) -> list[str | None]:
        return [headers.get("Authorization") for _, _, headers in self.seen]


@asynccontextmanager
async def running(server: LocalServer) -> AsyncIterator[str]:
    """``server`` on loopback, port 0: its base URL (with ``/v1``, as vLLM's)."""
    app = web.Application()
    app.router.add_post("/v1/chat/completions", server._chat)
    app.router.add_get("/v1/models", server._models)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    finally:
        await runner.cleanup()


def test_no_authorization_header_is_sent_without_a_key() -> None:
    server = LocalServer()

    async def main() -> None:
        async with running(server) as url, Client(_configuration(url), None) as client:
            exchange = await client.send(_request())
            assert exchange.reply.answer == "[[1, 2]]"
            assert (await client.model_check("gpu")).line() is None

    asyncio.run(main())
    assert [path for _, path, _ in server.seen] == ["/v1/chat/completions", "/v1/models"]
    assert server.authorizations() == [None, None]


def test_a_key_when_named_goes_to_the_base_url_origin_only() -> None:
    elsewhere, server = LocalServer(), LocalServer()

    async def main() -> None:
        async with running(elsewhere) as other, running(server) as url:
            server.redirect_to = other + "/models"
            async with Client(_configuration(url), ApiKey(KEY)) as client:
                await client.send(_request())
                check = await client.model_check("gpu")
        # A redirect is never followed: the key would go with it.
        assert check.error is not None and "redirects" in check.error
        assert KEY not in (check.line() or "")

    asyncio.run(main())
    assert server.authorizations() == [f"Bearer {KEY}", f"Bearer {KEY}"]
    assert elsewhere.seen == []


# -- the model check -----------------------------------------------------------------------


def _listed(server: LocalServer, model: str = MODEL) -> tuple[tuple[str, ...] | None, str | None]:
    async def main() -> tuple[tuple[str, ...] | None, str | None]:
        async with running(server) as url:
            configuration = _configuration(url).model_copy(update={"model": model})
            async with Client(configuration, None) as client:
                assert client._peer is not None
                served = await served_models(client._peer, url)
                return served, (await client.model_check("gpu")).line()

    return asyncio.run(main())


def test_a_served_model_passes_the_check() -> None:
    served, line = _listed(LocalServer(models=("other", MODEL)))
    assert served == ("other", MODEL) and line is None


def test_an_unserved_model_is_refused_naming_the_backend_and_a_few_it_serves() -> None:
    models = tuple(f"model-{i}" for i in range(8))
    _, line = _listed(LocalServer(models=models), model="Qwen/Qwen2.5-VL-7B")
    assert line is not None and "\n" not in line
    assert line.startswith("backend gpu: model 'Qwen/Qwen2.5-VL-7B' is not served at http://")
    assert "it serves 'model-0', 'model-1', 'model-2', 'model-3', 'model-4' and 3 more" in line


def test_a_server_with_no_model_list_is_said_so_and_not_refused() -> None:
    served, line = _listed(LocalServer(models=None))
    assert served is None
    assert line is not None and "has no /models list (404)" in line


# -- against the simulator: ask() with no key, and the check's refusal ------------------------


def test_ask_against_the_simulator_with_no_key(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    cache = VariantCache(tmp_path / "variants")
    spec = SimSpec(keyless=True, behaviour=CLEAN)
    keyless = Simulator(small_cohort, small_root.images, cache, spec)
    keyed = Simulator(small_cohort, small_root.images, cache, SimSpec(behaviour=CLEAN))
    configuration = _configuration()
    first = next(iter(plan(small_cohort, [configuration])))
    request = RequestBuilder(small_cohort, small_root.images, cache).build(first, configuration)

    async def main(sim: Simulator) -> list[AttemptRecord]:
        records: list[AttemptRecord] = []
        async with serving(sim) as url:
            at = configuration.transport.model_copy(update={"base_url": url})
            conf = configuration.model_copy(update={"transport": at})
            async with Client(conf, None) as client:
                await ask(client, request, records.append)
        return records

    records = asyncio.run(main(keyless))
    assert records[0].outcome == "answer" and records[0].provider == PROVIDER
    assert keyless.stats.answered >= 1
    # The negative control: a server that wants a key refuses the call that carries none.
    with pytest.raises(Refused):
        asyncio.run(main(keyed))
    assert keyed.stats.answered == 0


@pytest.fixture
def store(tmp_path: Path, small_cohort: Cohort) -> Path:
    path = tmp_path / "exp.duckdb"
    write_cohort(path, small_cohort)
    return path


def _check(tmp_path: Path, store: Path, root: DataRoot, url: str, model: str) -> PreflightReport:
    backend = {"provider": PROVIDER, "model": model, "base_url": url, "max_concurrency": 4}
    path = write_experiment(
        tmp_path / "exp.toml", store, root, {"gpu": backend},
        [{"name": "local", "backend": "gpu", "conditions": ["base", "no-image"]}],
    )  # fmt: skip
    return asyncio.run(preflight_report(prepare(load_experiment(path)), []))


def test_the_check_refuses_a_model_the_server_does_not_serve_before_any_call(
    tmp_path: Path, store: Path, small_root: DataRoot, small_cohort: Cohort
) -> None:
    spec = SimSpec(keyless=True, models=("qwen2.5-vl-7b",))
    with simulator_thread(small_cohort, small_root, tmp_path / "c", spec) as (url, sim):
        report = _check(tmp_path, store, small_root, url, "qwen2.5-vl-72b")
    assert not report.ok and sim.stats.answered == 0
    (probe,) = report.probes
    assert probe.condition == "GET /models" and probe.stops
    (failed,) = [line for line in preflight_lines(report) if line.startswith("FAILED")]
    assert "backend gpu: model 'qwen2.5-vl-72b' is not served" in failed
    assert "it serves 'qwen2.5-vl-7b'" in failed


def test_the_check_proves_a_served_model_and_notes_a_missing_list(
    tmp_path: Path, store: Path, small_root: DataRoot, small_cohort: Cohort
) -> None:
    served = SimSpec(keyless=True, models=("qwen2.5-vl-7b",), behaviour=CLEAN)
    with simulator_thread(small_cohort, small_root, tmp_path / "c", served) as (url, sim):
        report = _check(tmp_path, store, small_root, url, "qwen2.5-vl-7b")
    assert report.ok and report.notes == () and sim.stats.answered > 0
    unlisted = SimSpec(keyless=True, behaviour=CLEAN)  # serves any name: no list, 404
    with simulator_thread(small_cohort, small_root, tmp_path / "d", unlisted) as (url, sim):
        report = _check(tmp_path, store, small_root, url, "qwen2.5-vl-7b")
    assert report.ok and sim.stats.answered > 0
    (note,) = report.notes
    assert note.startswith("backend gpu: ") and "has no /models list (404)" in note
    assert preflight_lines(report)[0] == note
