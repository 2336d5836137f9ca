"""The one table of model facts: context window, prices and tokenizer per model family.

Tokens, Replay, the HTML report and the CLI all read this table; nothing else
in the product knows a price. A model is found by its longest matching prefix
after any provider prefix (``openai/gpt-4o-2024-08-06`` -> ``gpt-4o``).

A trace whose model has no price (the bundled demo model, a local model) is
never priced at a silent $0: callers price it *as* a model the user picks
(``price_as``) and show which one.
"""
from __future__ import annotations

from dataclasses import dataclass

from agent_core.core.errors import UnknownChoiceError

OPENAI_PRICING = "https://openai.com/api/pricing (list prices, USD per 1M tokens, standard tier)"
OPENAI_MODELS = "https://platform.openai.com/docs/models (context window)"
DEMO = "agent_core/serve/demo_model.py (the bundled demo model: free, 32,768-token window)"


@dataclass(frozen=True)
class ModelFacts:
    """What the product needs to know about one model family."""

    name: str
    """The family's name, matched as a prefix of a model id (``gpt-4o`` matches ``gpt-4o-2024-08-06``)."""
    context_window: int
    """Tokens the model accepts per request, input and output together."""
    input_price: float | None
    """US dollars per 1M input tokens; None when the model has no price (the demo model, a local model)."""
    output_price: float | None
    """US dollars per 1M output tokens; None likewise."""
    tokenizer: str
    """The tiktoken encoding that counts its tokens (``o200k_base`` or ``cl100k_base``)."""
    source: str
    """Where the row's figures come from."""

    @property
    def priced(self) -> bool:
        """Whether the model has a price to compute a cost with."""
        return self.input_price is not None and self.output_price is not None

    def cost(self, input_tokens: int, output_tokens: int = 0) -> float:
        """US dollars for that many tokens (0.0 for an unpriced model: price it *as* another one)."""
        if not self.priced:
            return 0.0
        return (input_tokens * self.input_price + output_tokens * self.output_price) / 1_000_000  # type: ignore[operator]


CATALOGUE: tuple[ModelFacts, ...] = (
    ModelFacts("gpt-4o-mini", 128_000, 0.15, 0.60, "o200k_base", OPENAI_PRICING),
    ModelFacts("gpt-4o", 128_000, 2.50, 10.00, "o200k_base", OPENAI_PRICING),
    ModelFacts("gpt-4.1-nano", 1_047_576, 0.10, 0.40, "o200k_base", OPENAI_PRICING),
    ModelFacts("gpt-4.1-mini", 1_047_576, 0.40, 1.60, "o200k_base", OPENAI_PRICING),
    ModelFacts("gpt-4.1", 1_047_576, 2.00, 8.00, "o200k_base", OPENAI_PRICING),
    ModelFacts("gpt-4.5", 128_000, 75.00, 150.00, "o200k_base", OPENAI_PRICING),
    ModelFacts("gpt-4-turbo", 128_000, 10.00, 30.00, "cl100k_base", OPENAI_PRICING),
    ModelFacts("gpt-4", 8_192, 30.00, 60.00, "cl100k_base", OPENAI_PRICING),
    ModelFacts("gpt-3.5-turbo", 16_385, 0.50, 1.50, "cl100k_base", OPENAI_PRICING),
    ModelFacts("chain-studio-demo-model", 32_768, None, None, "o200k_base", DEMO),
)
"""Every known family. Add a row here, with its source, to teach the whole product a model."""

DEFAULT_PRICE_AS = "gpt-4o-mini"
"""The model an unpriced trace is priced as until the user picks another."""

DEFAULT_CONTEXT_WINDOW = 128_000
"""The window assumed for a model not in the table."""

DEFAULT_TOKENIZER = "o200k_base"
"""The encoding assumed for a model not in the table (today's OpenAI models use it)."""

_PREFIXES = ("openai/", "azure/", "ft:")
_BY_LENGTH = sorted(CATALOGUE, key=lambda m: len(m.name), reverse=True)
_BY_NAME = {m.name: m for m in CATALOGUE}


def _bare(model: str | None) -> str:
    m = model.lower() if isinstance(model, str) else ""
    for prefix in _PREFIXES:
        if m.startswith(prefix):
            m = m[len(prefix):]
    return m


def lookup(model: str | None) -> ModelFacts | None:
    """The facts for a model id (longest matching family name), or None when it is unknown."""
    m = _bare(model)
    if not m:
        return None
    return next((facts for facts in _BY_LENGTH if m.startswith(facts.name)), None)


def facts(name: str) -> ModelFacts:
    """The row of a family by its exact name (``UnknownChoiceError`` names the known ones)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise UnknownChoiceError(f"unknown model {name!r}; one of {', '.join(_BY_NAME)}") from None


def priced_models() -> list[str]:
    """The families a user can price a trace as (every row with a price), cheapest input first."""
    return [m.name for m in sorted(CATALOGUE, key=lambda m: (m.input_price or 0, m.name)) if m.priced]


def context_window(model: str | None) -> int:
    """The model's context window in tokens (``DEFAULT_CONTEXT_WINDOW`` when unknown)."""
    found = lookup(model)
    return found.context_window if found else DEFAULT_CONTEXT_WINDOW


def tokenizer(model: str | None) -> str:
    """The tiktoken encoding for a model (``DEFAULT_TOKENIZER`` when unknown)."""
    found = lookup(model)
    return found.tokenizer if found else DEFAULT_TOKENIZER


@dataclass(frozen=True)
class Pricing:
    """The model a trace's cost is computed with, and why: shown next to every cost."""

    facts: ModelFacts
    """The priced row used."""
    chosen: bool
    """True when the user picked it; False when it is the trace's own model or the default."""
    own: bool
    """True when it is the trace's own model."""

    @property
    def label(self) -> str:
        """``gpt-4o list price`` or ``priced as gpt-4o-mini`` (the trace's model has no price or was overridden)."""
        if self.own and not self.chosen:
            return f"{self.facts.name} list price"
        return f"priced as {self.facts.name}"


def price_as(models: list[str | None], chosen: str | None = None) -> Pricing:
    """The pricing for a trace whose calls used ``models``.

    ``chosen`` (a family name) wins; else the first of the trace's models that
    has a price; else ``DEFAULT_PRICE_AS``. Never an unpriced row.
    """
    if chosen:
        return Pricing(facts(chosen), chosen=True, own=any(lookup(m) == facts(chosen) for m in models))
    for m in models:
        found = lookup(m)
        if found is not None and found.priced:
            return Pricing(found, chosen=False, own=True)
    return Pricing(facts(DEFAULT_PRICE_AS), chosen=False, own=False)
