"""Countdown numbers round: rules (moves, solver, generator), the safe expression parser, and two envs."""
