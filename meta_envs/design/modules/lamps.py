"""Signal lamps: the good parametric family of generated envs (data for EnvDesign-v0's tests; never imported).

Four panels in a row, each with six coloured buttons under a lamp. A steady lamp shows the right button;
a flickering lamp lies, showing the colour just before the right one in the order of COLOURS (cyclic).
A right press opens the next panel (+0.25); a wrong one wastes a press; open all four within six presses.
The knob: the lamp is steady with probability 1 - difficulty, drawn in a fixed order per seed, so a solver
that presses what the lamp shows wins less as the knob turns up (1 at difficulty 0, 0 at 1, smoothly),
and the hint (how to read a flicker) helps. The button layout is shuffled per seed.
"""

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
        rng = random.Random(seed)
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
