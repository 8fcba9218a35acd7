"""What the student says: template renderings of decided state, and the optional verbaliser hook.

The student's answers and reactions are decided by :mod:`.student` and :mod:`.dynamics`; this module only
words them. Templates are picked by a counter, not by the env's RNG, so wording never perturbs the
dynamics. Chatty personas explain their working (the buggy rule in their own words, which is evidence a
tutor can use); terse ones give the bare answer.

A **verbaliser** (any ``Callable[[str, Mapping[str, Any]], str]``, e.g. an LLM through
:func:`policy_verbaliser`) may rephrase an utterance; it never decides anything. The env prints the
decided answer itself, outside the quotation, so a verbaliser cannot change what the student answered.
If the verbaliser fails or returns something other than non-empty text, the template is used.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .domain import MISCONCEPTIONS, Item
from .dynamics import Effect
from .student import Attempt, Persona

Verbaliser = Callable[[str, Mapping[str, Any]], str]

_ACK = ("Okay.", "Mm-hm.", "Sure.", "Right.")
_ACK_CHATTY = ("Okay, I'm listening.", "Right, go on.", "Hmm, okay, I think I follow.", "Sure, that sounds fine.")
_KNOWN_WORK = ("I worked it out step by step.", "I did it the way we learnt.", "I checked it twice.")
_UNSURE = ("Um… {answer}?", "Is it {answer}? I'm not sure.", "Maybe {answer}?")


def show_answer(item: Item, answer: str) -> str:
    """The answer as the student writes it (``x = 4`` for equations)."""
    return f"x = {answer}" if item.component == "linear_eq" else answer


def _pick(options: tuple[str, ...], counter: int) -> str:
    return options[counter % len(options)]


def answer_utterance(attempt: Attempt, persona: Persona, counter: int) -> str:
    """The student's words when answering (the answer itself is printed by the env)."""
    answer = show_answer(attempt.item, attempt.answer)
    if attempt.source == "copied":
        return f"You told me it's {answer}."
    if attempt.source in ("unknown", "guess"):
        return _pick(_UNSURE, counter).format(answer=answer)
    if not persona.chatty:
        return f"{answer}."
    if attempt.source in MISCONCEPTIONS:
        return f"{answer}. {MISCONCEPTIONS[attempt.source].says}"
    return f"{answer}. {_pick(_KNOWN_WORK, counter)}"


def reaction_utterance(kind: str, effect: Effect, persona: Persona, counter: int) -> str:
    """The student's reaction to a hint, explanation, probe or talk."""
    if effect.removed:
        return "Oh! So that's why. I was doing it wrong." if persona.chatty else "Oh. I get it now."
    if effect.targeted is not None:
        said = MISCONCEPTIONS[effect.targeted].says
        return f"But that's how I always do it… {said}" if persona.chatty else "Hmm. I'm not sure."
    if effect.not_held and kind == "probe":
        return "Hmm, no, I wouldn't do it like that." if persona.chatty else "I don't think so."
    if effect.learned:
        return "Oh, that makes sense now!" if persona.chatty else "Okay. Got it."
    return _pick(_ACK_CHATTY if persona.chatty else _ACK, counter)


def copied_utterance(items: list[Item]) -> str:
    shown = " and ".join(f"'{item.prompt}'" for item in items[:2]) + (" and the others" if len(items) > 2 else "")
    return f"Oh, so that's the answer to {shown}. I'll write that down."


def tired_suffix(energy: float) -> str:
    if energy < 0.4:
        return " (yawns) Can we stop soon? I can't think any more."
    if energy < 0.75:
        return " I'm getting a bit tired."
    return ""


def verbalise(utterance: str, context: Mapping[str, Any], verbaliser: Verbaliser | None) -> tuple[str, bool]:
    """``(text, ok)``: the verbaliser's rephrasing, or the template when there is none or it failed."""
    if verbaliser is None:
        return utterance, True
    try:
        text = verbaliser(utterance, context)
    except Exception:  # a third-party rephraser must not end the episode; the template stands in
        return utterance, False
    if not isinstance(text, str) or not text.strip():
        return utterance, False
    return text.strip()[:2000], True


def policy_verbaliser(policy: Any, sampling: Any, persona_hint: str = "a school student") -> Verbaliser:
    """A verbaliser from any object with the trainer's ``Policy.act(batch, *, sampling)`` method.

    The model is asked to reword the utterance in a student's voice without changing any number; the env
    still prints the decided answer itself. Duck-typed so that envs never import the trainer.
    """

    def rephrase(utterance: str, context: Mapping[str, Any]) -> str:
        messages = [
            {"role": "system", "content": f"You are {persona_hint} talking to a tutor. Reword the student's line "
                                          "naturally. Keep every number and the meaning exactly; add nothing."},
            {"role": "user", "content": utterance},
        ]
        return policy.act([messages], sampling=sampling)[0].text

    return rephrase
