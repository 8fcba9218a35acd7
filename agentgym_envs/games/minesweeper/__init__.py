"""Minesweeper: rules (deduction, no-guess generation) and the env."""
