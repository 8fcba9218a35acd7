"""Sessions → the trainer's :class:`~trainer.collect.trajectory.Trajectory`: segments as token sequences, outcome as rewards.

Each session becomes one trajectory: its last segment is the trajectory's own token fields and the earlier ones
go to ``earlier`` (as history folding's segments do, trainer/collect/trajectory.py), so each segment is scored on
exactly the ids its replies were sampled on. ``loss_mask`` is 1 only on sampled ids: the prompt, everything the
template wrote and every observation are masked out. Turns count calls across segments; ``rewards`` hold the
outcome (the harness's final reward on the last turn, or the env's per-turn rewards in env-driven mode).

Checks (:func:`check_session`): one log-prob per sampled id, every log-prob finite, masks and turn numbers
consistent, the outcome attached. A session that fails them, expired, or whose policy produced a non-finite
log-prob is returned with ``infra_error`` set: kept and counted, never trained on. :func:`logprob_gap`
measures the largest difference between the recorded log-probs and the trainer's recomputation on the same ids
(the figure ``update`` logs as ``logprob_gap_max``; near 1e-6 with the HF backend).
"""

from __future__ import annotations

import math
from typing import Any

from ...collect.trajectory import Trajectory
from .sessions import Segment, Session


def check_session(session: Session) -> str | None:
    """Why ``session`` cannot be trained on, or ``None`` when it can."""
    if session.outcome.error:
        return session.outcome.error
    if not session.outcome.done:
        return "the session has no outcome yet (POST /sessions/{sid}/reward, or the env has not ended)"
    if not session.replies:
        return "the session made no call"
    if len(session.outcome.rewards) != len(session.replies):
        return f"expected one reward per call ({len(session.replies)}), got {len(session.outcome.rewards)}"
    for k, s in enumerate(session.segments):
        lengths = {len(s.token_ids), len(s.loss_mask), len(s.logprobs), len(s.turns)}
        if len(lengths) != 1:
            return f"segment {k}: per-token lists of different lengths {sorted(lengths)}"
        if any((m == 1) != (t >= 0) for m, t in zip(s.loss_mask, s.turns)):
            return f"segment {k}: loss mask and turn numbers disagree"
        if not all(math.isfinite(x) for x in s.logprobs):
            return f"segment {k}: a non-finite sampling log-prob"
    return None


def to_trajectory(session: Session) -> Trajectory:
    """The session as one trajectory (``infra_error`` set when :func:`check_session` finds a problem)."""
    meta, error = session.meta, check_session(session)
    segments = [s for s in session.segments if s.num_sampled] or [Segment.start([], "", "first")]
    *earlier, last = segments
    n = len(session.replies)
    rewards = list(session.outcome.rewards)[:n] + [0.0] * max(0, n - len(session.outcome.rewards))
    finish = meta.get("finish") or ("terminated" if session.outcome.source in ("harness", "env") else "truncated")
    t = Trajectory(list(last.token_ids), list(last.loss_mask), list(last.logprobs), list(last.turns), last.prompt_length,
                   rewards=rewards, state_keys=list(session.state_keys), turn_valid=list(session.turn_valid),
                   replies=list(session.replies), won=session.outcome.won,
                   finish="infra_error" if error else finish, infra_error=error,
                   task_index=int(meta.get("task_index", -1)), group=int(meta.get("group", -1)),
                   earlier=[Trajectory(list(s.token_ids), list(s.loss_mask), list(s.logprobs), list(s.turns),
                                       s.prompt_length, task_index=int(meta.get("task_index", -1)),
                                       group=int(meta.get("group", -1))) for s in earlier])
    return t


def logprob_gap(model: Any, trajectories: list[Trajectory], *, temperature: float = 1.0, pad_id: int = 0) -> float:
    """The largest ``|recorded - recomputed|`` log-prob over the sampled ids of ``trajectories``' segments."""
    import torch

    from ...learn.logprobs import pack, token_logprobs

    segments = [s for t in trajectories if t.trainable for s in t.segments if any(s.loss_mask)]
    if not segments:
        return 0.0
    device = next(model.parameters()).device
    with torch.no_grad():
        batch = pack(segments, pad_id, device=device)
        logp, _ = token_logprobs(model, batch, temperature=temperature)
        gap = (logp.float() - batch.sampling_logprobs).abs() * batch.loss_mask
    return float(gap.max())


def session_record(session: Session) -> dict[str, Any]:
    """A finished session as one JSON-safe record (``agentgym gateway --out``): its segments' token fields, replies,
    per-call policy versions and outcome; a non-finite log-prob is written as ``-9999.0`` (JSON has no NaN)."""
    from .wire import finite

    return {**session.summary(), "replies": list(session.replies), "versions": list(session.versions),
            "rewards": list(session.outcome.rewards), "turn_valid": list(session.turn_valid),
            "segments": [{"reason": s.reason, "token_ids": s.token_ids.tolist(), "loss_mask": s.loss_mask.tolist(),
                          "logprobs": [finite(x) for x in s.logprobs], "turns": s.turns.tolist(),
                          "prompt_length": s.prompt_length}
                         for s in session.segments]}
