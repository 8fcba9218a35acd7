"""``TextVectorEnv(mode="ray")``: Ray actors that each host K envs, stepped in one batched call per actor.

The vector env drives one handle per env (:class:`RayEnvHandle`, the same ``wait_ready``/``send``/``recv``
/``close`` as the process and thread workers), so groups, auto-reset, seeds and infra-error reporting are
the code the other modes run. What differs is underneath: ``send`` only queues a command on the env's
actor slot, and the first ``recv`` after a round of sends submits every slot's queue as **one** actor call
(``EnvHost.run``), so stepping 64 envs on 4 actors costs 4 RPCs, not 64. An actor steps its envs one after
another, or side by side in ``threads_per_actor`` threads (for envs that wait on a browser or a shell).

Fault handling (none of it uses Ray's own restarts: an actor restart reruns ``__init__`` and would
silently lose its envs' state, and a retried step is not idempotent):

* actors are created with ``max_restarts=0`` and ``max_task_retries=0``; a call whose actor died (SIGKILL,
  ``os._exit``, a segfault, its node removed) fails every env of that batch with ``"died"``, the actor is
  killed for good (``ray.kill``) in case it was only unreachable, and the vector env rebuilds those envs
  on a replacement actor, which it starts on the first rebuild; the slot's other envs learn of the loss on
  their next command (their handles belong to an older generation of the slot);
* with ``step_timeout``, a batch that has not finished by the deadline is a hung actor: it is killed, and
  every env of the batch reports ``"timeout"`` (an actor runs its envs one after another, so a hang cuts
  all K of them; ``envs_per_actor=1`` isolates every env);
* an env that raises is data (``"raised"``), as in the other modes, and only that env is rebuilt;
* a lost node never ends the run. An env whose actor is gone is rebuilt on a replacement actor only while the
  cluster has a free ``num_cpus`` for it (and that actor builds within ``REPLACEMENT_WAIT_S``); otherwise, or
  if the replacement dies too (it was placed on the dying node), the env joins the surviving actor hosting the
  fewest envs, which then steps more envs per call. The cut episode is reported once, as for any loss. Only
  a cluster with no surviving actor at all waits for a replacement (``startup_timeout``) and then stops.

Actors ask for a fractional ``num_cpus`` and are placed with Ray's ``SPREAD`` strategy (soft: a replacement
still starts when a node is gone; ``ActorPool``-style hangs on unschedulable actors are avoided because
every wait has a deadline: an actor asking for more CPUs than any node has is refused up front, and one of
the first layout that is not scheduled and built within ``startup_timeout`` raises :class:`VectorEnvError`).
Unpickling here is of our own driver's cloudpickles of its env factories, and of results from our own
actors, inside the cluster the user started: no bytes from an agent or a remote user are unpickled.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
import pickle
import sys
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import cloudpickle

from ..core.snapshots import install_key, snapshot_key
from .ray_cluster import import_ray, init_ray
from .ray_options import RayOptions
from .worker import COMMANDS, Failure, _error, _raised, _remaining

ray = import_ray()
logger = logging.getLogger(__name__)

#: How long a rebuilt env waits for a replacement actor before it joins a surviving actor instead (Ray may
#: have counted a free CPU that is gone by the time the actor is placed, or placed it on a dying node).
REPLACEMENT_WAIT_S = 30.0


class EnvHost:
    """The actor: K envs keyed by the host's handle keys, and one batched command round per call."""

    def __init__(self, sys_path: list[str], key: bytes, threads: int = 1):
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="EnvHost") if threads > 1 else None
        sys.path.extend(p for p in sys_path if p not in sys.path)  # the driver's modules (a test, a notebook)
        install_key(key)  # group snapshots travel between actors through the driver: one key for all
        self.envs: dict[int, Any] = {}
        self.batches_run = 0

    def build(self, key: int, env_fn_bytes: bytes) -> tuple[str, Any]:
        try:
            env = pickle.loads(env_fn_bytes)()  # the driver's own cloudpickle of its env factory
            unwrapped = env.unwrapped
            snapshots = callable(getattr(unwrapped, "get_state", None)) and callable(getattr(unwrapped, "set_state", None))
        except Exception as e:
            return "error", _error(e)
        self.envs[key] = env
        node = ray.get_runtime_context().get_node_id()
        return "ready", {"pid": os.getpid(), "snapshots": snapshots, "node_id": node}

    def run(self, batch: list[tuple[int, str, Any]]) -> list[tuple[str, Any]]:
        """Run each ``(key, command, payload)`` in order; an env's exception is its own reply, as data."""
        self.batches_run += 1
        if self.pool is not None and len(batch) > 1:  # each key appears once per batch: one thread per env
            replies = list(self.pool.map(self._one, batch))
        else:
            replies = [self._one(command) for command in batch]
        try:
            cloudpickle.dumps(replies)  # one check of the whole batch (microseconds for text and small dicts)
        except Exception:  # a result that cannot travel fails its own env, not the batch
            replies = [_travelling(reply) for reply in replies]
        return replies

    def _one(self, command: tuple[int, str, Any]) -> tuple[str, Any]:
        key, name, payload = command
        try:
            if name == "close":
                self.envs.pop(key).close()
                return "ok", None
            return "ok", COMMANDS[name](self.envs[key], payload)
        except Exception as e:
            return "error", _error(e)

    def stats(self) -> dict[str, Any]:
        """What this actor hosts and how many batched calls it ran (tests check the batching with it)."""
        return {"envs": len(self.envs), "batches_run": self.batches_run, "pid": os.getpid(),
                "node_id": ray.get_runtime_context().get_node_id()}


