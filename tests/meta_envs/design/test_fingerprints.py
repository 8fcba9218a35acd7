"""Behaviour fingerprints are comparable across hosts and episodes, yet a module cannot tell it is being
fingerprinted (issue 31 §2, "Novelty bypass", after gate seeds became keyed per host process).

Fingerprint seeds come from the archive's own secret (``<archive>/.fingerprint_key``), so every module
measured against one archive is fingerprinted on the same seeds, whatever host process measures it; they
are played by every gate policy, interleaved with the gate seeds, in the same sandboxed process.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

from meta_envs.design import gates, novelty
from meta_envs.design.archive import EnvArchive
from meta_envs.design.contract import example_module
from meta_envs.design.sandboxed import SandboxedModuleEnv, set_measurement_key

LAMPS = example_module("lamps")
BEACONS = '"""Beacon towers: send each tower, in turn, the colour it waits for; a misty tower shows the colour after it."""\n\nimport random\n\nPALETTE = ["red", "green", "blue", "yellow", "white", "black"]\n\n\ndef deal(seed):\n    """The colours the towers wait for, and the order of the buttons on the console."""\n    draw = random.Random(seed)\n    wanted = [draw.choice(PALETTE) for _ in range(4)]\n    return wanted, draw.sample(PALETTE, 6)\n\n\nclass Env:\n    max_steps = 6\n\n    def __init__(self, difficulty=0.5):\n        self.mist = min(1.0, max(0.0, float(difficulty)))\n        self.instruction = ("Four beacon towers stand on the ridge. Each waits for one colour from your "\n                            "console; a tower that gets it lights and the next one wakes. Six tries in all.")\n        self.game = {"wanted": ["red"] * 4, "console": list(PALETTE), "lit": 0, "tries": 0, "weather": None}\n\n    def reset(self, seed):\n        wanted, console = deal(seed)\n        self.game = {"wanted": wanted, "console": console, "lit": 0, "tries": 0,\n                     "weather": random.Random(seed * 31 + 7)}\n        return "Night falls over the ridge. " + self.describe()\n\n    def describe(self):\n        g = self.game\n        goal = g["wanted"][g["lit"]]\n        misty = g["weather"].random() < self.mist\n        shown = PALETTE[(PALETTE.index(goal) + 1) % 6] if misty else goal\n        sky = "through thick mist" if misty else "in a clear sky"\n        return "Tower %d glimmers %s, tinted %s (%d tries remain)." % (g["lit"] + 1, sky, shown, 6 - g["tries"])\n\n    def step(self, action):\n        g = self.game\n        if g["lit"] == 4 or g["tries"] == 6:\n            return "Nothing more happens.", 0.0, True\n        g["tries"] = g["tries"] + 1\n        words = action.lower().split() if isinstance(action, str) else []\n        gained, note = 0.0, "That is not on the console; use \'send <colour>\'."\n        if words == ["send", g["wanted"][g["lit"]]]:\n            g["lit"] = g["lit"] + 1\n            gained, note = 0.25, "The tower blazes up."\n            if g["lit"] == 4:\n                return "All four beacons burn. Victory.", gained, True\n        elif " ".join(words) in self.legal_actions():\n            note = "The tower stays dark."\n        if g["tries"] == 6:\n            return note + " The night is over; you failed.", gained, True\n        return note + " " + self.describe(), gained, False\n\n    def legal_actions(self):\n        return ["send %s" % c for c in self.game["console"]]\n\n    def expert_action(self):\n        g = self.game\n        return "send " + g["wanted"][min(g["lit"], 3)]\n\n    def hint(self):\n        return "Mist shifts a tower\'s tint one step along red, green, blue, yellow, white, black (black wraps to red)."\n'
"""The signal-lamps game rewritten from scratch: other names, texts, data layout and control flow (code
similarity to lamps below the floor), but the same rules under the same seeds (the same random draws,
rewards, steps and winning buttons): a copy only its behaviour gives away."""


def validated(source: str, archive: EnvArchive, key: bytes) -> gates.GateReport:
    """``source`` through the gates as a host whose measurement secret is ``key`` would run them."""
    set_measurement_key(key)
    return gates.validate_module(source, novelty=novelty.novelty_gate(archive))


def archived(tmp_path, key: bytes = b"host-one") -> tuple[EnvArchive, gates.GateReport]:
    archive = EnvArchive(tmp_path / "archive")
    report = validated(LAMPS, archive, key)
    assert report.passed, report.to_info()["gates"]
    archive.add(LAMPS, {"stats": report.stats})
    return archive, report


def test_an_identical_module_measured_by_another_host_key_is_an_exact_duplicate(tmp_path):
    archive, first = archived(tmp_path)
    second = validated(LAMPS, archive, b"host-two")
    assert set(second.stats["start_hashes"]) != set(first.stats["start_hashes"])  # other gate seeds
    assert second.stats["fingerprint"] == first.stats["fingerprint"]  # the archive's fingerprint seeds
    assert second.failed_gate == "novelty" and "behaves exactly like archived env" in second.gates[-1].detail


def test_an_identical_module_measured_in_another_process_gets_the_same_fingerprint(tmp_path):
    """A second host process, with its own measurement secret and PYTHONHASHSEED, fingerprints alike.

    Its secret is fixed (and differs from the first host's): drawn from the OS, the random policy won a lamps
    game on one of its 8 gate seeds in about 1 of 40 draws, failing ``baselines`` (allowed: 0 of 8)
    before ``novelty`` was reached.
    """
    archive, first = archived(tmp_path)
    script = ("import json, sys\n"
              "from meta_envs.design import gates, novelty\n"
              "from meta_envs.design.archive import EnvArchive\n"
              "from meta_envs.design.contract import example_module\n"
              "from meta_envs.design.sandboxed import set_measurement_key\n"
              "set_measurement_key(b'host-three')\n"
              "report = gates.validate_module(example_module('lamps'), "
              "novelty=novelty.novelty_gate(EnvArchive(sys.argv[1])))\n"
              "print(json.dumps({'fingerprint': report.stats['fingerprint'], 'failed': report.failed_gate, "
              "'seeds': sorted(report.stats['start_hashes']), 'info': report.to_info(timings=True)}))\n")
    done = subprocess.run([sys.executable, "-c", script, str(archive.path)], capture_output=True, text=True,
                          timeout=300, cwd=os.getcwd())
    assert done.returncode == 0, done.stderr[-2000:]
    other = json.loads(done.stdout.strip().splitlines()[-1])
    assert other["seeds"] != sorted(first.stats["start_hashes"])
    assert other["fingerprint"] == first.stats["fingerprint"]
    assert other["failed"] == "novelty", json.dumps(other["info"]["gates"][-1]) + " " + json.dumps(other["info"])


def test_a_rewritten_copy_is_caught_by_its_behaviour(tmp_path):
    assert novelty.ramp(novelty.code_similarity(BEACONS, LAMPS)) == 0.0  # the code gives nothing away
    archive, _ = archived(tmp_path)
    report = validated(BEACONS, archive, b"host-two")
    assert report.passed, report.to_info()["gates"]  # not the same texts: a near duplicate, not an exact one
    near = novelty.duplicate_share(BEACONS, report.stats["fingerprint"], archive)
    assert near["behaviour"] == 1.0 and near["dup"] == 1.0 and not near["exact_behaviour"]
    assert "behaviour similarity 1.00" in report.gates[-1].detail


def test_genuinely_different_modules_stay_novel(tmp_path):
    archive, lamps = archived(tmp_path)
    coinflip = example_module("coinflip")
    report = validated(coinflip, archive, b"host-two")  # fails its baselines; its fingerprint is taken first
    near = novelty.duplicate_share(coinflip, report.stats["fingerprint"], archive)
    assert near["behaviour"] == 0.0 and near["dup"] <= 0.25 and not near["exact_behaviour"]
    impossible = validated(example_module("impossible"), archive, b"host-two")  # another reward per panel
    assert novelty.behaviour_similarity(impossible.stats["fingerprint"], lamps.stats["fingerprint"]) == 0.0


def test_fingerprint_seeds_are_the_archives_secret_and_never_shown(tmp_path):
    archive, report = archived(tmp_path)
    path = archive.path / ".fingerprint_key"
    key = path.read_bytes()
    assert len(key) == 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert EnvArchive(archive.path).fingerprint_key() == key  # persistent: drawn once, on first use
    assert EnvArchive(tmp_path / "other").fingerprint_key() != key
    seeds = novelty.fingerprint_seeds(key=key)
    assert len(seeds) == novelty.N_FINGERPRINT_SEEDS and not set(seeds) & set(gates.gate_seeds())
    assert novelty.fingerprint_seeds(key=key) == seeds and novelty.fingerprint_seeds() != seeds
    # the record keeps the fingerprint by position; no seed it was taken on is written anywhere
    assert sorted(report.stats["fingerprint"]) == [str(i) for i in range(len(seeds))]
    shown = json.dumps(report.to_info(timings=True))
    assert not any(str(seed) in shown for seed in seeds)


def test_the_sandbox_cannot_read_the_archives_key(tmp_path):
    archive = EnvArchive(tmp_path / "archive")
    target = archive.path / ".fingerprint_key"
    archive.fingerprint_key()
    probe = ("try:\n    with open(%r, 'rb') as f:\n        SEEN = 'read %%d bytes' %% len(f.read())\n"
             "except Exception as e:\n    SEEN = type(e).__name__\n" % str(target))
    module = probe + ("class Env:\n    max_steps = 1\n    instruction = SEEN\n\n    def __init__(self, difficulty):\n"
                      "        pass\n\n    def reset(self, seed):\n        return 'start'\n\n"
                      "    def step(self, action):\n        return 'end', 0.0, True\n\n"
                      "    def legal_actions(self):\n        return ['go']\n\n"
                      "    def expert_action(self):\n        return 'go'\n")
    with SandboxedModuleEnv(module, difficulty=0.5) as env:
        env.reset(1)
        seen = env.instruction
    assert seen in ("FileNotFoundError", "PermissionError"), seen


def test_a_failing_gates_detail_counts_fingerprint_seeds_without_naming_them():
    """The designer reads gate details: a fingerprint seed it could read there, it could special-case."""
    set_measurement_key(b"host-one")
    report = gates.validate_module(example_module("nondet_hash"), lint=False)
    detail = report.gates[-1].detail
    assert report.failed_gate == "determinism" and "8 fingerprint seeds gave different trajectories" in detail, detail
    assert not any(str(seed) in detail for seed in novelty.fingerprint_seeds())
    assert all(str(seed) in detail for seed in gates.gate_seeds())  # gate seeds are named as before
