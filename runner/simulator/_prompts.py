"""What the simulated model reads in a prompt — the expression, the vertex budget, the hints, a
box benchmark's question — as patterns made from ``conditions``' own templates, so a template
edited there is read the same here without a copy to keep in step."""

from __future__ import annotations

import re
import string

from conditions import BOX_BENCHMARK_PROMPTS, PROMPT_TEMPLATES, Benchmark, Reasoning


def template_pattern(template: str, **groups: str) -> re.Pattern[str]:
    """``template`` as a pattern: each named field the regex given for it (a field that comes
    again, the same text: a back-reference to a named group), the rest literal.

    >>> template_pattern("Find {what} now.", what="(.+?)").search("So: Find the cat now.")[1]
    'the cat'
    """
    fields = {name for _, name, _, _ in string.Formatter().parse(template) if name}
    markers = {name: f"\x00{name}\x00" for name in fields}
    pattern = re.escape(template.format(**markers))
    for name in fields:
        group = groups.get(name, ".*?")
        again = f"(?P={name})" if group.startswith(f"(?P<{name}>") else group
        first, *rest = pattern.split(re.escape(markers[name]))
        pattern = first + "".join((group if i == 0 else again) + r for i, r in enumerate(rest))
    return re.compile(pattern, re.DOTALL)


# The vertex count and the expression; a box question has the expression only.
POLYGON = template_pattern(
    PROMPT_TEMPLATES["polygon"], expression="(?P<expression>.*)", n=r"(?P<n>\d+)", count=r"\d+"
)
BOX = template_pattern(PROMPT_TEMPLATES["box"], expression="(?P<expression>.*)")
SPATIAL = template_pattern(PROMPT_TEMPLATES["spatial-hint"], cell="(.+?)")
COLOUR = template_pattern(PROMPT_TEMPLATES["colour-hint"], colour=r"(\w+)")

BOX_PROMPTS: dict[Benchmark, tuple[tuple[Reasoning, re.Pattern[str]], ...]] = {
    benchmark: tuple((r, template_pattern(t, expression="(.*)")) for r, t in prompts.items())
    for benchmark, prompts in BOX_BENCHMARK_PROMPTS.items()
}


def expression_and_budget(prompt: str) -> tuple[str, int]:
    """The expression a GroundBench prompt asks about, and its vertex budget (0 for a box)."""
    if match := POLYGON.search(prompt):
        return match["expression"], int(match["n"])
    if match := BOX.search(prompt):
        return match["expression"], 0
    return "", 0