class _Slot:
    """One actor position: the current actor, its generation, queued commands and batches in flight."""

    def __init__(self, fleet: RayFleet, index: int):
        self.fleet, self.index = fleet, index
        self.actor: Any = None
        self.generation = 0
        self.lost: Failure | None = None  # why the current generation's actor is gone
        self.losses: dict[int, Failure] = {}  # why each earlier generation's actor went (for late news)
        self.queue: list[tuple[int, str, Any]] = []
        self.batch_of: dict[int, Any] = {}  # key -> ObjectRef of the batch carrying its command
        self.batches: dict[Any, list[tuple[int, str]]] = {}  # ObjectRef -> (key, command) in order
        self.replies: dict[int, Any] = {}
        self.open_keys: set[int] = set()
        self.closing: list[Any] = []  # close-only batches: waited for (briefly) before the actor is stopped

    @property
    def alive(self) -> bool:
        """Whether this slot has an actor not known to be lost."""
        return self.actor is not None and self.lost is None

    def ensure_actor(self) -> None:
        if self.alive:
            return
        self.generation += 1
        self.lost, self.queue, self.batch_of, self.batches, self.replies = None, [], {}, {}, {}
        self.open_keys, self.closing = set(), []
        self.actor = self.fleet.actor_class.remote(list(sys.path), snapshot_key(), self.fleet.threads)

    def flush(self) -> None:
        """Submit the queued commands as one actor call (a batch of ``close`` only is not waited for)."""
        if self.queue and self.lost is None:
            try:
                ref = self.actor.run.remote(self.queue)
            except Exception as e:
                if isinstance(e, TypeError) and self._drop_unpicklable():  # the culprits fail alone
                    self.flush()
                    return
                self.batches[None] = [(key, command) for key, command, _ in self.queue]
                self.fail(_lost(self._indices(), e))  # Ray already knows the actor is dead and refuses the call
                return
            awaited = [key for key, command, _ in self.queue if command != "close"]
            if awaited:
                self.batches[ref] = [(key, command) for key, command, _ in self.queue]
                self.batch_of.update((key, ref) for key in awaited)
            else:
                self.closing.append(ref)
        self.queue = []

    def _drop_unpicklable(self) -> bool:
        """Answer, with a ``raised`` failure, each queued command whose arguments do not pickle, and keep the
        rest queued; ``False`` if every argument pickles (the refusal was not about arguments)."""
        kept = []
        for key, command, payload in self.queue:
            try:
                cloudpickle.dumps(payload)
                kept.append((key, command, payload))
            except Exception as e:
                self.replies[key] = Failure("raised", f"the {command} arguments could not be pickled: "
                                                      f"{type(e).__name__}: {e}")
        dropped = len(kept) < len(self.queue)
        self.queue = kept
        return dropped

    def reply(self, key: int, deadline: float | None) -> Any:
        """The reply to ``key``'s queued command: a value, or a :class:`Failure` if the actor failed."""
        if key not in self.replies:
            if key not in self.batch_of:  # the actor was lost before this command could be sent
                return self.lost or Failure("died", "the command never reached its Ray actor")
            self._collect(self.batch_of[key], deadline)
        return self.replies.pop(key)

    def _collect(self, ref: Any, deadline: float | None) -> None:
        ready, _ = ray.wait([ref], timeout=_remaining(deadline))
        if not ready:
            self.fail(Failure("timeout", f"the Ray actor hosting envs {self._indices()} was killed: its batch "
                                         "did not finish"))
            return
        try:
            values = ray.get(ref)
        except Exception as e:  # the actor died, its node went away, or the result was lost with it
            self.fail(_lost(self._indices(), e))
            return
        for (key, command), (status, value) in zip(self.batches.pop(ref), values):
            self.batch_of.pop(key, None)
            if command != "close":
                self.replies[key] = _raised(value) if status == "error" else value

    def fail(self, failure: Failure) -> None:
        """The current actor is gone (or must go): every command in flight on it gets ``failure``."""
        self.lost = self.losses[self.generation] = failure
        for keys in self.batches.values():
            for key, command in keys:
                if command != "close":
                    self.replies[key] = failure
        self.batches, self.batch_of, self.queue = {}, {}, []
        self.fleet.kill(self.actor)

    def _indices(self) -> list[int]:
        return sorted({self.fleet.index_of[key] for key in self.open_keys})


