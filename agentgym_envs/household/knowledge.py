"""What the agent knows of the room, as a canonical text for ``info["state_key"]``.

The agent knows which receptacles it has stood at (and their door state), the contents of those it has
looked into, and the state of what it holds. Only the agent changes the world, and it only changes the
receptacle it stands at or the object it holds, so what it knows of a receptacle is that receptacle's
current state, and after each command only the part of the key for the current receptacle needs
recomputing. Two rollouts that reach the same world state with the same knowledge get the same key,
whatever the path.
"""

from __future__ import annotations

from .world import World


class Knowledge:
    """Receptacles seen and looked into, with a cached key fragment per receptacle (in room order)."""

    def __init__(self, world: World):
        self.seen: set[str] = set()
        self.looked_in: set[str] = set()
        self._slot = {name: i for i, name in enumerate(world.receptacles)}
        self._parts = [""] * len(self._slot)

    def observe(self, world: World) -> None:
        """Update after a command: the agent sees the receptacle it stands at."""
        if world.location is None:
            return
        r = world.receptacles[world.location]
        self.seen.add(r.name)
        if r.accessible:
            self.looked_in.add(r.name)
        inside = ",".join(map(lambda n: thing_key(world, n), r.contents)) if r.name in self.looked_in else "?"
        self._parts[self._slot[r.name]] = f"{r.name}:{int(r.is_open)}:{inside}"

    def key(self, world: World, task_id: str) -> str:
        """Canonical text of the task, the agent's place and hand, and the receptacles it knows."""
        return f"{task_id}|{world.location}|{thing_key(world, world.holding)}|" + "|".join(self._parts)


def thing_key(world: World, name: str | None) -> str:
    """An object's name with its visible state flags (``-`` for no object)."""
    if name is None:
        return "-"
    t = world.objects[name]
    return f"{name}{'s' * t.sliced}{'c' * t.clean}{'h' * t.hot}{'k' * t.cool}{'o' * t.on}"
