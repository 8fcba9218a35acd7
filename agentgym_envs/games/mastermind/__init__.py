"""Mastermind: rules (pegs, the codebreaker) and the env."""
