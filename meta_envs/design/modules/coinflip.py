"""Coin-flip: call a coin toss; the expert peeks at the coin, everyone else wins half the time.

The "bimodal hack": the expert wins every seed, yet any policy wins about half of them, so success
measures luck, not skill. Data for the gates' tests, never imported.
"""

import random


class Env:
    max_steps = 1

    def __init__(self, difficulty=0.5):
        self.difficulty = difficulty
        self.instruction = ""
        self.coin, self.over = "heads", True

    def reset(self, seed):
        rng = random.Random(seed)
        self.coin = rng.choice(("heads", "tails"))
        self.over = False
        self.instruction = "A coin is tossed. Call it: heads or tails."
        metal = rng.choice(("silver", "copper", "brass", "gold", "iron", "tin"))
        return "Toss number %d: the %s coin spins in the air." % (rng.randint(1, 9999), metal)

    def step(self, action):
        if self.over:
            return "The game is over.", 0.0, True
        self.over = True
        call = " ".join(action.lower().split()) if isinstance(action, str) else ""
        if call == "call " + self.coin:
            return "It lands " + self.coin + ". You win.", 1.0, True
        return "It lands " + self.coin + ". You lose.", 0.0, True

    def legal_actions(self):
        return ["call heads", "call tails"]

    def expert_action(self):
        return "call " + self.coin
