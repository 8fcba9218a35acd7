"""Wordle: rules (feedback, hard mode, solver), the word lists, and the env."""
