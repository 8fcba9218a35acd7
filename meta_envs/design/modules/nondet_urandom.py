"""Non-deterministic: the panels' colours are drawn from a generator seeded by os.urandom.

The signal-lamps env (lamps.py) with one change; data for the gates' tests, never imported.
"""
import os
import random

COLOURS = ("red", "green", "blue", "yellow", "white", "black")
PANELS = 4


class Env:
    max_steps = 6

    def __init__(self, difficulty=0.5):
        self.difficulty = min(1.0, max(0.0, float(difficulty)))
        self.instruction = ""
        self.answer, self.layout, self.panel, self.presses, self.steady = [], list(COLOURS), 0, 0, True

    def reset(self, seed):
        rng = random.Random(seed ^ int.from_bytes(os.urandom(8), "big"))
        self.answer = [rng.choice(COLOURS) for _ in range(PANELS)]
        self.layout = rng.sample(COLOURS, len(COLOURS))
        self.lamps = random.Random("lamps-%d" % seed)
        self.panel, self.presses = 0, 0
        self.instruction = (
            "A row of %d panels, each with six coloured buttons under a lamp. The lamp tends to glow in the "
            "colour of the right button. A right press opens the next panel; a wrong one wastes a press. "
            "Open every panel within %d presses." % (PANELS, self.max_steps))
        return "The first panel lights up. " + self._light()

    def _light(self):
        self.steady = self.lamps.random() >= self.difficulty
        right = COLOURS.index(self.answer[self.panel])
        shown = COLOURS[right] if self.steady else COLOURS[right - 1]
        how = "glows steadily" if self.steady else "flickers"
        return "Panel %d of %d: the lamp %s %s. Presses left: %d." % (
            self.panel + 1, PANELS, how, shown, self.max_steps - self.presses)

    def step(self, action):
        if self.panel >= PANELS or self.presses >= self.max_steps:
            return "The game is over.", 0.0, True
        self.presses += 1
        choice = " ".join(action.lower().split()) if isinstance(action, str) else ""
        reward = 0.0
        if choice == "press " + self.answer[self.panel]:
            self.panel, reward, said = self.panel + 1, 1.0 / PANELS, "Right: the panel opens."
            if self.panel == PANELS:
                return "Every panel is open. You win.", reward, True
        elif choice in self.legal_actions():
            said = "Wrong: the buzzer sounds."
        else:
            said = "Not a button here: answer 'press <colour>'."
        if self.presses >= self.max_steps:
            return said + " No presses left. You lose.", reward, True
        return said + " " + self._light(), reward, False

    def legal_actions(self):
        return ["press " + colour for colour in self.layout]

    def expert_action(self):
        return "press " + self.answer[min(self.panel, PANELS - 1)]

    def hint(self):
        return ("A flickering lamp lies: the right button is then the colour after the one it shows, in the "
                "order red, green, blue, yellow, white, black (after black comes red again).")
