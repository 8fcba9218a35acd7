"""Sudoku 4×4 and 9×9: rules (solver, unique-solution generator) and the env."""