class RayFleet:
    """The driver's view of all actors of one vector env: which slot hosts which env, and their handles."""

    def __init__(self, num_envs: int, options: RayOptions | Mapping[str, Any] | None):
        options = RayOptions.of(options)
        init_ray(options.address)
        self.envs_per_actor = options.layout(num_envs)
        self.threads, self.startup_timeout = options.threads_per_actor, options.startup_timeout
        self.num_cpus = options.num_cpus
        self.close_timeout = options.close_timeout
        self.actor_class = ray.remote(EnvHost).options(
            num_cpus=options.num_cpus, max_restarts=0, max_task_retries=0,
            scheduling_strategy=options.scheduling_strategy)
        self.slots = [_Slot(self, s) for s in range(math.ceil(num_envs / self.envs_per_actor))]
        self.index_of: dict[int, int] = {}
        self.home: dict[int, _Slot] = {}  # env index -> the slot hosting it (moves when its actor is lost)
        self._keys = itertools.count()

    def start(self, index: int, env_fn_bytes: bytes) -> RayEnvHandle:
        """A handle for env ``index``, whose env is being built on its slot's actor (started if needed).

        The first build follows the layout. A rebuild whose actor is gone gets a replacement actor only
        while the cluster has a free ``num_cpus``; otherwise it joins the least loaded surviving actor."""
        rebuild = index in self.home
        slot = self.home.get(index) or self.slots[index // self.envs_per_actor]
        if rebuild and not slot.alive and not self._spare_cpus():
            slot = self.survivor(exclude=set()) or slot  # no survivor at all: wait for a replacement
        handle = RayEnvHandle(self, index, env_fn_bytes, movable=rebuild)
        self.place(handle, slot)
        return handle

    def place(self, handle: RayEnvHandle, slot: _Slot) -> None:
        """Start building ``handle``'s env on ``slot``'s actor (a replacement actor if it has none)."""
        replacing = not slot.alive
        slot.ensure_actor()
        key = next(self._keys)
        self.index_of[key], self.home[handle.index] = handle.index, slot
        slot.open_keys.add(key)
        try:
            build_ref = slot.actor.build.remote(key, handle.env_fn_bytes)
        except Exception as e:  # the new actor is already known dead: the handle reports it at wait_ready
            slot.fail(_lost(slot._indices(), e))
            build_ref = None
        short = replacing and handle.movable and self.survivor(exclude={slot}) is not None  # else wait for room
        handle.attach(slot, key, build_ref, min(self.startup_timeout, REPLACEMENT_WAIT_S) if short else None)

    def survivor(self, exclude: set[_Slot]) -> _Slot | None:
        """The slot whose live actor hosts the fewest envs (the lowest index on a tie), or ``None``."""
        live = [slot for slot in self.slots if slot.alive and slot.open_keys and slot not in exclude]
        return min(live, key=lambda slot: (len(slot.open_keys), slot.index), default=None)

    def _spare_cpus(self) -> bool:
        """Whether Ray sees a free ``num_cpus`` on a live node (a dead node's CPUs leave this view)."""
        try:
            return ray.available_resources().get("CPU", 0.0) >= self.num_cpus
        except Exception:  # the cluster's state could not be read: rather a surviving actor than a hang
            return False

    def flush(self) -> None:
        for slot in self.slots:
            slot.flush()

    @staticmethod
    def kill(actor: Any) -> None:
        try:
            ray.kill(actor, no_restart=True)
        except Exception:  # already dead, or Ray is shutting down: nothing left to stop
            pass


class RayEnvHandle:
    """Host handle of one env on a Ray actor; never raises on a broken actor, returns a :class:`Failure`."""

    def __init__(self, fleet: RayFleet, index: int, env_fn_bytes: bytes, movable: bool):
        self.fleet, self.index, self.env_fn_bytes, self.movable = fleet, index, env_fn_bytes, movable
        self._broken: Failure | None = None
        self.pid: int | None = None
        self.node_id: str | None = None
        self.snapshots = False

    def attach(self, slot: _Slot, key: int, build_ref: Any, wait: float | None) -> None:
        """Wait for the build on ``slot``: ``wait`` seconds for a replacement that a survivor can stand in
        for, else ``startup_timeout``."""
        self.slot, self.key, self.generation, self._build_ref = slot, key, slot.generation, build_ref
        self._wait = wait
        self._ready_by = time.monotonic() + (self.fleet.startup_timeout if wait is None else wait)

    def wait_ready(self, deadline: float | None) -> Failure | None:
        """``None`` once the env is built. A rebuilt env whose actor dies or is not placed in time moves on
        to the surviving actors in turn; a failure comes back only when none is left (or the env raised)."""
        failure, tried = self._built(deadline), {self.slot}
        while failure is not None and failure.kind != "raised" and self.movable:
            slot = self.fleet.survivor(exclude=tried)
            if slot is None:
                return failure
            logger.warning("env %d moves to the Ray actor hosting envs %s: %s", self.index, slot._indices(),
                           failure.detail)
            self.slot.open_keys.discard(self.key)
            tried.add(slot)
            self.fleet.place(self, slot)
            failure = self._built(deadline)
        return failure

    def _built(self, deadline: float | None) -> Failure | None:
        if self._build_ref is None:
            return self.slot.lost
        deadline = self._ready_by if deadline is None else min(deadline, self._ready_by)
        ready, _ = ray.wait([self._build_ref], timeout=_remaining(deadline))
        if not ready:
            limit = (f"startup_timeout={self.fleet.startup_timeout} s" if self._wait is None
                     else f"{self._wait} s (a surviving actor takes the env instead)")
            self.slot.fail(Failure("timeout", f"its Ray actor was not scheduled or did not build the env within {limit}"))
            return self.slot.lost
        try:
            status, value = ray.get(self._build_ref)
        except Exception as e:
            self.slot.fail(_lost(self.slot._indices(), e))
            return self.slot.lost
        if status == "error":
            return _raised(value)
        self.pid, self.node_id, self.snapshots = value["pid"], value["node_id"], bool(value["snapshots"])
        return None

    def send(self, command: str, payload: Any) -> None:
        if command == "close":
            self.slot.open_keys.discard(self.key)
        if self.generation != self.slot.generation or self.slot.lost is not None:
            if command != "close":
                self._broken = self.slot.losses.get(self.generation) or Failure("died", "its Ray actor was lost")
            return
        self.slot.queue.append((self.key, command, payload))

    def recv(self, deadline: float | None) -> Any:
        if self._broken is not None:
            failure, self._broken = self._broken, None
            return failure
        self.fleet.flush()
        return self.slot.reply(self.key, deadline)

    def kill(self) -> None:
        self.fleet.kill(self.slot.actor)

    def close(self, deadline: float) -> None:
        """Send the queued ``close``; the last env of an actor to close stops the actor once its envs have
        closed (or ``close_timeout`` passed: the process workers' short grace is too little for K envs)."""
        deadline = max(deadline, time.monotonic() + self.fleet.close_timeout)
        if self.generation != self.slot.generation:
            return
        self.slot.flush()
        if not self.slot.open_keys and self.slot.actor is not None:
            refs = [ref for ref in [*self.slot.batches, *self.slot.closing] if ref is not None]
            try:  # let the envs close themselves, unless Ray itself is already shut down (interpreter exit)
                if refs and ray.is_initialized():
                    ray.wait(refs, num_returns=len(refs), timeout=_remaining(deadline))
            except Exception:
                pass
            self.fleet.kill(self.slot.actor)
            self.slot.actor, self.slot.batches, self.slot.batch_of, self.slot.closing = None, {}, {}, []


def _travelling(reply: tuple[str, Any]) -> tuple[str, Any]:
    """``reply`` if it pickles, else an error reply saying why (the env's result cannot leave the actor)."""
    try:
        cloudpickle.dumps(reply)
        return reply
    except Exception as e:
        return "error", {"type": type(e).__name__, "message": f"its result could not be pickled: {e}",
                         "traceback": ""}


def _lost(indices: list[int], e: BaseException) -> Failure:
    text = str(e).strip()
    detail = text.splitlines()[0] if text else "no detail"
    return Failure("died", f"the Ray actor hosting envs {indices} was lost: {type(e).__name__}: {detail}")
