"""Tower of Hanoi: rules (legal moves, the optimal solver from any position) and the env."""
