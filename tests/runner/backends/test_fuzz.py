"""Fuzzing the request builders: 10,000 random requests over every provider, each body read
back by ``json`` and by the simulator's server parser (the other end of the wire).

Prompts mix arbitrary text with the strings that the builders and the server treat specially
(the image slot, the markers around the image, quotes, backslashes, NULs), so a builder that
let a prompt reach into the image, or a server that took a prompt for an image, would show.
"""

from __future__ import annotations

import base64
import json

from hypothesis import given
from hypothesis import strategies as st

from conditions import Decoding, ImageBlob, Request, RequestKey, Thinking
from runner._errors import ConfigError
from runner.backends import provider_named, wire_format
from runner.backends._providers import PROVIDERS, thinking_fields
from runner.backends._wire import IMAGE_SLOT
from runner.simulator._server import _parse
from runner.simulator._wires import wire_for

TRICKY = [
    IMAGE_SLOT, ";base64,", '"data":"', "data:image/jpeg;base64,", '"', "\\", "\x00", "\n",
    "\u2028", "😀", "{", "}", '"text":', "Hint: the object is mostly red.",
]  # fmt: skip

prompts = st.lists(st.one_of(st.text(max_size=16), st.sampled_from(TRICKY)), max_size=8).map(
    "".join
)
thinking = st.one_of(
    st.just(Thinking(mode="off")),
    st.builds(
        Thinking,
        mode=st.just("on"),
        effort=st.none() | st.sampled_from(["low", "medium", "high", "max"]),
        budget_tokens=st.none() | st.integers(1, 65_536),
    ),
)
decodings = st.builds(
    Decoding,
    thinking=thinking,
    temperature=st.none() | st.floats(0.0, 2.0),
    max_output_tokens=st.integers(1, 1_000_000),
)
images = st.none() | st.builds(
    ImageBlob,
    data=st.binary(max_size=256),
    media_type=st.sampled_from(["image/jpeg", "image/png"]),
    width=st.integers(1, 4000),
    height=st.integers(1, 4000),
)


@given(
    provider=st.sampled_from(sorted(PROVIDERS)),
    model=st.from_regex(r"[a-z0-9][a-z0-9.\-]{0,30}", fullmatch=True),
    prompt=prompts,
    image=images,
    decoding=decodings,
)
def test_every_request_body_reads_back_exactly_what_was_asked(
    provider: str, model: str, prompt: str, image: ImageBlob | None, decoding: Decoding
) -> None:
    request = Request(
        RequestKey(configuration="c", condition="base", budget=8, qid="q1"),
        "p",
        prompt,
        image,
        decoding,
        0,
    )
    wire_fmt = wire_format(provider_named(provider), model)
    try:
        provider_named(provider).check(decoding)
    except ConfigError:
        # A decoding its provider's rules refuse (Anthropic's: the thinking budget against
        # max_tokens, a temperature while thinking) never reaches a wire: Client refuses it.
        return
    try:
        expected_fields = thinking_fields(provider, decoding.thinking)
    except ConfigError:
        expected_fields = None
    try:
        body = bytes(wire_fmt.encode(request))
    except ConfigError:
        assert expected_fields is None  # refused exactly when the API cannot say it
        return
    assert expected_fields is not None
    doc = json.loads(body)
    assert isinstance(doc, dict)
    path = wire_fmt.url("http://h/v1").removeprefix("http://h")
    wire = wire_for(path)
    assert wire is not None and wire.name == PROVIDERS[provider].wire
    seen = _parse(wire, path, body)
    assert seen.model == model and seen.prompt == prompt
    if image is None:
        assert seen.image_b64 is None
    else:
        assert seen.image_b64 is not None and base64.b64decode(seen.image_b64) == image.data
    assert seen.temperature == decoding.temperature
    assert seen.thinking == (decoding.thinking.mode == "on")
