"""Driving a run: :func:`fit` takes a :class:`~trainer.run.loop.Trainer` from its checkpoint to ``config.steps``,
logging, evaluating and checkpointing on the way (what ``agentgym train`` and ``agentgym quickstart`` call)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import to_dict
from .log import JsonlLogger, TensorBoardLogger, summary_line
from .wandb_log import WandbLogger

if TYPE_CHECKING:
    from .loop import Trainer


def fit(trainer: Trainer, *, stop_after: int | None = None, echo: Any = print) -> list[dict[str, Any]]:
    """Run ``trainer`` from wherever its checkpoint left it to ``config.steps``, logging every step.

    A checkpoint in ``out_dir`` is resumed only if its config matches (:meth:`Trainer.resume`); a changed
    config raises :class:`CheckpointError` unless ``config.resume`` is set.

    ``stop_after`` ends the call after that many updates in this process (tests use it to simulate a kill).
    Returns the records logged in this call.
    """
    c = trainer.config
    resumed = trainer.resume()
    if trainer.step < c.steps and c.rollout.source == "envs":
        trainer.check_context()  # before any warm-up or update: a prompt that cannot fit is a config error
    resume_step = trainer.step if resumed else None
    main = trainer.world.is_main  # under torchrun only rank 0 logs and prints (its records hold all ranks' means)
    loggers: list[Any] = [JsonlLogger(Path(c.out_dir) / "metrics.jsonl", resume_step=resume_step)] if main else []
    if c.tensorboard and main:
        loggers.append(TensorBoardLogger(Path(c.out_dir) / "tensorboard", resume_step=resume_step))
    if c.wandb.enabled and main:  # an offline W&B run mirroring metrics.jsonl (trainer/run/wandb_log.py)
        loggers.append(WandbLogger(c.wandb, c.out_dir, to_dict(c)))
    records: list[dict[str, Any]] = []

    def emit(record: dict[str, Any]) -> None:
        for logger in loggers:
            logger.log(record)
        records.append(record)
        if echo is not None and main:
            echo(summary_line(record) if "reward" in record else record)

    try:
        if not trainer.bc_done:
            emit({"step": 0, "phase": "bc", **trainer.warm_up()})
            if c.checkpoint_last or c.checkpoint_every:
                trainer.save()
        if trainer.ref_model is None and c.loss.kl_coef > 0:
            trainer.ref_model = trainer.reference_copy()
        done_here = 0
        with _progress(c.progress and main, c.steps, trainer.step) as advance:
            while trainer.step < c.steps and (stop_after is None or done_here < stop_after):
                record = trainer.train_step()
                if c.eval.every and trainer.step % c.eval.every == 0:
                    record.update(trainer.evaluate())
                emit(record)
                done_here += 1
                advance()
                if (c.checkpoint_every and trainer.step % c.checkpoint_every == 0) or (c.checkpoint_last and trainer.step == c.steps):
                    trainer.save()
    finally:
        for logger in loggers[1:]:
            logger.close()
    return records


class _progress:
    """A rich progress bar on a terminal when asked for; otherwise nothing."""

    def __init__(self, enabled: bool, total: int, completed: int):
        import sys

        self.enabled = enabled and sys.stdout.isatty()
        self.total, self.completed = total, completed

    def __enter__(self):
        if not self.enabled:
            return lambda: None
        from rich.progress import Progress

        self._bar = Progress(transient=True)
        self._bar.start()
        task = self._bar.add_task("training", total=self.total, completed=self.completed)
        return lambda: self._bar.advance(task)

    def __exit__(self, *exc: Any) -> None:
        if self.enabled:
            self._bar.stop()
