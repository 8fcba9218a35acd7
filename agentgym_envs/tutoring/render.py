"""The tutor-facing text of the tutoring env: prompt, pre-test report, turn reports, final report.

Pure functions of the session record; the env decides, this module only writes.
"""

from __future__ import annotations

from .domain import COMPONENTS, MISCONCEPTIONS
from .moves import Move, Seen, TutorView
from .utterances import show_answer

SYSTEM_PROMPT = """You are a math tutor working one-on-one with a simulated student. Each turn, make one move, \
as a tool call or in your own words.

Tools:
- ask_item(component, misconception="") - give the student a new problem of a component and see their answer \
(optionally one chosen so that a student holding that misconception would get it wrong);
- hint(component, text) - a short hint; explain(component, text) - an explanation;
- probe(misconception, text) - a question or counter-example that confronts a misconception;
- end_session() - stop teaching; the post-test follows;
- say(text) - the same as writing plain words.
Plain words work too: a rule-based interpreter reads them (a question that addresses a misconception is a \
probe; "try this" or "solve" asks a new problem; a statement about a topic is an explanation; "bye" ends).

Your reward is the student's gain from the pre-test to a post-test on new problems. Find each misconception \
from the answers, confront it (probing works better than telling), and check. Never give the student the \
answer to a problem they have seen: they copy it without learning anything, and every revealed answer costs \
a penalty."""


def mark(seen: Seen) -> str:
    return "✓" if seen.correct else f"✗ (correct: {show_answer(seen.item, seen.item.answer)})"


def instruction(view: TutorView, leak_text: str) -> str:
    names = ", ".join(COMPONENTS[c].name for c in view.components)
    return (f"Tutor {view.student} on {names}. You have up to {view.max_turns} turns, then {view.student} takes a "
            f"post-test on new problems of the same kinds. Reward: post-test score minus pre-test score, "
            f"{leak_text}.")


def opening(view: TutorView, leak_text: str) -> str:
    lines = [instruction(view, leak_text), "", f"Pre-test ({view.student}'s answers; the marks are for you):"]
    for i, seen in enumerate(view.pretest, start=1):
        lines.append(f"{i:>2}. [{seen.item.component}] {seen.item.prompt}  →  "
                     f"{show_answer(seen.item, seen.answer)}  {mark(seen)}")
    lines += ["", "Components (ids for the tools):"]
    lines += [f"- {c}: {COMPONENTS[c].name}. {COMPONENTS[c].description}" for c in view.components]
    lines += ["", "Documented misconceptions of these components (ids for probe and ask_item):"]
    for c in view.components:
        lines += [f"- {m} ({COMPONENTS[c].name}): {MISCONCEPTIONS[m].belief}" for m in COMPONENTS[c].misconceptions]
    lines += ["", "Your move."]
    return "\n".join(lines)


def describe(move: Move) -> str:
    """The move as the tutor should understand it (free text shows how the interpreter read it)."""
    what = {
        "ask_item": f"a new problem on {_name(move.component)}",
        "hint": f"a hint on {_name(move.component)}",
        "explain": f"an explanation of {_name(move.component)}",
        "probe": f"a probe of the misconception {move.misconception}",
        "talk": "talk",
        "end_session": "end the session",
    }[move.kind]
    if move.kind in ("hint", "explain") and move.addressed:
        what += f" (addressing {', '.join(move.addressed)})"
    return f"understood as {what}" if move.via == "text" else what


def _name(component: str | None) -> str:
    return COMPONENTS[component].name if component else "nothing in particular"


def asked(student: str, seen: Seen, utterance: str) -> str:
    return (f"{student} gets: {seen.item.prompt}\n{student} answers {show_answer(seen.item, seen.answer)} "
            f"{mark(seen)}: \"{utterance}\"")


def turn_header(turn: int, max_turns: int, move: Move) -> str:
    return f"Turn {turn}/{max_turns}: {describe(move)}."


def leak_note(student: str, prompts: list[str], penalty: float) -> str:
    shown = "; ".join(f'"{p}"' for p in prompts)
    cost = f" Penalty {penalty:.2f}." if penalty else ""
    return f"(You revealed the answer to {shown}. {student} will copy it but learnt nothing from it.{cost})"


def final_report(view: TutorView, post: list[Seen], copies: list[Seen], pre_score: float, post_score: float,
                 penalty_text: str, total: float) -> str:
    lines = [f"The session is over after {view.turns_used} turn{'s' if view.turns_used != 1 else ''}. "
             f"Post-test on new problems:"]
    for c in view.components:
        own = [s for s in post if s.item.component == c]
        lines.append(f"- {COMPONENTS[c].name}: {sum(s.correct for s in own)}/{len(own)} correct")
    lines.append(f"Pre-test {pre_score:.0%} → post-test {post_score:.0%}: gain {post_score - pre_score:+.2f}. "
                 f"{penalty_text} Return {total:+.2f}.")
    if copies:
        lines.append(f"Copy check (revealed items asked again, not scored): {sum(s.correct for s in copies)}/"
                     f"{len(copies)} copied correctly.")
    return "\n".join(lines)
